#pragma once
/// @file dtype.h
/// Element types. The numeric values are the ABI's (kiln_dtype) and never change.

#include <complex>
#include <cstddef>
#include <cstdint>
#include <iosfwd>
#include <string_view>

namespace kiln {

enum class DType : int32_t {
  Float32 = 1,
  Float64 = 2,
  Float16 = 3,
  BFloat16 = 4,
  Int32 = 5,
  Int64 = 6,
  UInt8 = 7,
  Bool = 8,
  Complex64 = 9,    ///< (real, imaginary) float32 pairs: std::complex<float>
  Complex128 = 10,  ///< (real, imaginary) float64 pairs: std::complex<double>
};

inline constexpr DType float32 = DType::Float32;
inline constexpr DType float64 = DType::Float64;
inline constexpr DType float16 = DType::Float16;
inline constexpr DType bfloat16 = DType::BFloat16;
inline constexpr DType int32 = DType::Int32;
inline constexpr DType int64 = DType::Int64;
inline constexpr DType uint8 = DType::UInt8;
inline constexpr DType kbool = DType::Bool;
inline constexpr DType complex64 = DType::Complex64;
inline constexpr DType complex128 = DType::Complex128;

/// Bytes per element.
size_t element_size(DType dtype);
/// "float32", "int64", ... as PyTorch spells them.
std::string_view dtype_name(DType dtype);
/// Parses a name from dtype_name(); throws kiln::Error for anything else.
DType dtype_from_name(std::string_view name);
bool is_floating(DType dtype);  ///< float32, float64, float16, bfloat16
bool is_integral(DType dtype);  ///< int32, int64, uint8 (not bool)
bool is_complex(DType dtype);   ///< complex64, complex128
/// complex64 -> float32, complex128 -> float64; any other dtype is returned as it is.
DType real_dtype(DType dtype);
/// float64 -> complex128, every other dtype -> complex64 (a complex dtype stays itself).
DType complex_dtype(DType dtype);

/// The dtype two operands are computed in (PyTorch's promotion for tensors of
/// equal standing): bool < uint8 < int32 < int64 < bfloat16/float16 < float32 <
/// float64 < complex64 < complex128; float16 with bfloat16 gives float32, and a complex
/// dtype with float64 gives complex128.
DType promote_types(DType a, DType b);

/// The C++ type stored for a dtype: dtype_of<float> == float32, and so on.
template <typename T>
constexpr DType dtype_of();
template <>
constexpr DType dtype_of<float>() {
  return DType::Float32;
}
template <>
constexpr DType dtype_of<double>() {
  return DType::Float64;
}
template <>
constexpr DType dtype_of<int32_t>() {
  return DType::Int32;
}
template <>
constexpr DType dtype_of<int64_t>() {
  return DType::Int64;
}
template <>
constexpr DType dtype_of<uint8_t>() {
  return DType::UInt8;
}
template <>
constexpr DType dtype_of<bool>() {
  return DType::Bool;
}
template <>
constexpr DType dtype_of<std::complex<float>>() {
  return DType::Complex64;
}
template <>
constexpr DType dtype_of<std::complex<double>>() {
  return DType::Complex128;
}

std::ostream& operator<<(std::ostream& out, DType dtype);

}  // namespace kiln
