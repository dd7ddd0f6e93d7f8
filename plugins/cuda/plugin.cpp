// The CUDA backend's entry point and its kiln_plugin_api table.
//
// Loading never needs a GPU: kiln_plugin_init reads the environment and asks the
// runtime how many GPUs there are (without creating a context). No driver or no GPU
// is zero devices, with the runtime's reason in describe() (kiln-info prints it); the
// process goes on with the other plugins. Contexts, streams and memory are created
// per device at device_open.
//
// Environment: see plugin_state.h (KILN_CUDA_ALLOCATOR, KILN_CUDA_SYNC); the CUDA
// runtime's CUDA_VISIBLE_DEVICES applies as usual.
#include <algorithm>
#include <cstdio>
#include <cstring>

#include "allocator.h"
#include "copies.h"
#include "debug_extension.h"
#include "device.h"
#include "dispatch.h"
#include "kernels/registry.h"
#include "kiln/c_api.h"
#include "kiln/sdk/status.h"
#include "kiln/sdk/versioned.h"
#include "logging.h"
#include "plugin_state.h"
#include "streams.h"

namespace kiln::cuda {

namespace {

constexpr const char* kPluginName = "cuda";
constexpr const char* kPluginVersion = "0.1.0";

const char* describe(void*) { return plugin_state().description.c_str(); }

Device& device_at(int32_t index) {
  const auto& devices = plugin_state().devices;
  KILN_SDK_CHECK(index >= 0 && static_cast<size_t>(index) < devices.size(),
                 KILN_STATUS_INVALID_ARGUMENT, "device index ", index,
                 " is out of range: ", devices.size(),
                 devices.size() == 1 ? " CUDA device" : " CUDA devices", " (",
                 plugin_state().description, ")");
  return *devices[static_cast<size_t>(index)];
}

kiln_status* device_count(void*, int32_t* count) {
  return sdk::guard("device_count", [&] {
    KILN_SDK_CHECK(count != nullptr, KILN_STATUS_INVALID_ARGUMENT, "null output pointer");
    *count = static_cast<int32_t>(plugin_state().devices.size());
  });
}

kiln_status* device_get_properties(void*, int32_t index, kiln_device_properties* properties) {
  return sdk::guard("device_get_properties", [&] {
    KILN_SDK_CHECK(properties != nullptr, KILN_STATUS_INVALID_ARGUMENT, "null output pointer");
    Device& d = device_at(index);
    const cudaDeviceProp& prop = d.properties();
    kiln_device_properties full{};
    full.struct_size = sizeof full;
    std::snprintf(full.name, sizeof full.name, "%.127s", prop.name);  // 256 bytes in CUDA
    full.kind = KILN_DEVICE_KIND_GPU;
    full.compute_capability_major = prop.major;
    full.compute_capability_minor = prop.minor;
    full.multiprocessor_count = prop.multiProcessorCount;
    full.total_memory_bytes = prop.totalGlobalMem;
    // Free memory needs a context; creating one (hundreds of MB, ~0.1 s) just to list
    // the devices would make every kiln-info pay for it. Unknown (0) until opened.
    if (d.is_open()) {
      size_t free_bytes = 0;
      size_t total_bytes = 0;
      d.make_current();
      if (cudaMemGetInfo(&free_bytes, &total_bytes) == cudaSuccess) {
        full.free_memory_bytes = free_bytes;
      } else {
        cudaGetLastError();
      }
    }
    full.memory_alignment = Device::kAlignment;
    sdk::write_sized(properties, full);
  });
}

kiln_status* device_open(void*, int32_t index, kiln_device** device) {
  return sdk::guard("device_open", [&] {
    KILN_SDK_CHECK(device != nullptr, KILN_STATUS_INVALID_ARGUMENT, "null output pointer");
    Device& d = device_at(index);
    d.open();
    *device = to_handle(&d);
  });
}

kiln_status* allocate(kiln_device* device, size_t bytes, size_t alignment, kiln_stream* stream,
                      kiln_buffer** buffer, void** data) {
  // No message prefix on the hot path: the allocators' errors name the device.
  return sdk::guard([&] {
    Device& d = from_handle(device);
    KILN_SDK_CHECK(buffer != nullptr && data != nullptr, KILN_STATUS_INVALID_ARGUMENT,
                   "allocate: null output pointer");
    Allocation* a = d.allocator().allocate(bytes, alignment, stream_of(d, stream));
    *buffer = reinterpret_cast<kiln_buffer*>(a);
    *data = a->data;
  });
}

kiln_status* deallocate(kiln_device* device, kiln_buffer* buffer, kiln_stream* stream) {
  return sdk::guard("deallocate", [&] {
    Device& d = from_handle(device);
    Allocation* a = checked_allocation(buffer, d.allocator());
    d.allocator().deallocate(a, stream_of(d, stream));
  });
}

kiln_status* memory_stats(kiln_device* device, kiln_memory_stats* stats) {
  return sdk::guard("memory_stats", [&] {
    KILN_SDK_CHECK(stats != nullptr, KILN_STATUS_INVALID_ARGUMENT, "null output pointer");
    sdk::write_sized(stats, from_handle(device).allocator().stats());
  });
}

kiln_status* empty_cache(kiln_device* device) {
  return sdk::guard("empty_cache", [&] { from_handle(device).allocator().empty_cache(); });
}

kiln_status* get_kernel(kiln_device* device, const char* name, int32_t version,
                        kiln_kernel* kernel) {
  return sdk::guard("get_kernel",
                    [&] { lookup_kernel(from_handle(device), name, version, kernel); });
}

// -- the kiln.cuda.debug extension ---------------------------------------------------------

kiln_status* debug_get_counters(kiln_device* device, kiln_cuda_debug_counters* counters) {
  return sdk::guard("kiln.cuda.debug get_counters", [&] {
    KILN_SDK_CHECK(counters != nullptr, KILN_STATUS_INVALID_ARGUMENT, "null output pointer");
    const Device::Counters c = from_handle(device).counters();
    kiln_cuda_debug_counters full{};
    full.struct_size = sizeof full;
    full.host_synchronizations = c.host_synchronizations;
    full.op_calls = c.op_calls;
    full.error_flag_readbacks = c.error_flag_readbacks;
    sdk::write_sized(counters, full);
  });
}

const char* debug_allocator_name() { return allocator_name(plugin_state().config.allocator); }

int32_t debug_sync_after_ops() { return plugin_state().config.sync_after_ops ? 1 : 0; }

const kiln_cuda_debug_v1 kDebugExtension = {
    sizeof(kiln_cuda_debug_v1), KILN_CUDA_DEBUG_VERSION, 0,
    &debug_get_counters,        &debug_allocator_name,   &debug_sync_after_ops,
};

const void* get_extension(void*, const char* name) {
  if (name != nullptr && std::strcmp(name, KILN_CUDA_DEBUG_EXTENSION) == 0) return &kDebugExtension;
  return nullptr;
}

const kiln_plugin_api kApi = {
    sizeof(kiln_plugin_api),
    KILN_ABI_MAJOR,
    KILN_ABI_MINOR,
    kPluginName,
    kPluginVersion,
    nullptr,
    &describe,
    &device_count,
    &device_get_properties,
    &device_open,
    &allocate,
    &deallocate,
    &memory_stats,
    &empty_cache,
    &copy,
    &stream_create,
    &stream_destroy,
    &stream_synchronize,
    &event_create,
    &event_destroy,
    &event_record,
    &stream_wait_event,
    &event_synchronize,
    &get_kernel,
    &get_extension,
    nullptr,  // copy_peer: not yet (cudaMemcpyPeerAsync needs a multi-GPU machine to verify);
              // the frontend stages cuda:i -> cuda:j through the host meanwhile
    &event_elapsed,
    &range_push,
    &range_pop,
};

kiln_status* init(const kiln_host_api* host, const kiln_plugin_api** api) {
  sdk::check_host_abi(host, api, "the cuda plugin");
  attach_log(host);
  // Built now so that a broken table (two kernels for one op) fails the load with a
  // message instead of surfacing as a wrong kernel later.
  kernel_table();
  const PluginState& state = init_plugin_state();
  log(KILN_LOG_DEBUG, "initialized: " + state.description);
  *api = &kApi;
  return nullptr;
}

}  // namespace

}  // namespace kiln::cuda

extern "C" KILN_PLUGIN_EXPORT kiln_status* kiln_plugin_init(const kiln_host_api* host,
                                                            const kiln_plugin_api** api) {
  return kiln::sdk::guard("cuda plugin", [&] { return kiln::cuda::init(host, api); });
}
