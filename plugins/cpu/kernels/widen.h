// kernels/widen.h — float16 and bfloat16 operands through a float32 kernel.
//
// The CPU has no half-precision arithmetic worth the name, and PyTorch's CPU kernels
// for convolution, normalization and the optimizers compute in float32 too. So these
// ops take half-precision operands by widening: widened<Impl> gives the float32
// kernel `Impl` a float32 copy of every float16/bfloat16 operand (outputs included,
// since some are updated in place: running statistics, parameters, optimizer state),
// runs it, and rounds each half-precision output back once. Operands of other dtypes
// (indices, a float32 weight beside a bfloat16 input) pass through untouched.
//
// The copies cost one read and one write of each half operand; beside a convolution
// or a normalization (and the optimizer's own pass) that is small, and the results
// are the float32 kernel's, rounded once.
#ifndef KILN_CPU_KERNELS_WIDEN_H
#define KILN_CPU_KERNELS_WIDEN_H

#include "op_args.h"

namespace kiln::cpu {

/// Whether any operand of `args` is float16 or bfloat16.
bool has_half_operand(const kiln_op_args* args) noexcept;

/// Runs `impl` on float32 copies of the half-precision operands, as described above.
void run_widened(const OpArgs& args, void (*impl)(const OpArgs&));

template <void (*Impl)(const OpArgs&)>
void widened(const OpArgs& args) {
  if (has_half_operand(&args.raw()))
    run_widened(args, Impl);
  else
    Impl(args);
}

/// `supports` for a widened kernel: float16/bfloat16 wherever `Supports` (the float32
/// kernel's own rule) accepts float32.
int32_t supports_as_float32(void* context, const kiln_op_args* args,
                            int32_t (*supports)(void*, const kiln_op_args*)) noexcept;
template <int32_t (*Supports)(void*, const kiln_op_args*)>
int32_t supports_widened(void* context, const kiln_op_args* args) noexcept {
  return supports_as_float32(context, args, Supports);
}

}  // namespace kiln::cpu

#endif  // KILN_CPU_KERNELS_WIDEN_H
