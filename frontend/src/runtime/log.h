#pragma once
// Kiln's log: one line per message on stderr, filtered by KILN_LOG_LEVEL
// (error, warning — the default —, info, debug). Plugins write to it through
// kiln_host_api::log.

#include <string_view>

#include "kiln/c_api.h"

namespace kiln::detail {

/// The level in force (kiln_log_level), read from KILN_LOG_LEVEL once.
int log_level();
/// Writes "[kiln:<component>] <level>: <message>" when `level` <= log_level().
void log(int level, std::string_view component, std::string_view message);

}  // namespace kiln::detail
