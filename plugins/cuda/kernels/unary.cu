// Elementwise unary ops: neg, abs, sign, relu, clamp, exp, log, sqrt, sin, cos, tanh,
// rsqrt, sigmoid, gelu, logical_not, and the gradients relu_backward and
// gelu_backward. Half types compute in float32. NaN rules as in OPS.md: comparisons
// with NaN are false, so sign, relu and clamp pass NaN through.
#include <cmath>
#include <cstring>
#include <limits>

#include "kernels/elementwise.cuh"
#include "kernels/registry.h"

namespace kiln::cuda {

namespace {

// float and double overloads of the device math library, so functors can be generic.
#define KILN_CUDA_MATH(name, float_fn, double_fn)                        \
  __device__ __forceinline__ float name(float x) { return float_fn(x); } \
  __device__ __forceinline__ double name(double x) { return double_fn(x); }
KILN_CUDA_MATH(m_exp, expf, exp)
KILN_CUDA_MATH(m_log, logf, log)
KILN_CUDA_MATH(m_sqrt, sqrtf, sqrt)
KILN_CUDA_MATH(m_sin, sinf, sin)
KILN_CUDA_MATH(m_cos, cosf, cos)
KILN_CUDA_MATH(m_tanh, tanhf, tanh)
KILN_CUDA_MATH(m_erf, erff, erf)
KILN_CUDA_MATH(m_fabs, fabsf, fabs)
#undef KILN_CUDA_MATH

// Integer negation wraps (-INT_MIN == INT_MIN) instead of overflowing.
template <class T>
__device__ __forceinline__ T wrapping_neg(T x) {
  using U = std::make_unsigned_t<T>;
  return static_cast<T>(static_cast<U>(U(0) - static_cast<U>(x)));
}

struct Neg {
  template <class T>
  __device__ T operator()(T x) const {
    if constexpr (std::is_integral_v<T>)
      return wrapping_neg(x);
    else
      return -x;
  }
};
struct Abs {
  template <class T>
  __device__ T operator()(T x) const {
    if constexpr (std::is_integral_v<T>)
      return x < 0 ? wrapping_neg(x) : x;
    else
      return m_fabs(x);
  }
};
struct Sign {  // NaN falls through every comparison and stays NaN
  template <class T>
  __device__ T operator()(T x) const {
    return x > T(0) ? T(1) : (x < T(0) ? T(-1) : (x == T(0) ? T(0) : x));
  }
};
struct Relu {  // NaN < 0 is false: NaN stays NaN
  template <class T>
  __device__ T operator()(T x) const {
    return x < T(0) ? T(0) : x;
  }
};
struct Exp {
  template <class T>
  __device__ T operator()(T x) const {
    return m_exp(x);
  }
};
struct Log {
  template <class T>
  __device__ T operator()(T x) const {
    return m_log(x);
  }
};
struct Sqrt {
  template <class T>
  __device__ T operator()(T x) const {
    return m_sqrt(x);
  }
};
struct Sin {
  template <class T>
  __device__ T operator()(T x) const {
    return m_sin(x);
  }
};
struct Cos {
  template <class T>
  __device__ T operator()(T x) const {
    return m_cos(x);
  }
};
struct Tanh {
  template <class T>
  __device__ T operator()(T x) const {
    return m_tanh(x);
  }
};
struct Rsqrt {  // a correctly rounded division, not the approximate rsqrt instruction
  template <class T>
  __device__ T operator()(T x) const {
    return T(1) / m_sqrt(x);
  }
};
struct Sigmoid {
  template <class T>
  __device__ T operator()(T x) const {
    return T(1) / (T(1) + m_exp(-x));
  }
};
struct GeluExact {
  template <class T>
  __device__ T operator()(T x) const {
    constexpr T kInvSqrt2 = T(0.70710678118654752440);
    return T(0.5) * x * (T(1) + m_erf(x * kInvSqrt2));
  }
};
struct GeluTanh {
  template <class T>
  __device__ T operator()(T x) const {
    constexpr T kSqrt2OverPi = T(0.79788456080286535588);
    constexpr T kCoefficient = T(0.044715);
    return T(0.5) * x * (T(1) + m_tanh(kSqrt2OverPi * (x + kCoefficient * x * x * x)));
  }
};

// min(max(x, lo), hi), NaN passing through (comparisons with NaN are false).
template <class T>
struct Clamp {
  T lo, hi;
  __device__ T operator()(T x) const {
    const T t = x < lo ? lo : x;
    return t > hi ? hi : t;
  }
};

struct LogicalNot {
  template <class T>
  __device__ bool operator()(T x) const {
    return x == T(0);
  }
};

// d/dx gelu(x), times grad_y (the CPU plugin's formulas).
//   none: 0.5·(1 + erf(x/√2)) + x·φ(x),  φ(x) = exp(−x²/2)/√(2π)
//   tanh: u = √(2/π)(x + 0.044715x³), t = tanh(u):
//         0.5·(1 + t) + 0.5·x·(1 − t²)·√(2/π)(1 + 3·0.044715x²)
struct GeluExactGrad {
  template <class T>
  __device__ T operator()(T grad, T x) const {
    constexpr T kInvSqrt2 = T(0.70710678118654752440);
    constexpr T kInvSqrt2Pi = T(0.39894228040143267794);
    const T cdf = T(0.5) * (T(1) + m_erf(x * kInvSqrt2));
    const T pdf = kInvSqrt2Pi * m_exp(T(-0.5) * x * x);
    return grad * (cdf + x * pdf);
  }
};
struct GeluTanhGrad {
  template <class T>
  __device__ T operator()(T grad, T x) const {
    constexpr T kSqrt2OverPi = T(0.79788456080286535588);
    constexpr T kCoefficient = T(0.044715);
    const T x2 = x * x;
    const T t = m_tanh(kSqrt2OverPi * (x + kCoefficient * x2 * x));
    const T du = kSqrt2OverPi * (T(1) + T(3) * kCoefficient * x2);
    return grad * (T(0.5) * (T(1) + t) + T(0.5) * x * (T(1) - t * t) * du);
  }
};
// A select, not grad_y * (y > 0): a NaN or infinite grad_y where the unit is off must
// still give 0, and a NaN y compares false.
struct ReluGrad {
  template <class T>
  __device__ T operator()(T grad, T y) const {
    return y > T(0) ? grad : T(0);
  }
};

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
