// Elementwise unary ops: the catalogue's unary functor ops, KILN_UNARY_POINTWISE_OPS
// (kiln/sdk/pointwise_ops.h, generated from api/ops.json), and the unary kernels
// registered by hand at the end of this file (ops with attributes, a bool result or
// two operands). Half types compute in float32; NaN rules are the functors'
// (kiln/sdk/functors.h, as OPS.md states them).
#include <cmath>
#include <cstring>
#include <limits>

#include "kernels/elementwise.cuh"
#include "kernels/registry.h"
#include "kiln/sdk/functors.h"
#include "kiln/sdk/pointwise.h"
#include "kiln/sdk/pointwise_ops.h"

namespace kiln::cuda {

namespace {

using sdk::GeluExact, sdk::GeluExactGrad, sdk::GeluTanh, sdk::GeluTanhGrad, sdk::LogicalNot,
    sdk::ReluGrad;  // kiln/sdk/functors.h

// y = Op(x) for the dtypes of the KILN_DTYPES_* mask `Dtypes`.
template <class Op, uint32_t Dtypes>
void unary_same_dtype(const OpArgs& args, const Launch& launch) {
  const sdk::UnaryOperands o = sdk::unary_operands(args);
  const TensorView &x = o.x, &y = o.y;
  const TensorView* ops[2] = {&y, &x};
  if (!sdk::visit_dtype_in<Dtypes>(x.dtype, [&](auto tag) {
        using T = typename decltype(tag)::type;
        run_elementwise<T, T>(launch, ops, Op{});
      })) {
    unsupported_dtype(x.dtype);
  }
}

void gelu_impl(const OpArgs& args, const Launch& launch) {
  if (sdk::gelu_approximate(args) == sdk::GeluApproximate::None) {
    return unary_same_dtype<GeluExact, KILN_DTYPES_FLOAT>(args, launch);
  }
  unary_same_dtype<GeluTanh, KILN_DTYPES_FLOAT>(args, launch);
}

// grad_x = Op(grad_y, second) for relu_backward (second = y) and gelu_backward (x).
template <class Op>
void backward_impl(const OpArgs& args, const Launch& launch, const char* second_name) {
  const sdk::GradOperands o = sdk::grad_operands(args, second_name);
  const TensorView* ops[3] = {&o.grad_x, &o.grad_y, &o.second};
  if (!visit_dtype<FloatTypes>(o.grad_y.dtype, [&](auto tag) {
        using T = typename decltype(tag)::type;
        run_elementwise<T, T, T>(launch, ops, Op{});
      })) {
    unsupported_dtype(o.grad_y.dtype);
  }
}

void gelu_backward_impl(const OpArgs& args, const Launch& launch) {
  if (sdk::gelu_approximate(args) == sdk::GeluApproximate::None) {
    return backward_impl<GeluExactGrad>(args, launch, "x");
  }
  backward_impl<GeluTanhGrad>(args, launch, "x");
}

void relu_backward_impl(const OpArgs& args, const Launch& launch) {
  backward_impl<ReluGrad>(args, launch, "y");
}

void clamp_impl(const OpArgs& args, const Launch& launch) {
  const sdk::UnaryOperands o = sdk::unary_operands(args);
  const TensorView &x = o.x, &y = o.y;
  const TensorView* ops[2] = {&y, &x};
  if (!visit_dtype<FloatTypes, SignedIntTypes>(x.dtype, [&](auto tag) {
        using T = typename decltype(tag)::type;
        run_elementwise<T, T>(launch, ops, sdk::clamp_for<T>(args));
      })) {
    unsupported_dtype(x.dtype);
  }
}

void logical_not_impl(const OpArgs& args, const Launch& launch) {
  const sdk::UnaryOperands o = sdk::unary_operands(args, KILN_DTYPE_BOOL);
  const TensorView &x = o.x, &y = o.y;
  const TensorView* ops[2] = {&y, &x};
  if (!visit_dtype<AllTypes>(x.dtype, [&](auto tag) {
        run_elementwise<bool, typename decltype(tag)::type>(launch, ops, LogicalNot{});
      })) {
    unsupported_dtype(x.dtype);
  }
}

}  // namespace

void add_unary_kernels(KernelList& list) {
#define KILN_CUDA_UNARY(name, Functor, dtypes) \
  list.push_back(catalogue_kernel<op::name>(&unary_same_dtype<sdk::Functor, dtypes>));
  KILN_UNARY_POINTWISE_OPS(KILN_CUDA_UNARY)
#undef KILN_CUDA_UNARY
  stage_kernel<op::log1p, kStagedLog1p>(list);  // staged.h
  list.push_back(catalogue_kernel<op::clamp>(&clamp_impl));
  list.push_back(catalogue_kernel<op::gelu>(&gelu_impl));
  list.push_back(catalogue_entry<op::logical_not>(&logical_not_impl, nullptr, kStridedInOut));
  list.push_back(catalogue_kernel<op::relu_backward>(&relu_backward_impl));
  list.push_back(catalogue_kernel<op::gelu_backward>(&gelu_backward_impl));
}

}  // namespace kiln::cuda
