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

[[noreturn]] void bad_approximate(const char* approximate) {
  throw sdk::Error(
      KILN_STATUS_INVALID_ARGUMENT,
      sdk::str_cat("approximate must be \"none\" or \"tanh\", got \"", approximate, "\""));
}

void gelu_impl(const OpArgs& args, const Launch& launch) {
  const char* approximate = args.attr_string("approximate");
  if (std::strcmp(approximate, "none") == 0) return float_impl<GeluExact>(args, launch);
  if (std::strcmp(approximate, "tanh") == 0) return float_impl<GeluTanh>(args, launch);
  bad_approximate(approximate);
}

// grad_x = op(grad_y, second) for relu_backward (second = y) and gelu_backward (x).
template <class Op>
void backward_impl(const OpArgs& args, const Launch& launch, const char* second_name) {
  args.expect_counts(2, 1);
  const Tensor grad_y = args.input(0), second = args.input(1), grad_x = args.output(0);
  expect_same_shape(second, grad_y, second_name);
  expect_same_shape(grad_x, grad_y, "grad_x");
  expect_dtype(second, grad_y.dtype, second_name);
  expect_dtype(grad_x, grad_y.dtype, "grad_x");
  const Tensor* ops[3] = {&grad_x, &grad_y, &second};
  if (!dispatch<FloatTypes>(grad_y.dtype, [&](auto tag) {
        using T = typename decltype(tag)::type;
        run_elementwise<T, T, T>(launch, ops, Op{});
      })) {
    unsupported_dtype(grad_y.dtype);
  }
}

void gelu_backward_impl(const OpArgs& args, const Launch& launch) {
  const char* approximate = args.attr_string("approximate");
  if (std::strcmp(approximate, "none") == 0) return backward_impl<GeluExactGrad>(args, launch, "x");
  if (std::strcmp(approximate, "tanh") == 0) return backward_impl<GeluTanhGrad>(args, launch, "x");
  bad_approximate(approximate);
}

void relu_backward_impl(const OpArgs& args, const Launch& launch) {
  backward_impl<ReluGrad>(args, launch, "y");
}

// Integer bounds: the smallest integer >= min and the largest <= max, saturated to the
// dtype's range; a NaN bound is no bound, as it is for floats.
template <class T>
T integer_bound(double bound, bool is_min) {
  constexpr double lowest = static_cast<double>(std::numeric_limits<T>::lowest());
  constexpr double highest = static_cast<double>(std::numeric_limits<T>::max());
  if (std::isnan(bound))
    return is_min ? std::numeric_limits<T>::lowest() : std::numeric_limits<T>::max();
  const double b = is_min ? std::ceil(bound) : std::floor(bound);
  if (b <= lowest) return std::numeric_limits<T>::lowest();
  if (b >= highest) return std::numeric_limits<T>::max();
  return static_cast<T>(b);
}

void clamp_impl(const OpArgs& args, const Launch& launch) {
  args.expect_counts(1, 1);
  const double lo = args.attr_float("min");
  const double hi = args.attr_float("max");
  const Tensor x = args.input(0);
  const Tensor y = args.output(0);
  expect_same_shape(x, y, "x");
  expect_dtype(y, x.dtype, "y");
  const Tensor* ops[2] = {&y, &x};
  if (!dispatch<FloatTypes, SignedIntTypes>(x.dtype, [&](auto tag) {
        using T = typename decltype(tag)::type;
        using C = compute_t<T>;
        if constexpr (std::is_integral_v<T>) {
          run_elementwise<T, T>(launch, ops,
                                Clamp<C>{integer_bound<T>(lo, true), integer_bound<T>(hi, false)});
        } else {
          run_elementwise<T, T>(launch, ops, Clamp<C>{static_cast<C>(lo), static_cast<C>(hi)});
        }
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
