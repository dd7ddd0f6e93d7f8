// The ABI rows of the header being built (see abi_layout.h).
#include "abi_layout.h"

namespace {
#include <kiln/c_api.h>
}  // namespace

#define KILN_ABI_LAYOUT_FUNCTION current_abi_layout
#include "abi_layout_table.inc"
