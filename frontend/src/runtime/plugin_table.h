#pragma once
// What the loader checks of a plugin before it trusts it: the table kiln_plugin_init
// handed out and the collectives extension table (the entry symbol's absence is
// explained by kiln::base::missing_entry_reason, kiln/base/elf_symbols.h). Pure functions of their
// arguments (no registry, no logging), so that the loader, kiln-info and the plugin-table fuzzer
// (tests/fuzz) all run the same code.

#include <kiln/c_api.h>

#include <string>
#include <string_view>

namespace kiln::detail {

/// Why the loader refuses the plugin table `api` of a file named for backend
/// `expected_name` (libkiln_<expected_name>.so), or "" when it accepts it. Reads only
/// the fields that the table's own struct_size and ABI version say it has; `api->name`
/// must be NULL or a NUL-terminated string. Names every missing required entry and
/// every optional group provided in part, not just the first.
std::string validate_plugin_table(const kiln_plugin_api* api, std::string_view expected_name);

/// Why the collectives table `table` cannot be used (too small, a required entry
/// missing), or "" when it can. NULL is "" (no table, nothing wrong).
std::string validate_collectives_table(const kiln_collectives_api* table);

}  // namespace kiln::detail
