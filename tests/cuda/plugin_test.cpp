// The CUDA plugin as the loader sees it. These tests run on every machine: without a
// GPU they check that the plugin still loads, says why it has no device, and fails
// cleanly when asked for one.
#include <cstring>
#include <fstream>
#include <sstream>

#include "cuda_test_util.h"
#include "support/kiln_test.h"

namespace kiln::test::cuda {
namespace {

TEST(CudaPlugin, LoadsAndExplainsItsDevices) {
  const CudaPluginInfo p = cuda_plugin();
  ASSERT_TRUE(p.found) << why_no_cuda();
  EXPECT_EQ(p.info.abi_major, static_cast<uint32_t>(KILN_ABI_MAJOR));
  EXPECT_FALSE(p.info.description.empty());
  for (const PluginLoadFailure& f : plugin_load_failures()) {
    EXPECT_EQ(f.path.find("libkiln_cuda"), std::string::npos) << f.path << ": " << f.reason;
  }
  if (p.info.devices.empty()) {
    // No driver or no GPU: zero devices, and the runtime's reason in the description.
    EXPECT_NE(p.info.description.find("no usable CUDA device: "), std::string::npos)
        << p.info.description;
    EXPECT_GT(p.info.description.size(), std::strlen("no usable CUDA device: ") + 10)
        << p.info.description;
    return;
  }
  for (const DeviceInfo& d : p.info.devices) {
    EXPECT_EQ(d.device.backend(), "cuda");
    EXPECT_FALSE(d.name.empty());
    EXPECT_EQ(d.kind, "gpu");
    EXPECT_GE(d.compute_capability_major, 9) << d.name;  // the plugin's kernels need sm_90+
    EXPECT_GT(d.multiprocessor_count, 0) << d.name;
    EXPECT_GT(d.total_memory_bytes, uint64_t{1} << 30) << d.name;
  }
}

// Whether a shared object whose file name contains `name` is mapped into this process.
bool mapped(const std::string& name) {
  std::ifstream maps("/proc/self/maps");
  std::stringstream text;
  text << maps.rdbuf();
  return text.str().find("/" + name) != std::string::npos;
}

// cuBLAS, cuBLASLt and cuDNN are not linked into the plugin: a process that loads it
// without using a GPU never maps them (they cost ~0.1 s and ~200 MB when they were);
// the first matmul and convolution on a device open them.
TEST(CudaPlugin, OpensCublasAndCudnnOnlyWhenADeviceNeedsThem) {
  const CudaPluginInfo p = cuda_plugin();
  ASSERT_TRUE(p.found) << why_no_cuda();
  if (!why_no_cuda().empty()) {
    EXPECT_KILN_ERROR(ones({2, 2}, TensorOptions().device(kCuda0)), "cuda:0");
    EXPECT_FALSE(mapped("libcublas")) << "loading the plugin opened cuBLAS";
    EXPECT_FALSE(mapped("libcudnn")) << "loading the plugin opened cuDNN";
    return;
  }
  const TensorOptions on_gpu = TensorOptions().device(kCuda0);
  const Tensor a = ones({64, 64}, on_gpu);
  EXPECT_DOUBLE_EQ(a.matmul(a).sum().item<double>(), 64.0 * 64 * 64);
  EXPECT_TRUE(mapped("libcublas"));
  const Tensor x = ones({1, 1, 4, 4}, on_gpu), w = ones({1, 1, 3, 3}, on_gpu);
  EXPECT_DOUBLE_EQ(nn::functional::conv2d(x, w).sum().item<double>(), 9.0 * 4);
  EXPECT_TRUE(mapped("libcudnn"));
}

TEST(CudaPlugin, AskingForAMissingDeviceIsAnErrorThatSaysWhy) {
  const CudaPluginInfo p = cuda_plugin();
  ASSERT_TRUE(p.found) << why_no_cuda();
  const int64_t count = static_cast<int64_t>(p.info.devices.size());
  // One past the last device: an error naming the device and the plugin's reason or
  // device count, never a crash; the process goes on.
  const Device missing("cuda", count);
  EXPECT_KILN_ERROR(zeros({2}, TensorOptions().device(missing)), missing.str(), "out of range");
  EXPECT_EQ(zeros({2}).sum().item<double>(), 0.0);  // the CPU still works
}

TEST(CudaPlugin, DebugExtensionIsVersioned) {
  const RawPlugin& raw = raw_plugin();
  ASSERT_NE(raw.api, nullptr) << why_no_cuda();
  ASSERT_NE(raw.debug, nullptr);
  EXPECT_GE(raw.debug->struct_size, sizeof(kiln_cuda_debug_v1));
  EXPECT_EQ(raw.debug->version, static_cast<uint32_t>(KILN_CUDA_DEBUG_VERSION));
  // The CTest registrations set (or unset) these variables for each run.
  const char* allocator = std::getenv("KILN_CUDA_ALLOCATOR");
  EXPECT_STREQ(raw.debug->allocator_name(), allocator != nullptr ? allocator : "caching");
  const char* sync = std::getenv("KILN_CUDA_SYNC");
  EXPECT_EQ(raw.debug->sync_after_ops(), sync != nullptr && std::string(sync) == "1" ? 1 : 0);
  EXPECT_EQ(raw.api->get_extension(raw.api->context, "kiln.cuda.nosuch"), nullptr);
  // A null device is an error status, not a crash.
  kiln_cuda_debug_counters c{};
  c.struct_size = sizeof c;
  EXPECT_NE(take(raw.debug->get_counters(nullptr, &c)).find("null device"), std::string::npos);
}

TEST(CudaPlugin, BadHandlesAreErrors) {
  const RawPlugin& raw = raw_plugin();
  ASSERT_NE(raw.api, nullptr) << why_no_cuda();
  const kiln_plugin_api* api = raw.api;
  kiln_buffer* buffer = nullptr;
  void* data = nullptr;
  EXPECT_NE(take(api->allocate(nullptr, 16, 64, nullptr, &buffer, &data)).find("null device"),
            std::string::npos);
  int32_t count = 0;
  ASSERT_EQ(take(api->device_count(api->context, &count)), "");
  kiln_device* device = nullptr;
  const std::string message = take(api->device_open(api->context, count, &device));
  EXPECT_NE(message.find("out of range"), std::string::npos) << message;
  kiln_kernel kernel{};
  kernel.struct_size = sizeof kernel;
  EXPECT_NE(take(api->get_kernel(nullptr, "kiln.add", 1, &kernel)), "");
}

}  // namespace
}  // namespace kiln::test::cuda
