// kernels/dtype.h — the CPU kernels' dtype types and dtype switch (the SDK's, shared with
// every plugin: kiln/sdk/dtype_visit.h), and kiln.copy's value conversion as the
// CPU computes it (saturating float→int).
#ifndef KILN_CPU_KERNELS_DTYPE_H
#define KILN_CPU_KERNELS_DTYPE_H

#include <cmath>
#include <cstdint>
#include <limits>
#include <type_traits>

#include "kiln/c_api.h"
#include "kiln/sdk/dtype_visit.h"
#include "kiln/sdk/half.h"

namespace kiln::cpu {

using sdk::bfloat16;
using sdk::float16;

// Dtype types and visit_dtype: the SDK's (kiln/sdk/dtype_visit.h).
using namespace sdk::dtypes;

/// Converts one value between storage types with kiln.copy's rules: float→int
/// truncates toward zero and saturates (NaN becomes 0, out of range the nearest end:
/// OPS.md leaves it undefined, but a C++ cast of such a value is undefined behaviour,
/// which a hostile checkpoint could reach; this is also what GPUs do), anything→bool
/// is `x != 0`, bool→number is 0/1, and conversions to half types round once to
/// nearest even (from double directly, not through float).
template <class To, class From>
inline To convert(From v) {
  if constexpr (std::is_same_v<To, From>) {
    return v;
  } else if constexpr (std::is_same_v<To, bool>) {
    if constexpr (is_half_v<From>)
      return static_cast<float>(v) != 0.0f;
    else
      return v != From(0);
  } else if constexpr (is_half_v<From>) {
    // Half → anything: widen to float exactly, then convert from float.
    return convert<To>(static_cast<float>(v));
  } else if constexpr (is_half_v<To>) {
    if constexpr (std::is_same_v<From, float>)
      return To(v);
    else if constexpr (std::is_same_v<From, double>)
      return To(v);
    // Integers: via double (exact for int32/uint8/bool and for every int64 a half
    // type can hold without overflowing to inf).
    else
      return To(static_cast<double>(v));
  } else if constexpr (std::is_integral_v<To> && std::is_floating_point_v<From>) {
    if (!(v == v)) return To(0);  // NaN
    // The ends as From: exact for the bottom (a power of two or 0); the top's
    // nearest From may round up past the range, so compare with >= against it.
    constexpr From lo = static_cast<From>(std::numeric_limits<To>::min());
    constexpr From hi = static_cast<From>(std::numeric_limits<To>::max());
    if (v <= lo) return std::numeric_limits<To>::min();
    if (v >= hi) return std::numeric_limits<To>::max();
    return static_cast<To>(v);
  } else {
    return static_cast<To>(v);
  }
}

}  // namespace kiln::cpu

#endif  // KILN_CPU_KERNELS_DTYPE_H
