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
                   shorten_for_message(v).c_str());
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

std::string shorten_for_message(std::string_view text, size_t limit) {
  if (text.size() <= limit) return std::string(text);
  size_t cut = limit;  // not inside a UTF-8 sequence
  while (cut > 0 && (static_cast<unsigned char>(text[cut]) & 0xC0) == 0x80) --cut;
  return std::string(text.substr(0, cut)) + "... (" + std::to_string(text.size() - cut) +
         " more characters)";
}

}  // namespace kiln::detail
