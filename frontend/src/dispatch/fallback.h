#pragma once
// The CPU fallback (fallback.cpp): an op that its device has no kernel for runs on the
// CPU plugin, and the fallback report counts every such run.

#include <cstdint>
#include <span>
#include <string>

#include "dispatch/dispatch.h"

namespace kiln::detail {

/// Runs `op` for `dev` on the CPU plugin: mirrors every operand's byte range to the
/// host, dispatches there, copies the outputs back and counts the run. Throws when `dev`
/// is the CPU plugin itself, inside a graph capture, and under KILN_FALLBACK=error.
void run_on_cpu(OpId op, DeviceContext* dev, std::span<const TensorImpl* const> inputs,
                std::span<const TensorImpl* const> outputs, std::span<const kiln_attr> attrs);

/// "float32[2, 3], int64[3] -> float32[2, 3]": an op's operands, for messages.
std::string describe_operands(std::span<const TensorImpl* const> inputs,
                              std::span<const TensorImpl* const> outputs);

/// For work outside the op table that a device cannot do itself and the frontend does
/// on the host instead (collectives without a plugin implementation): throws when
/// KILN_FALLBACK=error, naming `what`; otherwise does nothing.
void check_fallback_allowed(const std::string& what);
/// Counts one such host fallback of `op` (e.g. "kiln.all_reduce") on `device` in the
/// fallback report.
void record_fallback(const std::string& op, const std::string& device, double seconds,
                     uint64_t bytes_moved);

}  // namespace kiln::detail
