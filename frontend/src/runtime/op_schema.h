#pragma once
// Vendor op schemas (the extension "kiln.op_schemas.v1"): the parser and validator of a
// schema's JSON, and the process-wide list of the loaded plugins' declared ops.
// Internal to libkiln; the public view is kiln/custom_op.h (OpSchema, op_schema()).

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "kiln/c_api.h"
#include "kiln/custom_op.h"

namespace kiln::detail {

/// Limits on what a plugin may declare (api/README.md, "Vendor op schemas").
inline constexpr size_t kMaxSchemaJsonBytes = 64 * 1024;
inline constexpr size_t kMaxSchemaNesting = 16;
inline constexpr size_t kMaxSchemasPerPlugin = 1024;
inline constexpr size_t kMaxSchemaOperands = 8;  // the dispatcher's limit, each way
inline constexpr size_t kMaxSchemaAttributes = 32;
inline constexpr size_t kMaxSchemaOpName = 128;
inline constexpr size_t kMaxSchemaFieldName = 64;
inline constexpr size_t kMaxSchemaText = 4096;

/// Parses and validates the schema `json` of op `name` at `version`, declared by
/// `plugin`. Throws kiln::Error naming the plugin, the op and what is wrong (never
/// anything else, whatever the bytes).
OpSchema parse_op_schema(std::string_view plugin, std::string_view name, int32_t version,
                         std::string_view json);

/// Takes the declared ops of the plugin `plugin` (its "kiln.op_schemas.v1" table, or
/// NULL): each schema that validates joins the list op_schema() reads; each that does
/// not is logged as a warning naming the plugin and the op, and skipped (the op stays
/// callable through call_op, unchecked). A name and version another plugin declared
/// already keeps the first schema. Never throws.
void register_op_schemas(const char* plugin, const kiln_op_schemas_api* table) noexcept;

/// The schema of (name, version), or nullptr; the pointer stays valid for the process.
const OpSchema* find_op_schema(const std::string& name, int32_t version);

}  // namespace kiln::detail
