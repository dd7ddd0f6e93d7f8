// kiln/sdk/pointwise.h — the host side of the elementwise ops whose checks and
// attributes are more than a shape comparison: the two-operand gradients
// (kiln.relu_backward, kiln.gelu_backward), GELU's `approximate`, kiln.clamp's bounds
// and kiln.where. Written once for every plugin; what each element computes is
// kiln/sdk/functors.h, the loops are the plugin's.
#ifndef KILN_SDK_POINTWISE_H
#define KILN_SDK_POINTWISE_H

#include <cmath>
#include <cstring>
#include <limits>
#include <type_traits>

#include "kiln/sdk/dtype_visit.h"
#include "kiln/sdk/functors.h"
#include "kiln/sdk/op_args.h"
#include "kiln/sdk/op_attrs.h"

namespace kiln::sdk {

/// One input, one output of its shape: the unary ops.
struct UnaryOperands {
  TensorView x, y;
};

/// y of x's dtype, or of `y_dtype` when one is given (kiln.logical_not: bool).
inline UnaryOperands unary_operands(const OpArgs& args, kiln_dtype y_dtype = KILN_DTYPE_INVALID) {
  args.expect_counts(1, 1);
  UnaryOperands o{args.input(0), args.output(0)};
  expect_same_shape(o.x, o.y, "x");
  expect_dtype(o.y, y_dtype != KILN_DTYPE_INVALID ? y_dtype : o.x.dtype, "y");
  return o;
}

/// grad_x = f(grad_y, second), all of one float dtype and shape: relu_backward
/// (second = y) and gelu_backward (second = x).
struct GradOperands {
  TensorView grad_y, second, grad_x;
};

inline GradOperands grad_operands(const OpArgs& args, const char* second_name) {
  args.expect_counts(2, 1);
  GradOperands o{args.input(0), args.input(1), args.output(0)};
  expect_same_shape(o.second, o.grad_y, second_name);
  expect_same_shape(o.grad_x, o.grad_y, "grad_x");
  expect_dtype(o.second, o.grad_y.dtype, second_name);
  expect_dtype(o.grad_x, o.grad_y.dtype, "grad_x");
  return o;
}

/// kiln.gelu's and kiln.gelu_backward's "approximate" attribute.
enum class GeluApproximate { None, Tanh };

inline GeluApproximate gelu_approximate(const OpArgs& args) {
  const char* approximate = attrs::gelu::read(args).approximate;  // gelu_backward's too
  if (std::strcmp(approximate, "none") == 0) return GeluApproximate::None;
  if (std::strcmp(approximate, "tanh") == 0) return GeluApproximate::Tanh;
  throw Error(KILN_STATUS_INVALID_ARGUMENT,
              str_cat("approximate must be \"none\" or \"tanh\", got \"", approximate, "\""));
}

/// An integer clamp bound: the smallest integer >= min (`is_min`) or the largest
/// <= max, saturated to T's range; a NaN bound is no bound, as it is for floats.
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

/// kiln.clamp's functor for storage type T, from its "min" and "max" attributes.
template <class T>
Clamp<compute_t<T>> clamp_for(const OpArgs& args) {
  using C = compute_t<T>;
  const auto a = attrs::clamp::read(args);
  const double lo = a.min, hi = a.max;
  if constexpr (std::is_integral_v<T>) {
    return {integer_bound<T>(lo, true), integer_bound<T>(hi, false)};
  } else {
    return {static_cast<C>(lo), static_cast<C>(hi)};
  }
}

/// kiln.where: y = condition ? a : b, a bool condition and a, b of y's dtype, all of
/// y's shape.
struct WhereOperands {
  TensorView condition, a, b, y;
};

inline WhereOperands where_operands(const OpArgs& args) {
  args.expect_counts(3, 1);
  WhereOperands o{args.input(0), args.input(1), args.input(2), args.output(0)};
  expect_dtype(o.condition, KILN_DTYPE_BOOL, "condition");
  expect_same_shape(o.condition, o.y, "condition");
  expect_same_shape(o.a, o.y, "a");
  expect_same_shape(o.b, o.y, "b");
  expect_dtype(o.a, o.y.dtype, "a");
  expect_dtype(o.b, o.y.dtype, "b");
  return o;
}

}  // namespace kiln::sdk

#endif  // KILN_SDK_POINTWISE_H
