// kernels/binary_common.h — shared setup for two-input elementwise kernels.
#ifndef KILN_CPU_KERNELS_BINARY_COMMON_H
#define KILN_CPU_KERNELS_BINARY_COMMON_H

#include "elementwise.h"

namespace kiln::cpu {

/// The operands of a binary op: inputs a, b and output y of one shape, a and b of
/// one dtype, and the loop plan over (y, a, b). Built in place: the plan is large
/// enough that copying it would show up in the cost of a 1-element op.
struct BinaryOperands {
  TensorView a, b, y;
  LoopPlan<3> plan;

  explicit BinaryOperands(const OpArgs& args)
      : a(first_input(args)), b(args.input(1)), y(args.output(0)), plan(checked_plan(a, b, y)) {}

 private:
  static TensorView first_input(const OpArgs& args) {
    args.expect_counts(2, 1);
    return args.input(0);
  }
  static LoopPlan<3> checked_plan(const TensorView& a, const TensorView& b, const TensorView& y) {
    expect_same_shape(a, y, "a");
    expect_same_shape(b, y, "b");
    expect_dtype(b, a.dtype, "b");
    const TensorView* ops[3] = {&y, &a, &b};
    return make_loop_plan(ops);
  }
};

}  // namespace kiln::cpu

#endif  // KILN_CPU_KERNELS_BINARY_COMMON_H
