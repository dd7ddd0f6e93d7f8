// kiln/base/elf_symbols.h — the symbols a shared library defines, read from its ELF
// file without loading it (no constructor of it runs).
//
// Kiln's loader and kiln-conformance use it to say why a library has no usable
// kiln_plugin_init (mangled by C++, or hidden), and kiln-conformance to check that a
// plugin exports nothing else.
// The file may be anything: every offset and size is checked against the file, and
// only the section headers and symbol tables are read, however large the library is.
#ifndef KILN_BASE_ELF_SYMBOLS_H
#define KILN_BASE_ELF_SYMBOLS_H

#include <elf.h>

#include "kiln/c_api.h"

#include <cxxabi.h>

#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <fstream>
#include <optional>
#include <string>
#include <vector>

namespace kiln::base {

struct ElfSymbol {
  std::string name;
  bool dynamic = false;   ///< from .dynsym (what the dynamic linker can see); else .symtab
  bool exported = false;  ///< dynamic, global or weak, default or protected visibility
};

namespace detail {

// Reads `size` bytes at `offset` of a file of `file_size` bytes; false when they are
// not all in the file.
inline bool elf_read(std::ifstream& in, uint64_t file_size, uint64_t offset, void* out,
                     uint64_t size) {
  if (offset > file_size || file_size - offset < size) return false;
  in.clear();
  in.seekg(static_cast<std::streamoff>(offset));
  return static_cast<bool>(in.read(static_cast<char*>(out), static_cast<std::streamsize>(size)));
}

}  // namespace detail

/// Every named symbol that the 64-bit ELF file `path` defines (undefined references
/// are left out), from its dynamic symbol table and, unless it is stripped, its full
/// symbol table (where hidden symbols remain as local ones). nullopt when the file
/// cannot be read or is not a 64-bit ELF file this reader understands. Symbol tables
/// beyond 64 MiB are refused rather than read.
inline std::optional<std::vector<ElfSymbol>> elf_defined_symbols(const std::string& path) {
  constexpr uint64_t kMaxTable = uint64_t{64} << 20;
  std::ifstream in(path, std::ios::binary | std::ios::ate);
  if (!in) return std::nullopt;
  const std::streamoff end = in.tellg();
  if (end <= 0) return std::nullopt;
  const uint64_t size = static_cast<uint64_t>(end);
  Elf64_Ehdr header;
  if (!detail::elf_read(in, size, 0, &header, sizeof header) ||
      std::memcmp(header.e_ident, ELFMAG, SELFMAG) != 0 || header.e_ident[EI_CLASS] != ELFCLASS64 ||
      header.e_shentsize != sizeof(Elf64_Shdr))
    return std::nullopt;
  const auto section = [&](uint64_t index, Elf64_Shdr& out) {
    return index < header.e_shnum &&
           detail::elf_read(in, size, header.e_shoff + index * sizeof(Elf64_Shdr), &out,
                            sizeof out);
  };
  std::vector<ElfSymbol> symbols;
  for (uint64_t i = 0; i < header.e_shnum; ++i) {
    Elf64_Shdr table, strings;
    if (!section(i, table)) return std::nullopt;
    if ((table.sh_type != SHT_DYNSYM && table.sh_type != SHT_SYMTAB) ||
        table.sh_entsize != sizeof(Elf64_Sym))
      continue;
    if (table.sh_size > kMaxTable || !section(table.sh_link, strings) ||
        strings.sh_size > kMaxTable)
      return std::nullopt;
    std::vector<char> names(strings.sh_size);
    std::vector<Elf64_Sym> entries(table.sh_size / sizeof(Elf64_Sym));
    if (!detail::elf_read(in, size, strings.sh_offset, names.data(), names.size()) ||
        !detail::elf_read(in, size, table.sh_offset, entries.data(),
                          entries.size() * sizeof(Elf64_Sym)))
      return std::nullopt;
    const bool dynamic = table.sh_type == SHT_DYNSYM;
    for (const Elf64_Sym& s : entries) {
      if (s.st_shndx == SHN_UNDEF || s.st_name == 0 || s.st_name >= names.size()) continue;
      const unsigned bind = ELF64_ST_BIND(s.st_info), visibility = ELF64_ST_VISIBILITY(s.st_other);
      ElfSymbol symbol;
      symbol.name.assign(names.data() + s.st_name,
                         strnlen(names.data() + s.st_name, names.size() - s.st_name));
      symbol.dynamic = dynamic;
      symbol.exported = dynamic && (bind == STB_GLOBAL || bind == STB_WEAK) &&
                        (visibility == STV_DEFAULT || visibility == STV_PROTECTED);
      symbols.push_back(std::move(symbol));
    }
  }
  return symbols;
}

/// Why the library at `path` has no usable kiln_plugin_init, read from its symbols:
/// defined as a C++ function (exported or not, as the mangled _Z16kiln_plugin_init...),
/// defined inside a namespace (_ZN4acme16kiln_plugin_initE...: the scope is named),
/// defined but hidden, or not defined at all. What Kiln's loader and kiln-conformance
/// say when the entry symbol is missing.
inline std::string missing_entry_reason(const std::string& path) {
  const std::string entry = KILN_PLUGIN_ENTRY_SYMBOL;
  const std::string mangled = "_Z" + std::to_string(entry.size()) + entry;
  const std::string absent = "no entry symbol '" + entry +
                             "': a Kiln plugin defines it (declared in kiln/c_api.h, or written "
                             "for you by KILN_SDK_PLUGIN in kiln/sdk/plugin.h)";
  std::optional<std::vector<ElfSymbol>> symbols;
  try {
    symbols = elf_defined_symbols(path);
  } catch (const std::exception&) {  // out of memory: the plain reason will do
    return absent;
  }
  if (!symbols) return absent;
  for (const ElfSymbol& s : *symbols)
    if (s.name.rfind(mangled, 0) == 0)
      return "no entry symbol '" + entry + "', but the library defines " +
             (s.exported ? "'" : "a hidden '") + s.name +
             "': kiln_plugin_init was compiled as a C++ function, so its name was mangled; "
             "include <kiln/c_api.h>, which declares it extern \"C\", or define it inside "
             "extern \"C\" { ... }";
  // Inside a namespace (or class) the name is nested: _ZN4acme16kiln_plugin_initE...
  const std::string nested = std::to_string(entry.size()) + entry + "E";
  for (const ElfSymbol& s : *symbols)
    if (s.name.rfind("_ZN", 0) == 0 && s.name.find(nested) != std::string::npos) {
      std::string scope = "a namespace or class";
      int status = -1;
      if (char* readable = abi::__cxa_demangle(s.name.c_str(), nullptr, nullptr, &status)) {
        const std::string qualified = readable;
        std::free(readable);
        const size_t end = qualified.find("::" + entry + "(");
        if (end != std::string::npos) scope = "'" + qualified.substr(0, end) + "'";
      }
      return "no entry symbol '" + entry + "', but the library defines " +
             (s.exported ? "'" : "a hidden '") + s.name +
             "': kiln_plugin_init was defined inside " + scope +
             ", so it is another function, with C++ linkage and a mangled name; define it at "
             "global scope, outside every namespace (KILN_SDK_PLUGIN in kiln/sdk/plugin.h "
             "writes it for you), or give it C linkage with extern \"C\"";
    }
  for (const ElfSymbol& s : *symbols)
    if (s.name == entry)
      return "no entry symbol '" + entry +
             "': the library defines it but does not export it (hidden visibility, e.g. "
             "-fvisibility=hidden); include <kiln/c_api.h>, which declares it with "
             "KILN_PLUGIN_EXPORT, or mark the definition KILN_PLUGIN_EXPORT";
  return absent;
}

}  // namespace kiln::base

#endif  // KILN_BASE_ELF_SYMBOLS_H
