#pragma once
/// @file cuda_test_util.h
/// Shared by the CUDA plugin's tests: finding the plugin, skipping without a GPU,
/// and reaching its C table and kiln.cuda.debug extension from a test.
///
/// Without a usable CUDA device every GPU test skips with the plugin's own reason
/// (what describe() says, e.g. "cudaGetDeviceCount failed: CUDA driver version is
/// insufficient..."):
///
///   TEST(CudaAllocator, Reuse) {
///     KILN_REQUIRE_CUDA();
///     ...
///   }

#include <gtest/gtest.h>
#include <kiln/kiln.h>

#include <string>

#include "debug_extension.h"
#include "kiln/c_api.h"

namespace kiln::test::cuda {

/// The cuda plugin as loaded_plugins() reports it; `found` false when it did not load.
struct CudaPluginInfo {
  bool found = false;
  PluginInfo info;
};
CudaPluginInfo cuda_plugin();

/// Empty when cuda:0 is usable; otherwise why not (the plugin's description, or why
/// the plugin itself is missing).
std::string why_no_cuda();

/// The plugin's C table, device 0's handle (the one the frontend holds: opening a
/// device twice gives the same handle) and the debug extension, reached by dlopen'ing
/// the already loaded plugin (RTLD_NOLOAD) and calling its entry point again.
struct RawPlugin {
  const kiln_plugin_api* api = nullptr;
  kiln_device* device = nullptr;
  const kiln_cuda_debug_v1* debug = nullptr;
};
/// Fails the calling test (ASSERT) when the plugin cannot be reached.
const RawPlugin& raw_plugin();

/// Device 0's counters, through the debug extension.
kiln_cuda_debug_counters counters();

/// The allocator in force ("caching", "cuda_malloc_async", "direct").
std::string allocator_name();

/// Consumes a status: "" for success, else its message.
std::string take(kiln_status* status);

inline const Device kCuda0("cuda", 0);

}  // namespace kiln::test::cuda

#define KILN_REQUIRE_CUDA()                                                  \
  do {                                                                       \
    const std::string kiln_why_ = ::kiln::test::cuda::why_no_cuda();         \
    if (!kiln_why_.empty()) GTEST_SKIP() << "no CUDA device: " << kiln_why_; \
  } while (0)
