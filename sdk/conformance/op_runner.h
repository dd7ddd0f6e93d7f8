#pragma once
// op_runner.h — runs one op's conformance cases on the device under test and on the
// CPU reference, through Kiln's frontend, and reports one CheckResult for the op:
// passed (with the largest error seen and the dtypes that fell back), failed (with
// the first failing cases and their errors), or fallback (the plugin declined every
// case). Memory the cases allocated on the device must all be freed again.

#include <kiln/device.h>

#include <string>

#include "isolation.h"
#include "op_suite.h"

namespace kiln::conformance {

struct RunOptions {
  /// Also compare the cases the device did not run itself (the CPU plugin ran them
  /// through the frontend's fallback): Kiln's own op suite checks the fallback path
  /// this way. A certification leaves it off: a fallback is not the plugin's result.
  bool compare_fallback = false;
};

/// A kiln::Error that libkiln raised while `device` ran a check, in the report's words:
/// "ABI violation: ..." (an exception escaped a plugin entry) as it is; a status a
/// kernel returned as "the plugin's kernel for kiln.add returned an error: ..." (the op
/// is read from libkiln's "<op> on <device>"); anything else as "error: ...".
std::string plugin_error_text(const std::string& message, const Device& device);

void run_op_suite(const OpSuite& suite, const Device& device, Reporter& reporter,
                  const RunOptions& options = {});

}  // namespace kiln::conformance
