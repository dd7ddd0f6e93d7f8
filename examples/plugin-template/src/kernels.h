// kernels.h — the ops this backend runs itself. Every other op of the catalogue
// (share/doc/kiln/OPS.md in Kiln's install) runs on Kiln's CPU plugin instead, visibly:
// kiln::fallback_report() counts each one, and KILN_FALLBACK=error turns them into
// errors.
#pragma once

#include <kiln/sdk/kernel_table.h>

namespace reference {

/// kiln.fill, kiln.add, kiln.mul, kiln.relu and kiln.sum for float32 and float64.
const kiln::sdk::KernelTable& kernel_table();

}  // namespace reference
