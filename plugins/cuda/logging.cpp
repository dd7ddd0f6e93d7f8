#include "logging.h"

#include <atomic>

namespace kiln::cuda {

namespace {
using LogFn = void (*)(int32_t, const char*, const char*);
std::atomic<LogFn> log_fn{nullptr};
std::atomic<int32_t> log_level{KILN_LOG_WARNING};
}  // namespace

void set_log_sink(LogFn fn, int32_t level) {
  if (fn == nullptr) return;
  log_level.store(level, std::memory_order_relaxed);
  log_fn.store(fn, std::memory_order_release);
}

void log(kiln_log_level level, const std::string& message) {
  LogFn fn = log_fn.load(std::memory_order_acquire);
  if (fn != nullptr && level <= log_level.load(std::memory_order_relaxed)) {
    fn(level, "cuda", message.c_str());
  }
}

}  // namespace kiln::cuda
