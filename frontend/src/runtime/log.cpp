#include "runtime/log.h"

#include <cstdio>
#include <cstdlib>
#include <mutex>
#include <string>

namespace kiln::detail {

int log_level() {
  static const int level = [] {
    const char* env = std::getenv("KILN_LOG_LEVEL");
    if (!env) return static_cast<int>(KILN_LOG_WARNING);
    std::string v(env);
    if (v == "error") return static_cast<int>(KILN_LOG_ERROR);
    if (v == "info") return static_cast<int>(KILN_LOG_INFO);
    if (v == "debug") return static_cast<int>(KILN_LOG_DEBUG);
    if (v != "warning")
      std::fprintf(stderr,
                   "[kiln] warning: KILN_LOG_LEVEL='%s' is not one of "
                   "error, warning, info, debug; using warning\n",
                   env);
    return static_cast<int>(KILN_LOG_WARNING);
  }();
  return level;
}

void log(int level, std::string_view component, std::string_view message) {
  if (level > log_level()) return;
  static const char* const names[] = {"error", "warning", "info", "debug"};
  const char* name = level >= 0 && level <= 3 ? names[level] : "log";
  // One fprintf per line keeps lines from different threads whole.
  static std::mutex mutex;
  std::lock_guard lock(mutex);
  std::fprintf(stderr, "[kiln:%.*s] %s: %.*s\n", static_cast<int>(component.size()),
               component.data(), name, static_cast<int>(message.size()), message.data());
}

}  // namespace kiln::detail
