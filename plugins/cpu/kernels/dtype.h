// kernels/dtype.h — C++ types for Kiln dtypes, conversions, and dtype dispatch.
//
// Storage types: float, double, sdk::float16, sdk::bfloat16, int32_t, int64_t,
// uint8_t and bool (one byte holding 0 or 1, as the ABI promises). Half types are
// computed in float32: `compute_t<T>` is float for them and T otherwise.
//
// Dispatch turns a runtime dtype into a template instantiation, restricted to the
// type set an op supports so no unused instantiation is compiled:
//
//   bool handled = dispatch<FloatTypes, IntTypes>(dtype, [&](auto tag) {
//     using T = typename decltype(tag)::type;
//     ...
//   });   // false: dtype not in the set
#ifndef KILN_CPU_KERNELS_DTYPE_H
#define KILN_CPU_KERNELS_DTYPE_H

#include <cmath>
#include <cstdint>
#include <limits>
#include <type_traits>

#include "kiln/c_api.h"
#include "kiln/sdk/half.h"

namespace kiln::cpu {

using sdk::bfloat16;
using sdk::float16;

template <class T>
struct TypeTag {
  using type = T;
};

template <class... Ts>
struct TypeList {};

using FloatTypes = TypeList<float, double, float16, bfloat16>;
using IntTypes = TypeList<int32_t, int64_t, uint8_t>;
using SignedIntTypes = TypeList<int32_t, int64_t>;
using BoolTypes = TypeList<bool>;

template <class T>
inline constexpr bool is_half_v = std::is_same_v<T, float16> || std::is_same_v<T, bfloat16>;

template <class T>
inline constexpr bool is_floating_v = std::is_floating_point_v<T> || is_half_v<T>;

template <class T>
using compute_t = std::conditional_t<is_half_v<T>, float, T>;

template <class T>
constexpr kiln_dtype dtype_of() {
  if constexpr (std::is_same_v<T, float>)
    return KILN_DTYPE_FLOAT32;
  else if constexpr (std::is_same_v<T, double>)
    return KILN_DTYPE_FLOAT64;
  else if constexpr (std::is_same_v<T, float16>)
    return KILN_DTYPE_FLOAT16;
  else if constexpr (std::is_same_v<T, bfloat16>)
    return KILN_DTYPE_BFLOAT16;
  else if constexpr (std::is_same_v<T, int32_t>)
    return KILN_DTYPE_INT32;
  else if constexpr (std::is_same_v<T, int64_t>)
    return KILN_DTYPE_INT64;
  else if constexpr (std::is_same_v<T, uint8_t>)
    return KILN_DTYPE_UINT8;
  else if constexpr (std::is_same_v<T, bool>)
    return KILN_DTYPE_BOOL;
  else
    static_assert(sizeof(T) == 0, "not a Kiln storage type");
}

/// The value of `v` as the type computations on T use (float for half types).
template <class T>
inline compute_t<T> load(T v) {
  return static_cast<compute_t<T>>(v);
}

/// True for NaN; constant false for types without NaN.
template <class T>
inline bool is_nan(T v) {
  if constexpr (std::is_floating_point_v<T>)
    return v != v;
  else
    return false;
}

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

template <class... Ts, class F>
bool dispatch_list(kiln_dtype dtype, TypeList<Ts...>, F&& fn) {
  bool handled = false;
  ((dtype == dtype_of<Ts>() ? (fn(TypeTag<Ts>{}), handled = true) : false), ...);
  return handled;
}

/// Calls fn(TypeTag<T>{}) for the T of `dtype` if it is in one of the lists; returns
/// whether it did.
template <class... Lists, class F>
bool dispatch(kiln_dtype dtype, F&& fn) {
  return (dispatch_list(dtype, Lists{}, fn) || ...);
}

/// Unsigned type of the same size, for byte-moving kernels that ignore the dtype.
template <size_t Size>
using bits_t = std::conditional_t<
    Size == 1, uint8_t,
    std::conditional_t<Size == 2, uint16_t, std::conditional_t<Size == 4, uint32_t, uint64_t>>>;

/// Calls fn(TypeTag<bits_t<size>>{}) for element sizes 1, 2, 4, 8; false otherwise.
template <class F>
bool dispatch_by_size(size_t size, F&& fn) {
  switch (size) {
    case 1:
      fn(TypeTag<uint8_t>{});
      return true;
    case 2:
      fn(TypeTag<uint16_t>{});
      return true;
    case 4:
      fn(TypeTag<uint32_t>{});
      return true;
    case 8:
      fn(TypeTag<uint64_t>{});
      return true;
    default:
      return false;
  }
}

}  // namespace kiln::cpu

#endif  // KILN_CPU_KERNELS_DTYPE_H
