// abi_layout.h — a machine-readable description of the C ABI, built twice: once from
// the frozen 1.0 header (layout_frozen.cpp) and once from the current one
// (layout_current.cpp), from the same list of rows (abi_v1_0.def).
//
// Each translation unit includes its header inside an unnamed namespace, so the two
// definitions of `kiln_plugin_api` never meet (no ODR clash) while the mangled type
// names of fields and function signatures come out identical whenever the types are.
#pragma once

#include <stddef.h>
#include <stdint.h>

#include <cstddef>
#include <cstdint>
#include <string>
#include <typeinfo>
#include <utility>
#include <vector>

namespace kiln::abi_test {

struct AbiEntry {
  enum class Kind {
    Struct,
    FixedStruct,
    Field,
    UnionMember,
    Enum,
    Macro,
    MacroAtLeast,
    String,
    Type
  };
  Kind kind;
  std::string name;   // "kiln_plugin_api", "kiln_plugin_api.allocate", "KILN_DTYPE_BOOL"
  std::string owner;  // the struct of a field, else ""
  uint64_t offset = 0;
  uint64_t size = 0;
  uint64_t alignment = 0;
  int64_t value = 0;
  std::string text;  // type signature (mangled) or string macro text
};

/// Rows from the frozen copy of the 1.0 header (tests/abi/v1.0/include).
std::vector<AbiEntry> frozen_abi_layout();
/// The same rows from the header being built (api/include).
std::vector<AbiEntry> current_abi_layout();

}  // namespace kiln::abi_test
