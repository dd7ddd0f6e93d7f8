// plugin_fixture.h — drives libkiln_cpu.so through the C ABI only, as a loader would.
//
// The plugin is dlopen'ed once per process (plugins are never unloaded). The CPU
// plugin's memory is ordinary host memory, so kernel tests build their tensors on
// std::vector storage and describe them with kiln_tensor_view; the allocator has
// tests of its own.
#ifndef KILN_TESTS_PLUGINS_PLUGIN_FIXTURE_H
#define KILN_TESTS_PLUGINS_PLUGIN_FIXTURE_H

#include <gtest/gtest.h>

#include <cstdint>
#include <initializer_list>
#include <string>
#include <vector>

#include "kiln/c_api.h"

namespace kiln::test {

/// The loaded plugin: entry point, initialized table and device cpu:0.
struct CpuPlugin {
  void* library = nullptr;
  kiln_plugin_init_fn init = nullptr;
  const kiln_plugin_api* api = nullptr;
  kiln_device* device = nullptr;

  /// Loads and initializes the plugin on first use; fails the test on error.
  static CpuPlugin& get();
};

/// A host api struct for ABI major.minor whose log callback appends to captured_log().
kiln_host_api make_host_api(uint32_t major, uint32_t minor);

/// Log lines the plugin wrote through make_host_api's callback.
std::vector<std::string>& captured_log();

/// A status taken apart and destroyed: code (0 = OK) and message.
struct Outcome {
  int32_t code = KILN_STATUS_OK;
  std::string message;
  bool ok() const { return code == KILN_STATUS_OK; }
};

/// Consumes (destroys) `status`.
Outcome take(kiln_status* status);

#define KILN_EXPECT_OK(expr)                                              \
  do {                                                                    \
    const ::kiln::test::Outcome kiln_outcome_ = ::kiln::test::take(expr); \
    EXPECT_TRUE(kiln_outcome_.ok()) << kiln_outcome_.message;             \
  } while (0)
#define KILN_ASSERT_OK(expr)                                              \
  do {                                                                    \
    const ::kiln::test::Outcome kiln_outcome_ = ::kiln::test::take(expr); \
    ASSERT_TRUE(kiln_outcome_.ok()) << kiln_outcome_.message;             \
  } while (0)

/// Row-major strides for `shape`.
std::vector<int64_t> contiguous_strides(const std::vector<int64_t>& shape);

/// A tensor view over caller-owned memory; keeps shape/strides alive.
struct View {
  std::vector<int64_t> shape;
  std::vector<int64_t> strides;
  kiln_tensor_view view{};

  View(void* data, kiln_dtype dtype, std::vector<int64_t> shape_,
       std::vector<int64_t> strides_ = {}, int64_t byte_offset = 0);
  View(const View& other);
  View& operator=(const View&) = delete;
};

/// A view of `data` with `shape` (contiguous unless `strides` is given), starting
/// `element_offset` elements in.
template <class T>
View view_of(std::vector<T>& data, kiln_dtype dtype, std::vector<int64_t> shape,
             std::vector<int64_t> strides = {}, int64_t element_offset = 0) {
  return View(data.data(), dtype, std::move(shape), std::move(strides),
              element_offset * static_cast<int64_t>(sizeof(T)));
}

kiln_attr float_attr(const char* name, double value);
kiln_attr int_attr(const char* name, int64_t value);
kiln_attr string_attr(const char* name, const char* value);
kiln_attr ints_attr(const char* name, const int64_t* values, int64_t count);
template <size_t N>
kiln_attr ints_attr(const char* name, const int64_t (&values)[N]) {
  return ints_attr(name, values, static_cast<int64_t>(N));
}

/// Looks `name` up (version 1) on cpu:0; `run` is NULL when the plugin lacks it.
kiln_kernel get_kernel(const char* name, int32_t version = 1);

/// Runs op `name` on cpu:0 and returns its outcome.
Outcome run_op(const char* name, std::initializer_list<const View*> inputs,
               std::initializer_list<const View*> outputs,
               std::initializer_list<kiln_attr> attrs = {});

/// What the kernel's `supports` says for these operands (1 when it has none).
int32_t op_supports(const char* name, std::initializer_list<const View*> inputs,
                    std::initializer_list<const View*> outputs,
                    std::initializer_list<kiln_attr> attrs = {});

}  // namespace kiln::test

#endif  // KILN_TESTS_PLUGINS_PLUGIN_FIXTURE_H
