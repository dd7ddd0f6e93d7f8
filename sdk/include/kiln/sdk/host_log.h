// kiln/sdk/host_log.h — a plugin's one route to Kiln's log, the host's callback, for a
// plugin that answers the C ABI itself (the plugin kit keeps its own: kiln::sdk::log).
// Until kiln_plugin_init hands over a callback, messages are dropped; a later init
// without one keeps the first. Callable from any thread.
#ifndef KILN_SDK_HOST_LOG_H
#define KILN_SDK_HOST_LOG_H

#include <atomic>
#include <cstdint>
#include <string>

#include "kiln/c_api.h"
#include "kiln/sdk/versioned.h"

namespace kiln::sdk {

class HostLog {
 public:
  /// `plugin` names the lines ("cpu"); a string that lives for the process.
  explicit constexpr HostLog(const char* plugin) noexcept : plugin_(plugin) {}

  /// Takes the callback and level of kiln_plugin_init's host, when its struct carries
  /// them. A NULL callback keeps the one already set: a second kiln_plugin_init (a test
  /// reaching an extension) must not silence the loader's log.
  void attach(const kiln_host_api* host) noexcept {
    if (host == nullptr || !host_has_log(host) || host->log == nullptr) return;
    level_.store(host->log_level, std::memory_order_relaxed);
    fn_.store(host->log, std::memory_order_release);
  }

  /// Writes one line through the host's callback if `level` is enabled.
  void write(kiln_log_level level, const std::string& message) const noexcept {
    const LogFn fn = fn_.load(std::memory_order_acquire);
    if (fn != nullptr && level <= level_.load(std::memory_order_relaxed))
      fn(level, plugin_, message.c_str());
  }

 private:
  using LogFn = void (*)(int32_t, const char*, const char*);
  const char* plugin_;
  std::atomic<LogFn> fn_{nullptr};
  std::atomic<int32_t> level_{KILN_LOG_WARNING};
};

}  // namespace kiln::sdk

#endif  // KILN_SDK_HOST_LOG_H
