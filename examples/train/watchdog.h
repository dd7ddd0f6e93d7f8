#pragma once
// kiln-train's --watchdog: bounds a hang. A thread waits for the training loop to
// report progress; if none comes for the given time, it prints what each thread is
// running inside a plugin (kiln::kernels_in_flight) and ends the process with exit
// status 124 (as timeout(1) does): a kernel that never returns cannot be interrupted,
// only outlived.

#include <chrono>
#include <condition_variable>
#include <mutex>
#include <thread>

namespace kiln::train {

class Watchdog {
 public:
  /// Off when `seconds` is 0.
  explicit Watchdog(double seconds);
  ~Watchdog();
  Watchdog(const Watchdog&) = delete;
  Watchdog& operator=(const Watchdog&) = delete;

  /// Progress: a step, an evaluation or a checkpoint finished; `what` names the next
  /// thing awaited, for the report ("training step 12 of epoch 2").
  void kick(const char* what);

 private:
  void watch();

  std::chrono::duration<double> limit_;
  std::mutex mutex_;
  std::condition_variable wake_;
  std::chrono::steady_clock::time_point last_;
  const char* awaited_ = "the first training step";
  bool stop_ = false;
  std::thread thread_;
};

}  // namespace kiln::train
