// logging.h — the CUDA plugin's one route to Kiln's log: the host's callback.
//
// The host hands a `log` function to kiln_plugin_init; until then (or if it passed
// none) messages are dropped. Callable from any thread.
#ifndef KILN_CUDA_LOGGING_H
#define KILN_CUDA_LOGGING_H

#include <string>

#include "kiln/c_api.h"

namespace kiln::cuda {

/// Remembers the host's log callback and level. A NULL callback keeps the one already
/// set: a second kiln_plugin_init (a test reaching the debug extension) must not
/// silence the loader's log.
void set_log_sink(void (*log)(int32_t, const char*, const char*), int32_t level);

/// Writes one line through the host's callback if `level` is enabled.
void log(kiln_log_level level, const std::string& message);

}  // namespace kiln::cuda

#endif  // KILN_CUDA_LOGGING_H
