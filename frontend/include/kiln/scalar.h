#pragma once
/// @file scalar.h
/// kiln::Scalar: a number operand (`x + 2`, `x * 0.5`, `full({2}, true)`) that
/// remembers whether it was written as a bool, an integer or a floating value, so
/// `int_tensor + 2` stays integral while `int_tensor + 0.5` becomes float32, as in
/// PyTorch.

#include <cstdint>
#include <type_traits>

#include "kiln/dtype.h"

namespace kiln {

class Scalar {
 public:
  enum class Kind { Bool, Integral, Floating };

  Scalar(bool v) : kind_(Kind::Bool), i_(v), d_(v) {}  // NOLINT
  template <typename T,
            std::enable_if_t<std::is_integral_v<T> && !std::is_same_v<T, bool>, int> = 0>
  Scalar(T v)
      : kind_(Kind::Integral), i_(static_cast<int64_t>(v)), d_(static_cast<double>(v)) {}  // NOLINT
  template <typename T, std::enable_if_t<std::is_floating_point_v<T>, int> = 0>
  Scalar(T v)
      : kind_(Kind::Floating),
        i_(truncate(static_cast<double>(v))),
        d_(static_cast<double>(v)) {}  // NOLINT

  Kind kind() const { return kind_; }
  /// The value as a double: exact for bool and floating scalars, rounded for integers
  /// beyond 2^53 (use to_int() for those).
  double to_double() const { return d_; }
  /// The value as an int64: exact for bool and integral scalars; a floating scalar is
  /// truncated toward zero, saturated at int64's range, and NaN gives 0 (never the
  /// undefined behaviour of a plain cast).
  int64_t to_int() const { return i_; }

  /// The dtype of a tensor holding only this value: bool, int64 or float32.
  DType natural_dtype() const;
  /// The dtype `tensor_dtype (op) scalar` is computed in: the tensor's dtype unless
  /// the scalar is of a higher category (bool < integral < floating), in which case
  /// the default of that category (int64, float32).
  DType result_type(DType tensor_dtype) const;

 private:
  static int64_t truncate(double v) {
    constexpr double two_63 = 9223372036854775808.0;
    if (!(v == v)) return 0;
    if (v >= two_63) return INT64_MAX;
    if (v < -two_63) return INT64_MIN;
    return static_cast<int64_t>(v);
  }

  Kind kind_;
  int64_t i_;
  double d_;
};

}  // namespace kiln
