#pragma once
// The watchdog of NCCL collectives: one thread for the process that follows every
// enqueued collective until its end event completes, and aborts the communicator (and
// its group) when the collective fails asynchronously or outlives its timeout.

#include <condition_variable>
#include <memory>
#include <mutex>
#include <vector>

#include "nccl_comm.h"

namespace kiln::cuda {

// Follows every enqueued collective until its end event completes or its communicator
// is aborted. One thread for the process, started with the first collective (the
// plugin is never unloaded); it sleeps while nothing is in flight, and stops polling at
// exit (an atexit handler, registered after the CUDA runtime's own and so run before
// it), so that it never calls into a runtime being torn down.
class Watchdog {
 public:
  static Watchdog& get();

  struct Entry {
    std::shared_ptr<NcclComm> comm;
    const char* name;
    uint64_t position;
    cudaEvent_t start;
    cudaEvent_t end;
    bool started = false;
    NcclComm::Clock::time_point deadline{};
  };

  void add(Entry entry);

 private:
  void run();
  static void release(Entry& e) noexcept;
  // True once `e` needs no more watching (and its events are released).
  static bool finished(Entry& e) noexcept;

  std::mutex mutex_;
  std::condition_variable cv_;
  std::vector<Entry> entries_;
};

}  // namespace kiln::cuda
