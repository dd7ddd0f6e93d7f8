#pragma once
// What kiln::save writes and kiln::read_checkpoint expects (kiln/io/checkpoint.h
// documents the layout), shared by the two halves.
#include <string>
#include <string_view>
#include <vector>

#include "kiln/io/checkpoint.h"

namespace kiln::checkpoint_format {

inline constexpr const char* kPrefix = "kiln.";
inline constexpr const char* kFormatKey = "kiln.format";
inline constexpr const char* kFormat = "kiln checkpoint";
inline constexpr const char* kVersionKey = "kiln.version";
inline constexpr int kVersion = 1;
inline constexpr const char* kEntriesKey = "kiln.entries";
inline constexpr size_t kMaxNameLength = 128;

/// "kiln.<name>.<field>": an entry's own metadata.
inline std::string meta_key(const std::string& name, const char* field) {
  return std::string(kPrefix) + name + "." + field;
}

/// 1 to kMaxNameLength of [A-Za-z0-9_-].
bool valid_name(std::string_view name);
/// At most `limit` characters of untrusted `text`, control characters shown as '?'.
std::string excerpt(std::string_view text, size_t limit = 80);
/// Refuses invalid and repeated names; `who` starts the message ("kiln::save").
void check_names(const char* who, const std::vector<CheckpointItem>& items);

}  // namespace kiln::checkpoint_format
