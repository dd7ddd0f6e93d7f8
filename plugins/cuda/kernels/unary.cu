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
  args.expect_counts(1, 1);
  const Tensor x = args.input(0);
  const Tensor y = args.output(0);
  expect_same_shape(x, y, "x");
  expect_dtype(y, x.dtype, "y");
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
  args.expect_counts(1, 1);
  const Tensor x = args.input(0);
  const Tensor y = args.output(0);
  expect_same_shape(x, y, "x");
  expect_dtype(y, x.dtype, "y");
  const Tensor* ops[2] = {&y, &x};
  if (!dispatch<FloatTypes, SignedIntTypes>(x.dtype, [&](auto tag) {
        using T = typename decltype(tag)::type;
        run_elementwise<T, T>(launch, ops, sdk::clamp_for<T>(args));
      })) {
    unsupported_dtype(x.dtype);
  }
}

void logical_not_impl(const OpArgs& args, const Launch& launch) {
  args.expect_counts(1, 1);
  const Tensor x = args.input(0);
  const Tensor y = args.output(0);
  expect_same_shape(x, y, "x");
  expect_dtype(y, KILN_DTYPE_BOOL, "y");
  const Tensor* ops[2] = {&y, &x};
  if (!dispatch<AllTypes>(x.dtype, [&](auto tag) {
        run_elementwise<bool, typename decltype(tag)::type>(launch, ops, LogicalNot{});
      })) {
    unsupported_dtype(x.dtype);
  }
}

int32_t supports_float(void*, const kiln_op_args* args) {
  const kiln_dtype d = input_dtype(args, 0);
  return is_float_dtype(d) && output_dtype(args, 0) == d;
}

int32_t supports_float_signed(void*, const kiln_op_args* args) {
  const kiln_dtype d = input_dtype(args, 0);
  return (is_float_dtype(d) || d == KILN_DTYPE_INT32 || d == KILN_DTYPE_INT64) &&
         output_dtype(args, 0) == d;
}

int32_t supports_float_pair(void*, const kiln_op_args* args) {
  const kiln_dtype d = input_dtype(args, 0);
  return is_float_dtype(d) && input_dtype(args, 1) == d && output_dtype(args, 0) == d;
}

}  // namespace

void add_unary_kernels(KernelList& list) {
  list.push_back({"kiln.neg", &signed_impl<Neg>, &supports_float_signed, kStridedInOut});
  list.push_back({"kiln.abs", &signed_impl<Abs>, &supports_float_signed, kStridedInOut});
  list.push_back({"kiln.sign", &signed_impl<Sign>, &supports_float_signed, kStridedInOut});
  list.push_back({"kiln.relu", &signed_impl<Relu>, &supports_float_signed, kStridedInOut});
  list.push_back({"kiln.clamp", &clamp_impl, &supports_float_signed, kStridedInOut});
  list.push_back({"kiln.exp", &float_impl<Exp>, &supports_float, kStridedInOut});
  list.push_back({"kiln.log", &float_impl<Log>, &supports_float, kStridedInOut});
  list.push_back({"kiln.sqrt", &float_impl<Sqrt>, &supports_float, kStridedInOut});
  list.push_back({"kiln.sin", &float_impl<Sin>, &supports_float, kStridedInOut});
  list.push_back({"kiln.cos", &float_impl<Cos>, &supports_float, kStridedInOut});
  list.push_back({"kiln.tanh", &float_impl<Tanh>, &supports_float, kStridedInOut});
  list.push_back({"kiln.rsqrt", &float_impl<Rsqrt>, &supports_float, kStridedInOut});
  list.push_back({"kiln.sigmoid", &float_impl<Sigmoid>, &supports_float, kStridedInOut});
  list.push_back({"kiln.gelu", &gelu_impl, &supports_float, kStridedInOut});
  list.push_back({"kiln.logical_not", &logical_not_impl, nullptr, kStridedInOut});
  list.push_back({"kiln.relu_backward", &relu_backward_impl, &supports_float_pair, kStridedInOut});
  // Strided in only, as the catalogue has it (and as the CPU plugin declares).
  list.push_back({"kiln.gelu_backward", &gelu_backward_impl, &supports_float_pair,
                  KILN_KERNEL_STRIDED_INPUTS});
}

}  // namespace kiln::cuda
