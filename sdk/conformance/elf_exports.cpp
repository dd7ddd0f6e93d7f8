// A minimal ELF64 .dynsym reader; every offset is bounds-checked, since the file may
// be anything.
#include "elf_exports.h"

#include <elf.h>

#include <cstring>
#include <fstream>
#include <iterator>

namespace kiln::conformance {

namespace {

template <class T>
bool read_at(const std::vector<char>& bytes, uint64_t offset, T& out) {
  if (offset > bytes.size() || bytes.size() - offset < sizeof(T)) return false;
  std::memcpy(&out, bytes.data() + offset, sizeof(T));
  return true;
}

}  // namespace

std::optional<std::vector<std::string>> exported_symbols(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return std::nullopt;
  const std::vector<char> bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  Elf64_Ehdr header;
  if (!read_at(bytes, 0, header) || std::memcmp(header.e_ident, ELFMAG, SELFMAG) != 0 ||
      header.e_ident[EI_CLASS] != ELFCLASS64 || header.e_shentsize != sizeof(Elf64_Shdr))
    return std::nullopt;
  std::vector<std::string> names;
  for (uint16_t i = 0; i < header.e_shnum; ++i) {
    Elf64_Shdr section;
    if (!read_at(bytes, header.e_shoff + uint64_t{i} * sizeof(Elf64_Shdr), section)) return std::nullopt;
    if (section.sh_type != SHT_DYNSYM || section.sh_entsize != sizeof(Elf64_Sym)) continue;
    Elf64_Shdr strings;
    if (!read_at(bytes, header.e_shoff + uint64_t{section.sh_link} * sizeof(Elf64_Shdr), strings))
      return std::nullopt;
    for (uint64_t s = 0; s < section.sh_size / sizeof(Elf64_Sym); ++s) {
      Elf64_Sym symbol;
      if (!read_at(bytes, section.sh_offset + s * sizeof(Elf64_Sym), symbol)) return std::nullopt;
      const unsigned bind = ELF64_ST_BIND(symbol.st_info);
      if (symbol.st_shndx == SHN_UNDEF || (bind != STB_GLOBAL && bind != STB_WEAK) ||
          ELF64_ST_VISIBILITY(symbol.st_other) != STV_DEFAULT || symbol.st_name == 0)
        continue;
      const uint64_t at = strings.sh_offset + symbol.st_name;
      if (at >= bytes.size() || strings.sh_offset + strings.sh_size > bytes.size()) return std::nullopt;
      const char* name = bytes.data() + at;
      names.emplace_back(name, strnlen(name, bytes.size() - at));
    }
  }
  return names;
}

}  // namespace kiln::conformance
