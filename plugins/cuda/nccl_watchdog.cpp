#include "nccl_watchdog.h"

#include <atomic>
#include <cstdlib>
#include <thread>
#include <utility>

#include "device.h"
#include "kiln/sdk/plugin.h"
#include "kiln/sdk/status.h"

namespace kiln::cuda {

namespace {

using Clock = NcclComm::Clock;
constexpr auto kPollInterval = std::chrono::milliseconds(2);

std::atomic<bool>& stopping() {
  static std::atomic<bool> flag{false};
  return flag;
}

}  // namespace

Watchdog& Watchdog::get() {
  static Watchdog* const instance = [] {
    auto* w = new Watchdog();
    std::atexit([] { stopping().store(true, std::memory_order_release); });
    std::thread([w] { w->run(); }).detach();
    return w;
  }();
  return *instance;
}

void Watchdog::add(Entry entry) {
  {
    std::lock_guard lock(mutex_);
    entries_.push_back(std::move(entry));
  }
  cv_.notify_one();
}

void Watchdog::run() {
  std::vector<Entry> work;
  std::vector<Entry> kept;
  while (!stopping().load(std::memory_order_acquire)) {
    {
      std::unique_lock lock(mutex_);
      if (!kept.empty()) {
        // Kept entries go first, so they stay in the order they were enqueued.
        for (Entry& e : entries_) kept.push_back(std::move(e));
        entries_.swap(kept);
        kept.clear();
      }
      cv_.wait(lock, [&] { return !entries_.empty(); });
      work.swap(entries_);
    }
    for (Entry& e : work)
      if (!finished(e)) kept.push_back(std::move(e));
    work.clear();
    if (!kept.empty()) std::this_thread::sleep_for(kPollInterval);
  }
}

void Watchdog::release(Entry& e) noexcept {
  e.comm->device().events().put(e.start);
  e.comm->device().events().put(e.end);
  std::lock_guard lock(e.comm->mutex_);
  --e.comm->in_flight_;
}

bool Watchdog::finished(Entry& e) noexcept {
  NcclComm& comm = *e.comm;
  bool aborted = false;
  {
    std::lock_guard lock(comm.mutex_);
    aborted = comm.aborted_;
  }
  if (!aborted) {
    try {
      CudaDevice& device = comm.device();
      device.make_current();
      if (!e.started && device.event_done(e.start)) {
        e.started = true;
        e.deadline = deadline_after(comm.timeout_seconds());
      }
      if (e.started && device.event_done(e.end)) {
        release(e);
        return true;
      }
    } catch (const std::exception& error) {
      // A CUDA error on the stream: its next synchronization reports it better.
      release(e);
      return true;
    }
    // Composing a message allocates: out of memory there still aborts, unexplained.
    if (const ncclResult_t async = comm.async_error();
        async != ncclSuccess && async != ncclInProgress) {
      std::string reason;
      try {
        reason = nccl_message(async, sdk::str_cat(e.name, " on ", comm.label()).c_str(), nullptr);
      } catch (...) {
      }
      comm.abort(KILN_STATUS_DEVICE_ERROR, reason);
    } else if (e.started && Clock::now() > e.deadline) {
      std::string reason;
      try {
        reason = sdk::str_cat(e.name, " on ", comm.label(), " did not complete within ",
                              comm.timeout_seconds(), " s: ", comm.who_is_missing(e.position));
      } catch (...) {
      }
      comm.abort(KILN_STATUS_DEVICE_ERROR, reason);
      if (comm.group_) comm.group_->abort_all(KILN_STATUS_DEVICE_ERROR, reason);
    } else {
      return false;
    }
  }
  release(e);
  return true;
}

}  // namespace kiln::cuda
