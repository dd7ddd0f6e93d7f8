#pragma once
/// @file kiln_test.h
/// Assertions and tensor builders shared by the Kiln test executables.
///
///   auto x = make_tensor({1, 2, 3, 4}, {2, 2}, kiln::float32, device);
///   EXPECT_TRUE(matches(x.exp(), map_unary(ref_of(x), [](double v) { return std::exp(v); }),
///                       kFloat32Tol));
///   EXPECT_KILN_ERROR(x + y, "[2, 2]", "[3]");   // throws kiln::Error naming both shapes

#include <gtest/gtest.h>
#include <kiln/kiln.h>

#include <cmath>
#include <cstdlib>
#include <functional>
#include <initializer_list>
#include <limits>
#include <sstream>
#include <string>
#include <vector>

#include "reference.h"

namespace kiln::test {

// -- tolerances -----------------------------------------------------------------------
// A result is accepted when |actual - expected| <= atol + rtol * |expected|, with the
// float64 reference computed from exactly the values the tensor holds. NaN must match
// NaN, infinities must match exactly.

struct Tolerance {
  double rtol;
  double atol;
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

// -- building tensors ---------------------------------------------------------------------

inline TensorOptions options(DType dtype, const Device& device) {
  return TensorOptions().dtype(dtype).device(device);
}

/// A contiguous tensor holding `values` (converted to `dtype`) on `device`; an empty
/// `shape` makes a 0-d tensor (from_vector itself reads an empty shape as 1-D).
inline Tensor make_tensor(const std::vector<double>& values, const Shape& shape, DType dtype,
                          const Device& device) {
  if (shape.empty()) return scalar_tensor(values.at(0), options(dtype, device));
  return from_vector<double>(values, IntArrayRef(shape), options(dtype, device));
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
/// integral dtypes), so reading them by mistake shows up in the result.
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
    Shape swapped = shape;
    std::swap(swapped[rank - 1], swapped[rank - 2]);
    Ref logical(shape, values);
    Shape perm(static_cast<size_t>(rank));
    for (int64_t d = 0; d < rank; ++d) perm[d] = d;
    std::swap(perm[rank - 1], perm[rank - 2]);
    Ref stored = ref_permute(logical, perm);
    return make_tensor(stored.values, swapped, dtype, device).transpose(-1, -2);
  }
  // Strided (and Transposed of a 1-D shape): interleave with filler along the last dim.
  Shape wide = shape;
  wide[rank - 1] *= 2;
  std::vector<double> storage(static_cast<size_t>(numel_of(wide)), filler);
  for (size_t i = 0; i < values.size(); ++i) storage[2 * i] = values[i];
  return make_tensor(storage, wide, dtype, device).slice(rank - 1, 0, wide[rank - 1], 2);
}

/// The tensor's shape and values as a float64 reference array (a host read).
inline Ref ref_of(const Tensor& t) { return Ref(t.shape().vec(), t.to_vector<double>()); }

inline std::string shape_str(const Shape& shape) {
  std::ostringstream out;
  out << "[";
  for (size_t i = 0; i < shape.size(); ++i) out << (i ? ", " : "") << shape[i];
  out << "]";
  return out.str();
}

// -- comparing ----------------------------------------------------------------------------

inline bool value_close(double actual, double expected, Tolerance tol) {
  if (std::isnan(expected)) return std::isnan(actual);
  if (std::isinf(expected)) return actual == expected;
  return std::abs(actual - expected) <= tol.atol + tol.rtol * std::abs(expected);
}

/// Shape equal and every value within `tol` of the reference.
inline ::testing::AssertionResult matches(const Tensor& actual, const Ref& expected,
                                          Tolerance tol) {
  if (!actual.defined()) return ::testing::AssertionFailure() << "tensor is undefined";
  const Shape shape = actual.shape().vec();
  if (shape != expected.shape)
    return ::testing::AssertionFailure()
           << "shape " << shape_str(shape) << ", expected " << shape_str(expected.shape);
  const std::vector<double> values = actual.to_vector<double>();
  if (values.size() != expected.values.size())
    return ::testing::AssertionFailure() << "to_vector gave " << values.size() << " values for "
                                         << expected.values.size() << " elements";
  int bad = 0;
  std::ostringstream detail;
  for (size_t i = 0; i < values.size(); ++i) {
    if (!value_close(values[i], expected.values[i], tol)) {
      if (bad < 5)
        detail << "\n  element " << i << ": got " << values[i] << ", expected "
               << expected.values[i];
      ++bad;
    }
  }
  if (bad)
    return ::testing::AssertionFailure()
           << bad << " of " << values.size() << " elements differ (rtol " << tol.rtol << ", atol "
           << tol.atol << ")" << detail.str();
  return ::testing::AssertionSuccess();
}

inline ::testing::AssertionResult matches(const Tensor& actual, const Shape& shape,
                                          const std::vector<double>& values,
                                          Tolerance tol = kExact) {
  return matches(actual, Ref(shape, values), tol);
}

// -- errors ---------------------------------------------------------------------------------

/// Runs `f`, which must throw kiln::Error whose message contains every substring.
inline ::testing::AssertionResult throws_kiln_error(const char* statement,
                                                    const std::function<void()>& f,
                                                    std::initializer_list<std::string> substrings) {
  try {
    f();
  } catch (const kiln::Error& e) {
    const std::string message = e.what();
    for (const std::string& s : substrings)
      if (message.find(s) == std::string::npos)
        return ::testing::AssertionFailure() << statement << " threw kiln::Error \"" << message
                                             << "\", which does not contain \"" << s << "\"";
    return ::testing::AssertionSuccess();
  } catch (const std::exception& e) {
    return ::testing::AssertionFailure()
           << statement << " threw a std::exception that is not a kiln::Error: " << e.what();
  } catch (...) {
    return ::testing::AssertionFailure()
           << statement << " threw something that is not a std::exception";
  }
  return ::testing::AssertionFailure() << statement << " did not throw";
}

/// The message of the kiln::Error that `f` throws, or "" (and a test failure) if none.
inline std::string kiln_error_message(const std::function<void()>& f) {
  try {
    f();
  } catch (const kiln::Error& e) {
    return e.what();
  } catch (const std::exception& e) {
    ADD_FAILURE() << "threw a std::exception that is not a kiln::Error: " << e.what();
    return "";
  }
  ADD_FAILURE() << "did not throw";
  return "";
}

inline bool contains(const std::string& haystack, const std::string& needle) {
  return haystack.find(needle) != std::string::npos;
}

/// Case-insensitive: does `haystack` contain any of `needles`?
inline bool contains_any(const std::string& haystack, std::initializer_list<std::string> needles) {
  auto lower = [](std::string s) {
    for (char& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    return s;
  };
  const std::string h = lower(haystack);
  for (const std::string& n : needles)
    if (h.find(lower(n)) != std::string::npos) return true;
  return false;
}

inline std::string env_or(const char* name, const std::string& fallback = "") {
  const char* v = std::getenv(name);
  return v ? std::string(v) : fallback;
}

}  // namespace kiln::test

/// EXPECT_KILN_ERROR(statement, "substring", ...): the statement throws kiln::Error and
/// its message contains every substring.
#define EXPECT_KILN_ERROR(statement, ...) \
  EXPECT_TRUE(                            \
      ::kiln::test::throws_kiln_error(#statement, [&] { (void)(statement); }, {__VA_ARGS__}))
