#pragma once
// elf_exports.h — the symbols a shared library exports, read from its ELF dynamic
// symbol table (without loading it).

#include <optional>
#include <string>
#include <vector>

namespace kiln::conformance {

/// The names of the global or weak, default-visibility symbols `path` defines, or
/// nullopt when it is not a 64-bit ELF file this reader understands.
std::optional<std::vector<std::string>> exported_symbols(const std::string& path);

}  // namespace kiln::conformance
