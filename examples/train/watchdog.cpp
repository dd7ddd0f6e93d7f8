#include "watchdog.h"

#include <kiln/diagnostics.h>

#include <cstdio>
#include <cstdlib>
#include <string>

namespace kiln::train {

Watchdog::Watchdog(double seconds) : limit_(seconds), last_(std::chrono::steady_clock::now()) {
  if (seconds > 0) thread_ = std::thread([this] { watch(); });
}

Watchdog::~Watchdog() {
  if (!thread_.joinable()) return;
  {
    std::lock_guard lock(mutex_);
    stop_ = true;
  }
  wake_.notify_one();
  thread_.join();
}

void Watchdog::kick(const char* what) {
  if (!thread_.joinable()) return;
  std::lock_guard lock(mutex_);
  last_ = std::chrono::steady_clock::now();
  awaited_ = what;
}

void Watchdog::watch() {
  std::unique_lock lock(mutex_);
  while (!stop_) {
    const auto deadline =
        last_ + std::chrono::duration_cast<std::chrono::steady_clock::duration>(limit_);
    if (wake_.wait_until(lock, deadline, [&] { return stop_; })) return;
    if (std::chrono::steady_clock::now() < last_ + limit_) continue;  // kicked meanwhile
    std::string running;
    for (const std::string& kernel : kiln::kernels_in_flight())
      running += (running.empty() ? "" : ", ") + kernel;
    std::fprintf(stderr, "kiln-train: --watchdog %g: no progress for %g s, waiting for %s; %s\n",
                 limit_.count(), limit_.count(), awaited_,
                 running.empty() ? "no thread is inside a plugin kernel"
                                 : ("inside plugin kernels: " + running).c_str());
    std::fflush(stderr);
    std::_Exit(124);
  }
}

}  // namespace kiln::train
