// kiln/sdk/functors.h — what the catalogue's elementwise ops compute, one element at a
// time: the scalar functors of arithmetic, comparisons, the unary ops, their gradients
// (ReLU, GELU), written once and instantiated by every plugin's kernels (its own loops,
// vectorization and launch geometry around them). KILN_HOST_DEVICE: a CUDA plugin's
// device code calls the very same expressions as the CPU plugin's host code.
//
// `T` is the compute type (float for the half types). The NaN rules are OPS.md's:
// comparisons with NaN are false, so sign, relu and clamp pass NaN through, and
// maximum/minimum return NaN when either operand is NaN. Integer arithmetic wraps.
#ifndef KILN_SDK_FUNCTORS_H
#define KILN_SDK_FUNCTORS_H

#include <cmath>
#include <type_traits>

#include "kiln/sdk/dtype_visit.h"  // is_nan
#include "kiln/sdk/host_device.h"

namespace kiln::sdk {

/// The math library, float and double, for both sides: in CUDA device code the
/// device library (expf, exp, ...), on the host <cmath>.
namespace math {
#if defined(__CUDA_ARCH__)
#define KILN_SDK_MATH_1(name, float_fn, double_fn)                      \
  KILN_HOST_DEVICE inline float name(float x) { return ::float_fn(x); } \
  KILN_HOST_DEVICE inline double name(double x) { return ::double_fn(x); }
#define KILN_SDK_MATH_2(name, float_fn, double_fn)                                  \
  KILN_HOST_DEVICE inline float name(float x, float y) { return ::float_fn(x, y); } \
  KILN_HOST_DEVICE inline double name(double x, double y) { return ::double_fn(x, y); }
#else
#define KILN_SDK_MATH_1(name, float_fn, double_fn)                     \
  KILN_HOST_DEVICE inline float name(float x) { return std::name(x); } \
  KILN_HOST_DEVICE inline double name(double x) { return std::name(x); }
#define KILN_SDK_MATH_2(name, float_fn, double_fn)                                 \
  KILN_HOST_DEVICE inline float name(float x, float y) { return std::name(x, y); } \
  KILN_HOST_DEVICE inline double name(double x, double y) { return std::name(x, y); }
#endif
KILN_SDK_MATH_1(exp, expf, exp)
KILN_SDK_MATH_1(log, logf, log)
KILN_SDK_MATH_1(log1p, log1pf, log1p)
KILN_SDK_MATH_1(sqrt, sqrtf, sqrt)
KILN_SDK_MATH_1(sin, sinf, sin)
KILN_SDK_MATH_1(cos, cosf, cos)
KILN_SDK_MATH_1(tanh, tanhf, tanh)
KILN_SDK_MATH_1(erf, erff, erf)
KILN_SDK_MATH_1(fabs, fabsf, fabs)
KILN_SDK_MATH_2(pow, powf, pow)
KILN_SDK_MATH_2(atan2, atan2f, atan2)
#undef KILN_SDK_MATH_1
#undef KILN_SDK_MATH_2
}  // namespace math

// -- arithmetic (kiln.add ... kiln.minimum) ----------------------------------------------

/// Integer arithmetic wraps, as OPS.md specifies; unsigned math keeps it defined.
template <class T, bool = std::is_integral_v<T>>
struct Wrap {
  using type = T;
};
template <class T>
struct Wrap<T, true> {
  using type = std::make_unsigned_t<T>;
};
template <class T>
using wrap_t = typename Wrap<T>::type;

struct Add {
  template <class T>
  KILN_HOST_DEVICE T operator()(T a, T b) const {
    return static_cast<T>(wrap_t<T>(a) + wrap_t<T>(b));
  }
};
struct Sub {
  template <class T>
  KILN_HOST_DEVICE T operator()(T a, T b) const {
    return static_cast<T>(wrap_t<T>(a) - wrap_t<T>(b));
  }
};
struct Mul {
  template <class T>
  KILN_HOST_DEVICE T operator()(T a, T b) const {
    return static_cast<T>(wrap_t<T>(a) * wrap_t<T>(b));
  }
};
struct Div {
  template <class T>
  KILN_HOST_DEVICE T operator()(T a, T b) const {
    return a / b;
  }
};
/// Integer a^b, exact and wrapping on overflow (by squaring, in unsigned arithmetic);
/// a negative exponent gives 1 for a = 1, ±1 for a = -1 and 0 otherwise (PyTorch's rule).
template <class T>
KILN_HOST_DEVICE T integer_pow(T a, T b) {
  if constexpr (std::is_signed_v<T>) {
    if (b < 0) return a == 1 ? T(1) : a == -1 ? T((b & 1) ? -1 : 1) : T(0);
  }
  using U = std::make_unsigned_t<T>;
  U result = 1, base = static_cast<U>(a), e = static_cast<U>(b);
  while (e != 0) {
    if (e & 1u) result = static_cast<U>(result * base);
    base = static_cast<U>(base * base);
    e = static_cast<U>(e >> 1);
  }
  return static_cast<T>(result);
}
struct Pow {
  template <class T>
  KILN_HOST_DEVICE T operator()(T a, T b) const {
    if constexpr (std::is_integral_v<T>)
      return integer_pow(a, b);
    else
      return math::pow(a, b);
  }
};
struct Atan2 {  // the angle of (b, a); float types only
  template <class T>
  KILN_HOST_DEVICE T operator()(T a, T b) const {
    return math::atan2(a, b);
  }
};
struct Maximum {  // a NaN `a` is kept; a NaN `b` wins because a > b is false
  template <class T>
  KILN_HOST_DEVICE T operator()(T a, T b) const {
    return (is_nan(a) || a > b) ? a : b;
  }
};
struct Minimum {
  template <class T>
  KILN_HOST_DEVICE T operator()(T a, T b) const {
    return (is_nan(a) || a < b) ? a : b;
  }
};

// -- comparisons and logic (kiln.eq ... kiln.logical_or) -------------------------------------

struct Eq {
  template <class T>
  KILN_HOST_DEVICE bool operator()(T a, T b) const {
    return a == b;
  }
};
struct Ne {
  template <class T>
  KILN_HOST_DEVICE bool operator()(T a, T b) const {
    return a != b;
  }
};
struct Lt {
  template <class T>
  KILN_HOST_DEVICE bool operator()(T a, T b) const {
    return a < b;
  }
};
struct Le {
  template <class T>
  KILN_HOST_DEVICE bool operator()(T a, T b) const {
    return a <= b;
  }
};
struct Gt {
  template <class T>
  KILN_HOST_DEVICE bool operator()(T a, T b) const {
    return a > b;
  }
};
struct Ge {
  template <class T>
  KILN_HOST_DEVICE bool operator()(T a, T b) const {
    return a >= b;
  }
};
struct LogicalAnd {
  template <class T>
  KILN_HOST_DEVICE bool operator()(T a, T b) const {
    return (a != T(0)) & (b != T(0));
  }
};
struct LogicalOr {
  template <class T>
  KILN_HOST_DEVICE bool operator()(T a, T b) const {
    return (a != T(0)) | (b != T(0));
  }
};

// -- unary ops ------------------------------------------------------------------------------

/// Integer negation wraps (-INT_MIN == INT_MIN) instead of overflowing.
template <class T>
KILN_HOST_DEVICE inline T wrapping_neg(T x) {
  using U = std::make_unsigned_t<T>;
  return static_cast<T>(static_cast<U>(U(0) - static_cast<U>(x)));
}

struct Neg {
  template <class T>
  KILN_HOST_DEVICE T operator()(T x) const {
    if constexpr (std::is_integral_v<T>)
      return wrapping_neg(x);
    else
      return -x;
  }
};
struct Abs {
  template <class T>
  KILN_HOST_DEVICE T operator()(T x) const {
    if constexpr (std::is_integral_v<T>)
      return x < 0 ? wrapping_neg(x) : x;
    else
      return math::fabs(x);
  }
};
struct Sign {  // NaN falls through every comparison and stays NaN
  template <class T>
  KILN_HOST_DEVICE T operator()(T x) const {
    return x > T(0) ? T(1) : (x < T(0) ? T(-1) : (x == T(0) ? T(0) : x));
  }
};
struct Relu {  // NaN < 0 is false: NaN stays NaN
  template <class T>
  KILN_HOST_DEVICE T operator()(T x) const {
    return x < T(0) ? T(0) : x;
  }
};
struct Exp {
  template <class T>
  KILN_HOST_DEVICE T operator()(T x) const {
    return math::exp(x);
  }
};
struct Log {
  template <class T>
  KILN_HOST_DEVICE T operator()(T x) const {
    return math::log(x);
  }
};
struct Log1p {  // log(1 + x) without rounding 1 + x first
  template <class T>
  KILN_HOST_DEVICE T operator()(T x) const {
    return math::log1p(x);
  }
};
struct Sqrt {
  template <class T>
  KILN_HOST_DEVICE T operator()(T x) const {
    return math::sqrt(x);
  }
};
struct Sin {
  template <class T>
  KILN_HOST_DEVICE T operator()(T x) const {
    return math::sin(x);
  }
};
struct Cos {
  template <class T>
  KILN_HOST_DEVICE T operator()(T x) const {
    return math::cos(x);
  }
};
struct Tanh {
  template <class T>
  KILN_HOST_DEVICE T operator()(T x) const {
    return math::tanh(x);
  }
};
struct Rsqrt {  // a correctly rounded division, not an approximate rsqrt instruction
  template <class T>
  KILN_HOST_DEVICE T operator()(T x) const {
    return T(1) / math::sqrt(x);
  }
};
struct Erf {
  template <class T>
  KILN_HOST_DEVICE T operator()(T x) const {
    return math::erf(x);
  }
};
struct Sigmoid {
  template <class T>
  KILN_HOST_DEVICE T operator()(T x) const {
    return T(1) / (T(1) + math::exp(-x));
  }
};
struct GeluExact {
  template <class T>
  KILN_HOST_DEVICE T operator()(T x) const {
    constexpr T kInvSqrt2 = T(0.70710678118654752440);
    return T(0.5) * x * (T(1) + math::erf(x * kInvSqrt2));
  }
};
struct GeluTanh {
  template <class T>
  KILN_HOST_DEVICE T operator()(T x) const {
    constexpr T kSqrt2OverPi = T(0.79788456080286535588);
    constexpr T kCoefficient = T(0.044715);
    return T(0.5) * x * (T(1) + math::tanh(kSqrt2OverPi * (x + kCoefficient * x * x * x)));
  }
};
/// min(max(x, lo), hi), NaN passing through (comparisons with NaN are false).
template <class T>
struct Clamp {
  T lo, hi;
  KILN_HOST_DEVICE T operator()(T x) const {
    const T t = x < lo ? lo : x;
    return t > hi ? hi : t;
  }
};
struct LogicalNot {
  template <class T>
  KILN_HOST_DEVICE bool operator()(T x) const {
    return x == T(0);
  }
};

// -- gradients (kiln.relu_backward, kiln.gelu_backward): f(grad_y, second) ----------------

/// grad_x = y <= 0 ? 0 : grad_y. A select, not grad_y * (y > 0): a NaN or infinite
/// grad_y where the unit is off must still give 0. A NaN y passes grad_y through, as
/// PyTorch 1.13's threshold_backward does (it zeroes only where y <= 0).
struct ReluGrad {
  template <class T>
  KILN_HOST_DEVICE T operator()(T grad, T y) const {
    return y <= T(0) ? T(0) : grad;
  }
};
/// d/dx gelu(x), times grad_y:
///   none: 0.5·(1 + erf(x/√2)) + x·φ(x),  φ(x) = exp(−x²/2)/√(2π)
///   tanh: u = √(2/π)(x + 0.044715x³), t = tanh(u):
///         0.5·(1 + t) + 0.5·x·(1 − t²)·√(2/π)(1 + 3·0.044715x²)
struct GeluExactGrad {
  template <class T>
  KILN_HOST_DEVICE T operator()(T grad, T x) const {
    constexpr T kInvSqrt2 = T(0.70710678118654752440);
    constexpr T kInvSqrt2Pi = T(0.39894228040143267794);
    const T cdf = T(0.5) * (T(1) + math::erf(x * kInvSqrt2));
    const T pdf = kInvSqrt2Pi * math::exp(T(-0.5) * x * x);
    return grad * (cdf + x * pdf);
  }
};
struct GeluTanhGrad {
  template <class T>
  KILN_HOST_DEVICE T operator()(T grad, T x) const {
    constexpr T kSqrt2OverPi = T(0.79788456080286535588);
    constexpr T kCoefficient = T(0.044715);
    const T x2 = x * x;
    const T t = math::tanh(kSqrt2OverPi * (x + kCoefficient * x2 * x));
    const T du = kSqrt2OverPi * (T(1) + T(3) * kCoefficient * x2);
    return grad * (T(0.5) * (T(1) + t) + T(0.5) * x * (T(1) - t * t) * du);
  }
};

}  // namespace kiln::sdk

#endif  // KILN_SDK_FUNCTORS_H
