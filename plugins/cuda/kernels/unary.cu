// Elementwise unary ops: neg, abs, sign, relu, clamp, exp, log, sqrt, sin, cos, tanh,
// rsqrt, sigmoid, gelu, logical_not, and the gradients relu_backward and
// gelu_backward. Half types compute in float32. NaN rules as in OPS.md: comparisons
// with NaN are false, so sign, relu and clamp pass NaN through.
#include <cmath>
#include <cstring>
#include <limits>

#include "kernels/elementwise.cuh"
#include "kernels/registry.h"
#include "kiln/sdk/functors.h"
#include "kiln/sdk/pointwise.h"

namespace kiln::cuda {

namespace {

using sdk::Abs, sdk::Clamp, sdk::Cos, sdk::Exp, sdk::GeluExact, sdk::GeluExactGrad, sdk::GeluTanh,
    sdk::GeluTanhGrad, sdk::Log, sdk::LogicalNot, sdk::Neg, sdk::Relu, sdk::ReluGrad, sdk::Rsqrt,
    sdk::Sigmoid, sdk::Sign, sdk::Sin, sdk::Sqrt, sdk::Tanh;  // kiln/sdk/functors.h

template <class Op, class... Lists>
void unary_same_dtype(const OpArgs& args, const Launch& launch, const Op& op) {
  const sdk::UnaryOperands o = sdk::unary_operands(args);
  const Tensor &x = o.x, &y = o.y;
  const Tensor* ops[2] = {&y, &x};
  if (!dispatch<Lists...>(x.dtype, [&](auto tag) {
        using T = typename decltype(tag)::type;
        run_elementwise<T, T>(launch, ops, op);
      })) {
    unsupported_dtype(x.dtype);
  }
}

template <class Op>
void float_impl(const OpArgs& args, const Launch& launch) {
  unary_same_dtype<Op, FloatTypes>(args, launch, Op{});
}

template <class Op>
void signed_impl(const OpArgs& args, const Launch& launch) {
  unary_same_dtype<Op, FloatTypes, SignedIntTypes>(args, launch, Op{});
}

void gelu_impl(const OpArgs& args, const Launch& launch) {
  if (sdk::gelu_approximate(args) == sdk::GeluApproximate::None) {
    return float_impl<GeluExact>(args, launch);
  }
  float_impl<GeluTanh>(args, launch);
}

// grad_x = Op(grad_y, second) for relu_backward (second = y) and gelu_backward (x).
template <class Op>
void backward_impl(const OpArgs& args, const Launch& launch, const char* second_name) {
  const sdk::GradOperands o = sdk::grad_operands(args, second_name);
  const Tensor* ops[3] = {&o.grad_x, &o.grad_y, &o.second};
  if (!dispatch<FloatTypes>(o.grad_y.dtype, [&](auto tag) {
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
  const Tensor &x = o.x, &y = o.y;
  const Tensor* ops[2] = {&y, &x};
  if (!dispatch<FloatTypes, SignedIntTypes>(x.dtype, [&](auto tag) {
        using T = typename decltype(tag)::type;
        run_elementwise<T, T>(launch, ops, sdk::clamp_for<T>(args));
      })) {
    unsupported_dtype(x.dtype);
  }
}

void logical_not_impl(const OpArgs& args, const Launch& launch) {
  const sdk::UnaryOperands o = sdk::unary_operands(args, KILN_DTYPE_BOOL);
  const Tensor &x = o.x, &y = o.y;
  const Tensor* ops[2] = {&y, &x};
  if (!dispatch<AllTypes>(x.dtype, [&](auto tag) {
        run_elementwise<bool, typename decltype(tag)::type>(launch, ops, LogicalNot{});
      })) {
    unsupported_dtype(x.dtype);
  }
}

}  // namespace

void add_unary_kernels(KernelList& list) {
  namespace op = sdk::catalogue;
  list.push_back(catalogue_kernel<op::neg>(&signed_impl<Neg>, kStridedInOut));
  list.push_back(catalogue_kernel<op::abs>(&signed_impl<Abs>, kStridedInOut));
  list.push_back(catalogue_kernel<op::sign>(&signed_impl<Sign>, kStridedInOut));
  list.push_back(catalogue_kernel<op::relu>(&signed_impl<Relu>, kStridedInOut));
  list.push_back(catalogue_kernel<op::clamp>(&clamp_impl, kStridedInOut));
  list.push_back(catalogue_kernel<op::exp>(&float_impl<Exp>, kStridedInOut));
  list.push_back(catalogue_kernel<op::log>(&float_impl<Log>, kStridedInOut));
  list.push_back(catalogue_kernel<op::sqrt>(&float_impl<Sqrt>, kStridedInOut));
  list.push_back(catalogue_kernel<op::sin>(&float_impl<Sin>, kStridedInOut));
  list.push_back(catalogue_kernel<op::cos>(&float_impl<Cos>, kStridedInOut));
  list.push_back(catalogue_kernel<op::tanh>(&float_impl<Tanh>, kStridedInOut));
  list.push_back(catalogue_kernel<op::rsqrt>(&float_impl<Rsqrt>, kStridedInOut));
  list.push_back(catalogue_kernel<op::sigmoid>(&float_impl<Sigmoid>, kStridedInOut));
  list.push_back(catalogue_kernel<op::gelu>(&gelu_impl, kStridedInOut));
  list.push_back({"kiln.logical_not", &logical_not_impl, nullptr, kStridedInOut});
  list.push_back(catalogue_kernel<op::relu_backward>(&relu_backward_impl, kStridedInOut));
  // Strided in only, as the catalogue has it (and as the CPU plugin declares).
  list.push_back(
      catalogue_kernel<op::gelu_backward>(&gelu_backward_impl, KILN_KERNEL_STRIDED_INPUTS));
}

}  // namespace kiln::cuda
