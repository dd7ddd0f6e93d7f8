// kiln/sdk/dtype_visit.h — C++ types for Kiln dtypes and the dtype switch (visit_dtype),
// shared by every plugin's kernels (host and, through KILN_HOST_DEVICE, device code).
//
// Storage types: float, double, sdk::float16, sdk::bfloat16, int32_t, int64_t,
// uint8_t and bool (one byte holding 0 or 1, as the ABI promises). Half types are
// computed in float32: `compute_t<T>` is float for them and T otherwise.
//
// visit_dtype turns a runtime dtype into a template instantiation, restricted to the
// type set an op supports so no unused instantiation is compiled:
// @code
//   bool handled = kiln::sdk::visit_dtype<kiln::sdk::FloatTypes, kiln::sdk::IntTypes>(
//       dtype, [&](auto tag) {
//         using T = typename decltype(tag)::type;
//         (void)sizeof(T);  // ... the kernel for T ...
//       });  // false: dtype not in the set
// @endcode
#ifndef KILN_SDK_DTYPE_VISIT_H
#define KILN_SDK_DTYPE_VISIT_H

#include <cstddef>
#include <cstdint>
#include <type_traits>

#include "kiln/c_api.h"
#include "kiln/sdk/half.h"
#include "kiln/sdk/host_device.h"

/// Everything below is in kiln::sdk and, for `using namespace kiln::sdk::dtypes;` in a
/// plugin's kernel namespace, in kiln::sdk::dtypes.
namespace kiln::sdk {
inline namespace dtypes {

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
using AllTypes = TypeList<float, double, float16, bfloat16, int32_t, int64_t, uint8_t, bool>;

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

/// The value of `v` as computations on T see it (float for half types).
template <class T>
KILN_HOST_DEVICE inline compute_t<T> load(T v) {
  return static_cast<compute_t<T>>(v);
}

/// True for NaN; constant false for types without NaN.
template <class T>
KILN_HOST_DEVICE inline bool is_nan(T v) {
  if constexpr (std::is_floating_point_v<T>)
    return v != v;
  else
    return false;
}

/// Calls fn(TypeTag<T>{}) for the T of `dtype` if it is one of Ts; returns whether it
/// did.
template <class... Ts, class F>
bool visit_dtype_list(kiln_dtype dtype, TypeList<Ts...>, F&& fn) {
  bool handled = false;
  ((dtype == dtype_of<Ts>() ? (fn(TypeTag<Ts>{}), handled = true) : false), ...);
  return handled;
}

/// Calls fn(TypeTag<T>{}) for the T of `dtype` if it is in one of the lists; returns
/// whether it did.
template <class... Lists, class F>
bool visit_dtype(kiln_dtype dtype, F&& fn) {
  return (visit_dtype_list(dtype, Lists{}, fn) || ...);
}

/// Calls fn(TypeTag<T>{}) for the T of `dtype` when `dtype` is in `Mask`, a
/// KILN_DTYPES_* mask of kiln/op_catalogue.h (a catalogue op's dtype class); returns
/// whether it did. Only the mask's types are instantiated.
template <uint32_t Mask, class F>
bool visit_dtype_in(kiln_dtype dtype, F&& fn) {
  bool handled = false;
  visit_dtype<AllTypes>(dtype, [&](auto tag) {
    using T = typename decltype(tag)::type;
    if constexpr (((Mask >> static_cast<uint32_t>(dtype_of<T>())) & 1u) != 0) {
      fn(tag);
      handled = true;
    }
  });
  return handled;
}

/// Unsigned type of one element's size, for kernels that only move bytes.
template <size_t Size>
using bits_t = std::conditional_t<
    Size == 1, uint8_t,
    std::conditional_t<Size == 2, uint16_t, std::conditional_t<Size == 4, uint32_t, uint64_t>>>;

/// Calls fn(TypeTag<bits_t<size>>{}) for element sizes 1, 2, 4, 8; false otherwise.
template <class F>
bool visit_by_size(size_t size, F&& fn) {
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

}  // namespace dtypes
}  // namespace kiln::sdk

#endif  // KILN_SDK_DTYPE_VISIT_H
