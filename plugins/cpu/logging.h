// logging.h — the plugin's one route to Kiln's log: the host's callback.
//
// The host hands a `log` function to kiln_plugin_init; until then (or if it passed
// none) messages are dropped. Callable from any thread.
#ifndef KILN_CPU_LOGGING_H
#define KILN_CPU_LOGGING_H

#include <string>

#include "kiln/c_api.h"

namespace kiln::cpu {

/// Remembers the host's log callback and level (nullptr: stop logging).
void set_log_sink(void (*log)(int32_t, const char*, const char*), int32_t level);

/// Writes one line through the host's callback if `level` is enabled.
void log(kiln_log_level level, const std::string& message);

}  // namespace kiln::cpu

#endif  // KILN_CPU_LOGGING_H
