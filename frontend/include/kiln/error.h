#pragma once
/// @file error.h
/// kiln::Error, the one exception type Kiln throws, and KILN_CHECK, the one way
/// frontend code raises it.
///
/// @code
///   KILN_CHECK(a.dim() == 2, "matmul: expected a 2-D tensor, got ", a.dim(), "-D");
/// @endcode
///
/// Messages say what failed and where, with the actual values. After an Error the
/// process stays usable: no tensor that existed before the failed call changes.

#include <sstream>
#include <stdexcept>
#include <string>
#include <utility>

namespace kiln {

class Error : public std::runtime_error {
 public:
  explicit Error(const std::string& message) : std::runtime_error(message) {}
};

namespace detail {
template <typename... Args>
std::string concat(Args&&... args) {
  std::ostringstream out;
  (out << ... << std::forward<Args>(args));
  return out.str();
}
}  // namespace detail

}  // namespace kiln

/// Throws kiln::Error with the concatenation of the message parts when `cond` is false.
#define KILN_CHECK(cond, ...)                                   \
  do {                                                          \
    if (!(cond)) [[unlikely]]                                   \
      throw ::kiln::Error(::kiln::detail::concat(__VA_ARGS__)); \
  } while (0)

/// Throws kiln::Error unconditionally.
#define KILN_FAIL(...) throw ::kiln::Error(::kiln::detail::concat(__VA_ARGS__))
