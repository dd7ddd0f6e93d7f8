#pragma once
// Kiln's log: one line per message on stderr, filtered by KILN_LOG_LEVEL
// (error, warning — the default —, info, debug). Plugins write to it through
// kiln_host_api::log.

#include <cstddef>
#include <string>
#include <string_view>

#include "kiln/c_api.h"

namespace kiln::detail {

/// The level in force (kiln_log_level), read from KILN_LOG_LEVEL once.
int log_level();
/// Writes "[kiln:<component>] <level>: <message>" when `level` <= log_level().
void log(int level, std::string_view component, std::string_view message);

/// The most characters of a value a user supplied (an environment variable, a device
/// name) that a message or log line quotes.
inline constexpr size_t kMaxEchoedValue = 200;

/// `text` as a message quotes it: whole up to `limit` characters, else its first
/// `limit` followed by "... (N more characters)", so that a 100,000-character value
/// cannot flood an error or the log.
std::string shorten_for_message(std::string_view text, size_t limit = kMaxEchoedValue);

}  // namespace kiln::detail
