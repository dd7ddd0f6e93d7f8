// logging.h — the cuda plugin's one route to Kiln's log: the host's callback
// (kiln/sdk/host_log.h). Until kiln_plugin_init hands one over, messages are dropped.
// Callable from any thread.
#ifndef KILN_CUDA_LOGGING_H
#define KILN_CUDA_LOGGING_H

#include <string>

#include "kiln/c_api.h"

namespace kiln::cuda {

/// Takes the log callback and level of kiln_plugin_init's host (sdk::HostLog::attach).
void attach_log(const kiln_host_api* host);

/// Writes one line through the host's callback if `level` is enabled.
void log(kiln_log_level level, const std::string& message);

}  // namespace kiln::cuda

#endif  // KILN_CUDA_LOGGING_H
