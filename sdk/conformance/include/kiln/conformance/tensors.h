#pragma once
/// @file tensors.h
/// Building test operands and comparing results, shared by kiln-conformance (which
/// certifies a plugin against the CPU reference) and Kiln's own test suite
/// (tests/support/kiln_test.h). Not installed: an internal library of both.
///
///   auto x = make_layout(values, {3, 4}, kiln::float32, device, Layout::Transposed);
///   value_close(actual, expected, tolerance_for(kiln::float32));
///
/// Operands are built on the CPU plugin (values converted to the dtype there) and
/// moved to the target device as raw bytes, then viewed there: building an operand
/// runs no kernel of the device under test, so a broken kernel shows up only in the
/// op that uses it.

#include <kiln/kiln.h>

#include <cmath>
#include <cstdint>
#include <utility>
#include <vector>

namespace kiln::conformance {

using Shape = std::vector<int64_t>;

inline int64_t numel_of(const Shape& shape) {
  int64_t n = 1;
  for (int64_t s : shape) n *= s;
  return n;
}

// -- tolerances -------------------------------------------------------------------------
// A value is accepted when |actual - expected| <= atol + rtol * |expected|, with the
// float64 reference computed from exactly the values the operands hold. NaN must match
// NaN and infinities must match exactly.

struct Tolerance {
  double rtol;
  double atol;
  Tolerance scaled(double factor) const { return {rtol * factor, atol * factor}; }
};
/// float32: one rounding of a float64-accurate result is 6e-8 relative; 1e-5 leaves
/// room for a few ulps of libm error and float32 accumulation.
inline constexpr Tolerance kFloat32Tol{1e-5, 1e-6};
/// float64: results are computed in float64 throughout.
inline constexpr Tolerance kFloat64Tol{1e-12, 1e-12};
/// float16 (11-bit significand, 4.9e-4 relative per rounding).
inline constexpr Tolerance kFloat16Tol{2e-3, 1e-3};
/// bfloat16 (8-bit significand, 3.9e-3 relative per rounding).
inline constexpr Tolerance kBFloat16Tol{1.6e-2, 1e-2};
inline constexpr Tolerance kExact{0, 0};

inline Tolerance tolerance_for(DType dtype) {
  switch (dtype) {
    case DType::Float32:
      return kFloat32Tol;
    case DType::Float64:
      return kFloat64Tol;
    case DType::Float16:
      return kFloat16Tol;
    case DType::BFloat16:
      return kBFloat16Tol;
    default:
      return kExact;
  }
}

/// `ulps` units in the last place of `dtype`, relative and nothing absolute: for known
/// answers that must be right to the last few bits, at any magnitude (a float64
/// log1p(1e-10) computed as log(1 + x) is off by 1e-17, 8e-8 relative, which
/// tolerance_for's 1e-12 absolute lets through). Integers: exact.
inline Tolerance ulp_tolerance(DType dtype, double ulps) {
  switch (dtype) {
    case DType::Float32:
      return {ulps * 0x1p-23, 0};
    case DType::Float64:
      return {ulps * 0x1p-52, 0};
    case DType::Float16:
      return {ulps * 0x1p-10, 0};
    case DType::BFloat16:
      return {ulps * 0x1p-7, 0};
    default:
      return kExact;
  }
}

inline bool value_close(double actual, double expected, Tolerance tol) {
  if (std::isnan(expected)) return std::isnan(actual);
  if (std::isinf(expected)) return actual == expected;
  return std::abs(actual - expected) <= tol.atol + tol.rtol * std::abs(expected);
}

// -- building operands ---------------------------------------------------------------------

/// A contiguous tensor of `dtype` holding `values` (converted on the CPU plugin) on
/// `device`; an empty `shape` makes a 0-d tensor.
inline Tensor make_tensor(const std::vector<double>& values, const Shape& shape, DType dtype,
                          const Device& device) {
  const Device cpu("cpu", 0);
  Tensor host = shape.empty()
                    ? scalar_tensor(values.at(0), TensorOptions(DType::Float64).device(cpu))
                    : from_vector<double>(values, IntArrayRef(shape),
                                          TensorOptions(DType::Float64).device(cpu));
  return host.to(dtype).to(device);
}

/// The values a tensor built by make_tensor/make_layout holds, read back as float64
/// (`values` after the round trip through `dtype`), without touching any device but
/// the CPU plugin.
inline std::vector<double> representable(const std::vector<double>& values, DType dtype) {
  if (values.empty()) return values;
  return make_tensor(values, {static_cast<int64_t>(values.size())}, dtype, Device("cpu", 0))
      .to_vector<double>();
}

/// How make_layout lays the same logical values out in memory.
enum class Layout {
  Contiguous,
  Strided,     ///< every other element of a twice-as-long last dimension (stride 2)
  Transposed,  ///< the last two dims swapped in memory (rank >= 2), then transposed back
  Offset,      ///< a contiguous block that starts 3 elements into its storage
};

inline const char* layout_name(Layout layout) {
  switch (layout) {
    case Layout::Contiguous:
      return "contiguous";
    case Layout::Strided:
      return "strided";
    case Layout::Transposed:
      return "transposed";
    case Layout::Offset:
      return "offset";
  }
  return "?";
}

inline constexpr Layout kAllLayouts[] = {Layout::Contiguous, Layout::Strided, Layout::Transposed,
                                         Layout::Offset};

/// A tensor with logical shape `shape` and values `values` (row-major), laid out as
/// `layout`; the filler elements that are not part of the view hold 1e4 (or 99 for
/// integral dtypes, 1 for bool), so reading them by mistake shows up in the result.
inline Tensor make_layout(const std::vector<double>& values, const Shape& shape, DType dtype,
                          const Device& device, Layout layout) {
  const double filler = is_floating(dtype) ? 1e4 : (dtype == DType::Bool ? 1 : 99);
  const int64_t rank = static_cast<int64_t>(shape.size());
  if (layout == Layout::Contiguous || rank == 0) return make_tensor(values, shape, dtype, device);
  if (layout == Layout::Offset) {
    std::vector<double> storage(3, filler);
    storage.insert(storage.end(), values.begin(), values.end());
    auto base = make_tensor(storage, {static_cast<int64_t>(storage.size())}, dtype, device);
    return base.narrow(0, 3, static_cast<int64_t>(values.size())).view(IntArrayRef(shape));
  }
  if (layout == Layout::Transposed && rank >= 2) {
    // Store the values with the last two dims swapped, then view them transposed back.
    const int64_t rows = shape[rank - 2], cols = shape[rank - 1];
    const int64_t batch = rows * cols == 0 ? 0 : numel_of(shape) / (rows * cols);
    std::vector<double> stored(values.size());
    for (int64_t b = 0; b < batch; ++b)
      for (int64_t i = 0; i < rows; ++i)
        for (int64_t j = 0; j < cols; ++j)
          stored[static_cast<size_t>(b * rows * cols + j * rows + i)] =
              values[static_cast<size_t>(b * rows * cols + i * cols + j)];
    Shape swapped = shape;
    std::swap(swapped[rank - 1], swapped[rank - 2]);
    return make_tensor(stored, swapped, dtype, device).transpose(-1, -2);
  }
  // Strided (and Transposed of a 1-D shape): interleave with filler along the last dim.
  Shape wide = shape;
  wide[rank - 1] *= 2;
  std::vector<double> storage(static_cast<size_t>(numel_of(wide)), filler);
  for (size_t i = 0; i < values.size(); ++i) storage[2 * i] = values[i];
  return make_tensor(storage, wide, dtype, device).slice(rank - 1, 0, wide[rank - 1], 2);
}

/// Deterministic pseudo-random values in [lo, hi), float32-representable (so the
/// same numbers are exact in every float dtype that can hold them).
inline std::vector<double> random_values(size_t n, uint32_t seed, double lo = -2, double hi = 2) {
  std::vector<double> out(n);
  uint64_t state = 0x9E3779B97F4A7C15ull ^ (uint64_t{seed} * 0xBF58476D1CE4E5B9ull);
  for (double& v : out) {
    state = state * 6364136223846793005ull + 1442695040888963407ull;
    const double u = static_cast<double>(state >> 40) / static_cast<double>(1ull << 24);
    v = static_cast<double>(static_cast<float>(lo + (hi - lo) * u));
  }
  return out;
}

}  // namespace kiln::conformance
