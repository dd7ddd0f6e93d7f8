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
  list.push_back({"kiln.neg", &signed_impl<Neg>,
                  &sdk::supports_catalogue_dtypes<sdk::catalogue::neg>, kStridedInOut});
  list.push_back({"kiln.abs", &signed_impl<Abs>,
                  &sdk::supports_catalogue_dtypes<sdk::catalogue::abs>, kStridedInOut});
  list.push_back({"kiln.sign", &signed_impl<Sign>,
                  &sdk::supports_catalogue_dtypes<sdk::catalogue::sign>, kStridedInOut});
  list.push_back({"kiln.relu", &signed_impl<Relu>,
                  &sdk::supports_catalogue_dtypes<sdk::catalogue::relu>, kStridedInOut});
  list.push_back({"kiln.clamp", &clamp_impl, &sdk::supports_catalogue_dtypes<sdk::catalogue::clamp>,
                  kStridedInOut});
  list.push_back({"kiln.exp", &float_impl<Exp>,
                  &sdk::supports_catalogue_dtypes<sdk::catalogue::exp>, kStridedInOut});
  list.push_back({"kiln.log", &float_impl<Log>,
                  &sdk::supports_catalogue_dtypes<sdk::catalogue::log>, kStridedInOut});
  list.push_back({"kiln.sqrt", &float_impl<Sqrt>,
                  &sdk::supports_catalogue_dtypes<sdk::catalogue::sqrt>, kStridedInOut});
  list.push_back({"kiln.sin", &float_impl<Sin>,
                  &sdk::supports_catalogue_dtypes<sdk::catalogue::sin>, kStridedInOut});
  list.push_back({"kiln.cos", &float_impl<Cos>,
                  &sdk::supports_catalogue_dtypes<sdk::catalogue::cos>, kStridedInOut});
  list.push_back({"kiln.tanh", &float_impl<Tanh>,
                  &sdk::supports_catalogue_dtypes<sdk::catalogue::tanh>, kStridedInOut});
  list.push_back({"kiln.rsqrt", &float_impl<Rsqrt>,
                  &sdk::supports_catalogue_dtypes<sdk::catalogue::rsqrt>, kStridedInOut});
  list.push_back({"kiln.sigmoid", &float_impl<Sigmoid>,
                  &sdk::supports_catalogue_dtypes<sdk::catalogue::sigmoid>, kStridedInOut});
  list.push_back({"kiln.gelu", &gelu_impl, &sdk::supports_catalogue_dtypes<sdk::catalogue::gelu>,
                  kStridedInOut});
  list.push_back({"kiln.logical_not", &logical_not_impl, nullptr, kStridedInOut});
  list.push_back({"kiln.relu_backward", &relu_backward_impl,
                  &sdk::supports_catalogue_dtypes<sdk::catalogue::relu_backward>, kStridedInOut});
  // Strided in only, as the catalogue has it (and as the CPU plugin declares).
  list.push_back({"kiln.gelu_backward", &gelu_backward_impl,
                  &sdk::supports_catalogue_dtypes<sdk::catalogue::gelu_backward>,
                  KILN_KERNEL_STRIDED_INPUTS});
}

}  // namespace kiln::cuda
