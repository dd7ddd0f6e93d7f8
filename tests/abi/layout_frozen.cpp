// The ABI rows of the frozen 1.0 header (see abi_layout.h).
#include "abi_layout.h"

namespace {
#include "v1.0/include/kiln/c_api.h"
}  // namespace

#define KILN_ABI_LAYOUT_FUNCTION frozen_abi_layout
#include "abi_layout_table.inc"
