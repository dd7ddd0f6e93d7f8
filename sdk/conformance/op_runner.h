#pragma once
// op_runner.h — runs one op's conformance cases on the device under test and on the
// CPU reference, through Kiln's frontend, and reports one CheckResult for the op:
// passed (with the largest error seen and the dtypes that fell back), failed (with
// the first failing cases and their errors), or fallback (the plugin declined every
// case). Memory the cases allocated on the device must all be freed again.

#include <kiln/device.h>

#include "isolation.h"
#include "op_suite.h"

namespace kiln::conformance {

void run_op_suite(const OpSuite& suite, const Device& device, Reporter& reporter);

}  // namespace kiln::conformance
