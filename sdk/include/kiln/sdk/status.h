// kiln/sdk/status.h — owned `kiln_status` values and the exception firewall.
//
// Every fallible ABI call returns `kiln_status *` (NULL = success) that the caller
// frees with `status->destroy(status)`. Plugins written in C++ throw internally and
// convert at the boundary; `guard` is that boundary:
//
// @code
//   kiln_status *my_allocate(kiln_device *d, size_t bytes, void **data) {
//     return kiln::sdk::guard("allocate", [&] {
//       KILN_SDK_CHECK(d != nullptr, KILN_STATUS_INVALID_ARGUMENT, "null device");
//       *data = ::operator new(bytes);      // may throw anything
//     });                                   // never lets an exception escape
//   }
// @endcode
//
// Mapping: kiln::sdk::Error → its own code; std::bad_alloc → OUT_OF_MEMORY; any other
// exception → INTERNAL with what() (or "unknown exception").
#ifndef KILN_SDK_STATUS_H
#define KILN_SDK_STATUS_H

#include <new>
#include <sstream>
#include <stdexcept>
#include <string>
#include <string_view>
#include <type_traits>
#include <utility>

#include "kiln/c_api.h"

namespace kiln::sdk {

/// An exception carrying a kiln_status_code; `guard` turns it into a status with that
/// code and what() as the message.
class Error : public std::runtime_error {
 public:
  Error(kiln_status_code code, const std::string& message)
      : std::runtime_error(message), code_(code) {}
  kiln_status_code code() const noexcept { return code_; }

 private:
  kiln_status_code code_;
};

/// Concatenates the arguments as `operator<<` prints them: str_cat("got ", 3, "-D").
template <class... Args>
std::string str_cat(const Args&... args) {
  std::ostringstream out;
  (out << ... << args);
  return out.str();
}

namespace detail {

// The status object and the string it owns, allocated together and freed by destroy.
// The kiln_status handed out is the base subobject, so destroy can cast back.
struct OwnedStatus : kiln_status {
  std::string text;
};

inline void destroy_owned_status(kiln_status* self) { delete static_cast<OwnedStatus*>(self); }

// Returned when even the status cannot be allocated: static, so destroy does nothing.
inline void destroy_static_status(kiln_status*) {}

inline kiln_status* out_of_memory_fallback() {
  static kiln_status status{sizeof(kiln_status), KILN_STATUS_OUT_OF_MEMORY, 0,
                            "out of memory (while reporting an error)", &destroy_static_status};
  return &status;
}

}  // namespace detail

/// Creates an owned status with `code` and a copy of `message`. The caller (usually
/// across the ABI) releases it with `status->destroy(status)`. Never throws: if the
/// status itself cannot be allocated, returns a static OUT_OF_MEMORY status whose
/// destroy is a no-op.
[[nodiscard]] inline kiln_status* make_status(kiln_status_code code, std::string message) noexcept {
  try {
    auto* owned = new detail::OwnedStatus{};
    owned->text = std::move(message);
    owned->struct_size = sizeof(kiln_status);
    owned->code = code;
    owned->reserved = 0;
    owned->message = owned->text.c_str();
    owned->destroy = &detail::destroy_owned_status;
    return owned;
  } catch (...) {
    return detail::out_of_memory_fallback();
  }
}

/// Runs `fn` and converts its outcome into a status: `fn` may return void (success →
/// NULL) or `kiln_status *` (passed through). When `context` is not empty, messages
/// of caught exceptions are prefixed with "<context>: ".
template <class Fn>
[[nodiscard]] kiln_status* guard(std::string_view context, Fn&& fn) noexcept {
  auto with_context = [context](const char* what) {
    std::string message;
    if (!context.empty()) {
      message.append(context);
      message.append(": ");
    }
    message.append(what);
    return message;
  };
  try {
    if constexpr (std::is_void_v<std::invoke_result_t<Fn>>) {
      std::forward<Fn>(fn)();
      return nullptr;
    } else {
      return std::forward<Fn>(fn)();
    }
  } catch (const Error& e) {
    try {
      return make_status(e.code(), with_context(e.what()));
    } catch (...) {
      return detail::out_of_memory_fallback();
    }
  } catch (const std::bad_alloc&) {
    try {
      return make_status(KILN_STATUS_OUT_OF_MEMORY, with_context("out of memory"));
    } catch (...) {
      return detail::out_of_memory_fallback();
    }
  } catch (const std::exception& e) {
    try {
      return make_status(KILN_STATUS_INTERNAL, with_context(e.what()));
    } catch (...) {
      return detail::out_of_memory_fallback();
    }
  } catch (...) {
    try {
      return make_status(KILN_STATUS_INTERNAL, with_context("unknown exception"));
    } catch (...) {
      return detail::out_of_memory_fallback();
    }
  }
}

/// `guard` without a message prefix.
template <class Fn>
[[nodiscard]] kiln_status* guard(Fn&& fn) noexcept {
  return guard(std::string_view{}, std::forward<Fn>(fn));
}

}  // namespace kiln::sdk

/// Throws kiln::sdk::Error(code, str_cat(...)) when `cond` is false. The message
/// arguments are evaluated only on failure, so checks on the hot path stay cheap:
/// @code
///   KILN_SDK_CHECK(n >= 0, KILN_STATUS_INVALID_ARGUMENT, "negative size ", n);
/// @endcode
#define KILN_SDK_CHECK(cond, code, ...)                                    \
  do {                                                                     \
    if (!(cond)) [[unlikely]] {                                            \
      throw ::kiln::sdk::Error((code), ::kiln::sdk::str_cat(__VA_ARGS__)); \
    }                                                                      \
  } while (0)

#endif  // KILN_SDK_STATUS_H
