// kiln/sdk/reduce_plan.h — how a reduction walks its input (share/doc/kiln/OPS.md,
// "Reductions"), planned once for every plugin. Kernels keep their own loops; the
// plan fixes which elements reduce into which output and in what order, so every
// plugin reduces in the same order.
//
// x and y have one rank; a dim d is reduced when y.shape[d] == 1 != x.shape[d]. Size-1
// dims are dropped; kept dims stay in y's order; reduced dims are walked outermost
// first (largest |stride| first); then neighbours contiguous with each other merge.
#ifndef KILN_SDK_REDUCE_PLAN_H
#define KILN_SDK_REDUCE_PLAN_H

#include <cstdint>
#include <cstdlib>
#include <utility>

#include "kiln/sdk/loop_plan.h"
#include "kiln/sdk/op_args.h"

namespace kiln::sdk {

/// A plain struct: device code may take it by value.
struct ReducePlan {
  int64_t outputs = 1;   ///< y.numel()
  int64_t n = 1;         ///< elements reduced into each output
  int nk = 0;            ///< kept dims (size > 1), y order, outermost first
  int nr = 0;            ///< reduced dims after coalescing, outermost first
  int reduced_dims = 0;  ///< reduced dims as the caller described them
  /// The kept dims are the inner ones in memory: reduce whole rows of outputs at once.
  bool columns = false;
  int64_t k_shape[kMaxLoopDims];
  int64_t k_stride[kMaxLoopDims];  ///< x strides, elements
  int64_t r_shape[kMaxLoopDims];
  int64_t r_stride[kMaxLoopDims];
};

/// Checks x/y against the reduction convention and builds the plan. Throws
/// INVALID_ARGUMENT for mismatched ranks or sizes or a non-contiguous y, UNSUPPORTED
/// for more than kMaxLoopDims dims of size > 1.
inline ReducePlan make_reduce_plan(const TensorView& x, const TensorView& y) {
  KILN_SDK_CHECK_ARG(x.ndim == y.ndim, "y must have x's rank ", x.ndim, ", got ", y.ndim);
  KILN_SDK_CHECK_ARG(y.is_contiguous(), "y must be contiguous");
  ReducePlan p;
  for (int32_t d = 0; d < x.ndim; ++d) {
    const int64_t size = x.shape[d];
    KILN_SDK_CHECK_ARG(y.shape[d] == size || y.shape[d] == 1, "y.shape[", d, "] = ", y.shape[d],
                       " must be 1 or x.shape[", d, "] = ", size);
    if (size == 1) continue;
    KILN_SDK_CHECK(p.nk < kMaxLoopDims && p.nr < kMaxLoopDims, KILN_STATUS_UNSUPPORTED,
                   "more than ", kMaxLoopDims, " dims of size > 1");
    if (y.shape[d] == size) {
      p.k_shape[p.nk] = size;
      p.k_stride[p.nk++] = x.strides[d];
      p.outputs *= size;
    } else {
      p.r_shape[p.nr] = size;
      p.r_stride[p.nr++] = x.strides[d];
      p.n *= size;
    }
  }
  for (int d = 1; d < p.nr; ++d) {
    for (int e = d; e > 0 && std::llabs(p.r_stride[e - 1]) < std::llabs(p.r_stride[e]); --e) {
      std::swap(p.r_shape[e - 1], p.r_shape[e]);
      std::swap(p.r_stride[e - 1], p.r_stride[e]);
    }
  }
  auto coalesce = [](int& count, int64_t* shape, int64_t* stride) {
    int kept = 0;
    for (int d = 0; d < count; ++d) {
      if (kept > 0 && stride[kept - 1] == stride[d] * shape[d]) {
        shape[kept - 1] *= shape[d];
        stride[kept - 1] = stride[d];
      } else {
        shape[kept] = shape[d];
        stride[kept++] = stride[d];
      }
    }
    count = kept;
  };
  p.reduced_dims = p.nr;
  coalesce(p.nk, p.k_shape, p.k_stride);
  coalesce(p.nr, p.r_shape, p.r_stride);
  p.columns = p.nk > 0 &&
              (p.nr == 0 || std::llabs(p.k_stride[p.nk - 1]) < std::llabs(p.r_stride[p.nr - 1]));
  return p;
}

/// The operands of a one-input reduction (x -> y) and their plan, checked.
struct ReduceOperands {
  TensorView x, y;
  ReducePlan plan;
  explicit ReduceOperands(const OpArgs& args)
      : x(first_input(args)), y(args.output(0)), plan(make_reduce_plan(x, y)) {}

 private:
  static TensorView first_input(const OpArgs& args) {
    args.expect_counts(1, 1);
    return args.input(0);
  }
};

}  // namespace kiln::sdk

#endif  // KILN_SDK_REDUCE_PLAN_H
