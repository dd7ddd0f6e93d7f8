#include "device.h"

#include <cblas.h>

#include <algorithm>
#include <cstring>
#include <mutex>
#include <thread>

#include "kernels/blas.h"
#include "kiln/sdk/status.h"
#include "kiln/sdk/versioned.h"
#include "logging.h"
#include "system_info.h"
#include "thread_pool.h"

namespace kiln::cpu {

namespace {

constexpr int kMaxDevices = 64;
constexpr int kMaxThreads = 1024;

PluginState* global_state = nullptr;
std::once_flag global_state_once;

void build_state() {
  auto state = std::make_unique<PluginState>();
  std::string error;

  // KILN_CPU_DEVICES: an invalid value must not take the process (or the other
  // backends) down, so it degrades to one device with a warning.
  int num_devices = 1;
  if (auto n = int_from_env("KILN_CPU_DEVICES", 1, kMaxDevices, &error)) {
    num_devices = *n;
  } else if (!error.empty()) {
    log(KILN_LOG_WARNING, error + "; using 1 CPU device");
    error.clear();
  }

  const unsigned hardware = std::max(1u, std::thread::hardware_concurrency());
  int threads = static_cast<int>(std::min<unsigned>(hardware, kMaxThreads));
  if (auto n = int_from_env("KILN_NUM_THREADS", 1, kMaxThreads, &error)) {
    threads = *n;
  } else if (!error.empty()) {
    log(KILN_LOG_WARNING, error + "; using " + std::to_string(threads) + " threads");
  }
  init_pool(threads);
  // Kiln's own GEMMs run OpenBLAS serially on the pool's threads (kernels/blas.h);
  // this count is what other BLAS callers in the process get outside Kiln's ops.
  openblas_set_num_threads(threads);

  state->threads = threads;
  state->total_memory = total_memory_bytes();
  state->device_name = std::string("CPU (") + cpu_model_name() + ")";
  state->description = blas_description() + ", " + std::to_string(threads) +
                       (threads == 1 ? " thread; " : " threads; ") + std::to_string(num_devices) +
                       (num_devices == 1 ? " logical device" : " logical devices");
  // No single host allocation can exceed physical memory; an unknown size means no cap.
  const uint64_t limit = state->total_memory != 0 ? state->total_memory : UINT64_MAX;
  for (int i = 0; i < num_devices; ++i) {
    state->devices.push_back(std::make_unique<Device>(i, limit));
  }
  global_state = state.release();  // lives as long as the process, like the plugin
}

}  // namespace

Device& from_handle(kiln_device* device) {
  KILN_SDK_CHECK(device != nullptr, KILN_STATUS_INVALID_ARGUMENT, "null device handle");
  return *reinterpret_cast<Device*>(device);
}

const PluginState& init_plugin_state() {
  std::call_once(global_state_once, build_state);
  return *global_state;
}

const PluginState& plugin_state() { return *global_state; }

void fill_properties(const PluginState& state, kiln_device_properties* properties) {
  kiln_device_properties full{};
  full.struct_size = properties->struct_size;
  std::snprintf(full.name, sizeof full.name, "%s", state.device_name.c_str());
  full.kind = KILN_DEVICE_KIND_CPU;
  full.multiprocessor_count = state.threads;
  full.total_memory_bytes = state.total_memory;
  full.free_memory_bytes = available_memory_bytes();
  full.memory_alignment = HostAllocator::kAlignment;
  full.flags = KILN_DEVICE_FLAG_HOST_ACCESSIBLE;
  sdk::write_sized(properties, full);
}

namespace {

kiln_status* set_num_threads(void*, int32_t num_threads) {
  return sdk::guard("set_num_threads", [&] {
    KILN_SDK_CHECK(num_threads >= 1 && num_threads <= kMaxThreads, KILN_STATUS_INVALID_ARGUMENT,
                   "the thread count must be between 1 and ", kMaxThreads, ", got ", num_threads);
    pool().resize(num_threads);
    set_blas_threads(num_threads);
  });
}

int32_t get_num_threads(void*) { return pool().size(); }

}  // namespace

const kiln_threads_api* threads_api() {
  static constexpr kiln_threads_api api = {sizeof(kiln_threads_api), &set_num_threads,
                                           &get_num_threads};
  return &api;
}

}  // namespace kiln::cpu
