#include "plugin_state.h"

#include <cuda_runtime.h>

#include <cstdlib>
#include <cstring>
#include <mutex>

#include "device.h"
#include "kiln/sdk/status.h"

#ifndef KILN_CUDA_MIN_ARCH
#define KILN_CUDA_MIN_ARCH 90  // the oldest architecture the kernels are built for
#endif

namespace kiln::cuda {

namespace {

PluginState* global_state = nullptr;
std::once_flag global_state_once;

std::string env_or_empty(const char* name) {
  const char* value = std::getenv(name);
  return value != nullptr ? value : "";
}

Config read_config() {
  Config config;
  const std::string allocator = env_or_empty("KILN_CUDA_ALLOCATOR");
  if (allocator.empty() || allocator == "caching") {
    config.allocator = AllocatorKind::Caching;
  } else if (allocator == "cuda_malloc_async") {
    config.allocator = AllocatorKind::MallocAsync;
  } else if (allocator == "direct") {
    config.allocator = AllocatorKind::Direct;
  } else {
    sdk::log(KILN_LOG_WARNING, "KILN_CUDA_ALLOCATOR='" + allocator +
                                   "' is not caching, cuda_malloc_async or direct; using caching");
  }
  const std::string sync = env_or_empty("KILN_CUDA_SYNC");
  if (sync == "1") {
    config.sync_after_ops = true;
  } else if (!sync.empty() && sync != "0") {
    sdk::log(KILN_LOG_WARNING,
             "KILN_CUDA_SYNC='" + sync + "' is not 0 or 1; ops stay asynchronous");
  }
  return config;
}

// "13.0" from CUDA's 1000 * major + 10 * minor encoding.
std::string version_string(int version) {
  return std::to_string(version / 1000) + "." + std::to_string(version % 1000 / 10);
}

void build_state() {
  auto state = std::make_unique<PluginState>();
  state->config = read_config();

  int runtime_version = 0;
  int driver_version = 0;
  cudaRuntimeGetVersion(&runtime_version);
  if (cudaDriverGetVersion(&driver_version) != cudaSuccess) driver_version = 0;
  const std::string versions =
      "CUDA runtime " + version_string(runtime_version) + ", driver " +
      (driver_version > 0 ? version_string(driver_version) : std::string("not installed"));

  // Never creates a context: cudaGetDeviceCount and cudaGetDeviceProperties only ask
  // the driver, so loading the plugin costs no GPU memory and no context start-up.
  int count = 0;
  std::string reason;
  std::string skipped;
  if (const cudaError_t status = cudaGetDeviceCount(&count); status != cudaSuccess) {
    cudaGetLastError();  // do not leave the failure for the next caller to find
    reason = sdk::str_cat("cudaGetDeviceCount failed: ", cudaGetErrorString(status), " (",
                          cudaGetErrorName(status), ")");
    count = 0;
  } else if (count == 0) {
    reason = "the CUDA runtime sees no GPU (check CUDA_VISIBLE_DEVICES)";
  }
  std::string names;
  for (int ordinal = 0; ordinal < count; ++ordinal) {
    cudaDeviceProp prop{};
    if (const cudaError_t status = cudaGetDeviceProperties(&prop, ordinal); status != cudaSuccess) {
      cudaGetLastError();
      skipped += sdk::str_cat("; CUDA device ", ordinal, " skipped: ", cudaGetErrorString(status));
      continue;
    }
    const int arch = prop.major * 10 + prop.minor;
    if (arch < KILN_CUDA_MIN_ARCH) {
      skipped +=
          sdk::str_cat("; CUDA device ", ordinal, " (", prop.name, ", sm_", arch,
                       ") skipped: the plugin is built for sm_", KILN_CUDA_MIN_ARCH, " and newer");
      continue;
    }
    const auto index = static_cast<int32_t>(state->devices.size());
    state->devices.push_back(std::make_unique<CudaDevice>(index, ordinal, prop, state->config));
    names += sdk::str_cat(names.empty() ? "" : ", ", "cuda:", index, " = ", prop.name, " (sm_",
                          arch, ")");
  }

  const size_t n = state->devices.size();
  std::string text;
  if (n == 0) {
    text = "no usable CUDA device: " +
           (reason.empty() ? std::string("every GPU was skipped") : reason);
  } else {
    text = sdk::str_cat(n, n == 1 ? " device: " : " devices: ", names);
  }
  text += skipped + "; " + versions + "; allocator " + allocator_name(state->config.allocator) +
          (state->config.sync_after_ops ? "; KILN_CUDA_SYNC=1 (synchronous ops)" : "");
  state->description = std::move(text);
  global_state = state.release();  // lives as long as the process, like the plugin
}

}  // namespace

const char* allocator_name(AllocatorKind kind) {
  switch (kind) {
    case AllocatorKind::Caching:
      return "caching";
    case AllocatorKind::MallocAsync:
      return "cuda_malloc_async";
    case AllocatorKind::Direct:
      return "direct";
  }
  return "unknown";
}

const PluginState& init_plugin_state() {
  std::call_once(global_state_once, build_state);
  return *global_state;
}

const PluginState& plugin_state() { return *global_state; }

}  // namespace kiln::cuda
