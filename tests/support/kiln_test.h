#pragma once
/// @file kiln_test.h
/// Assertions and tensor builders shared by the Kiln test executables.
///
///   auto x = make_tensor({1, 2, 3, 4}, {2, 2}, kiln::float32, device);
///   EXPECT_TRUE(matches(x.exp(), map_unary(ref_of(x), [](double v) { return std::exp(v); }),
///                       kFloat32Tol));
///   EXPECT_KILN_ERROR(x + y, "[2, 2]", "[3]");   // throws kiln::Error naming both shapes

#include <gtest/gtest.h>
#include <kiln/conformance/tensors.h>
#include <kiln/kiln.h>

#include <fcntl.h>
#include <unistd.h>

#include <chrono>
#include <cmath>
#include <cstdlib>
#include <functional>
#include <future>
#include <initializer_list>
#include <limits>
#include <sstream>
#include <string>
#include <vector>

#include "reference.h"

namespace kiln::test {

// -- tolerances and operands ---------------------------------------------------------
// Shared with kiln-conformance (sdk/conformance/include/kiln/conformance/tensors.h),
// which certifies plugins with the same operand layouts and tolerances: a result is
// accepted when |actual - expected| <= atol + rtol * |expected|; NaN must match NaN.
// Operands are built on the CPU plugin and moved to the device as raw bytes, so
// building them runs no kernel of the device under test.

using conformance::kAllLayouts;
using conformance::kBFloat16Tol;
using conformance::kExact;
using conformance::kFloat16Tol;
using conformance::kFloat32Tol;
using conformance::kFloat64Tol;
using conformance::Layout;
using conformance::layout_name;
using conformance::make_layout;
using conformance::make_tensor;
using conformance::Tolerance;
using conformance::tolerance_for;
using conformance::value_close;

inline TensorOptions options(DType dtype, const Device& device) {
  return TensorOptions().dtype(dtype).device(device);
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

/// kiln_error_message(f) for an `f` handed the FIFO at `fifo` where a file belongs:
/// it must refuse the FIFO without waiting for a writer. If it still waits after 10 s,
/// the test fails, and the FIFO's write end is opened and closed until `f` returns.
inline std::string kiln_error_message_without_blocking(const std::string& fifo,
                                                       const std::function<void()>& f) {
  auto message = std::async(std::launch::async, [&] { return kiln_error_message(f); });
  if (message.wait_for(std::chrono::seconds(10)) == std::future_status::timeout) {
    ADD_FAILURE() << "blocked on the FIFO " << fifo << ", waiting for a writer";
    while (message.wait_for(std::chrono::milliseconds(100)) == std::future_status::timeout) {
      int writer = ::open(fifo.c_str(), O_WRONLY | O_NONBLOCK);
      if (writer >= 0) ::close(writer);
    }
  }
  return message.get();
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
