// The loader's checks of a plugin's tables and entry symbol (see plugin_table.h).
#include "runtime/plugin_table.h"

#include <kiln/base/table_entries.h>

#include <cstddef>
#include <cstring>

#include "kiln/error.h"

namespace kiln::detail {

namespace {

bool valid_backend_name(const char* name) {
  if (name == nullptr || *name == '\0') return false;
  for (const char* c = name; *c; ++c)
    if (!((*c >= 'a' && *c <= 'z') || (*c >= '0' && *c <= '9') || *c == '_')) return false;
  return true;
}

}  // namespace

std::string validate_plugin_table(const kiln_plugin_api* api, std::string_view expected_name) {
  if (!api) return "kiln_plugin_init succeeded but returned no table";
  if (api->struct_size < offsetof(kiln_plugin_api, abi_minor) + sizeof(uint32_t))
    return concat("plugin table struct_size ", api->struct_size, " is too small to hold a version");
  if (api->abi_major != KILN_ABI_MAJOR)
    return concat("ABI major version mismatch: the plugin speaks ABI ", api->abi_major, ".",
                  api->abi_minor, ", this Kiln speaks ", KILN_ABI_MAJOR, ".", KILN_ABI_MINOR,
                  " (rebuild the plugin against Kiln's headers)");
  if (api->struct_size < KILN_PLUGIN_API_SIZE_1_0)
    return concat("plugin table struct_size ", api->struct_size,
                  " is too small: ABI 1.0 needs at least ", KILN_PLUGIN_API_SIZE_1_0, " bytes");
  if (!valid_backend_name(api->name)) {
    std::string shown = api->name ? std::string(api->name).substr(0, 64) : "(null)";
    return concat("invalid backend name '", shown, "' (expected [a-z0-9_]+)");
  }
  if (expected_name != api->name)
    return concat("the file is named for '", expected_name, "' but the plugin calls itself '",
                  api->name, "'");
  const kiln::base::TableDefects defects = kiln::base::plugin_table_defects(*api);
  if (!defects.empty()) return concat("incomplete plugin table: ", defects.describe());
  return "";
}

std::string validate_collectives_table(const kiln_collectives_api* table) {
  if (!table) return "";
  if (table->struct_size < KILN_COLLECTIVES_API_SIZE_1_1)
    return concat("its collectives table is too small (", table->struct_size,
                  " bytes, ABI 1.1 has ", KILN_COLLECTIVES_API_SIZE_1_1, ")");
  const kiln::base::TableDefects defects = kiln::base::collectives_table_defects(*table);
  if (!defects.empty()) return concat("its collectives table is incomplete: ", defects.describe());
  return "";
}

}  // namespace kiln::detail
