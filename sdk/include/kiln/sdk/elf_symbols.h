// kiln/sdk/elf_symbols.h — reading a library's symbols, for plugins and tools written
// against SDK 1.x: it now lives one layer down, in kiln/base/elf_symbols.h, shared by
// Kiln's loader and the certifier. This header keeps the kiln::sdk names.
#ifndef KILN_SDK_ELF_SYMBOLS_H
#define KILN_SDK_ELF_SYMBOLS_H

#include "kiln/base/elf_symbols.h"

namespace kiln::sdk {
using base::elf_defined_symbols;
using base::ElfSymbol;
using base::missing_entry_reason;
}  // namespace kiln::sdk

#endif  // KILN_SDK_ELF_SYMBOLS_H
