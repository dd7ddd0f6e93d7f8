// The CPU backend's entry point and its kiln_plugin_api table.
//
// Environment (read once, at the first kiln_plugin_init):
//   KILN_CPU_DEVICES  logical devices cpu:0..N-1 (1..64, default 1). An invalid value
//                     logs a warning through the host's log and falls back to 1:
//                     a typo must not take away the backend every other one falls
//                     back to.
//   KILN_NUM_THREADS  threads for kernels and OpenBLAS (1..1024, default: all
//                     hardware threads); invalid values warn and use the default.
//                     The "kiln.threads.v1" extension changes it at run time.
#include <cstring>

#include "collectives.h"
#include "device.h"
#include "kernels/registry.h"
#include "kiln/c_api.h"
#include "kiln/sdk/status.h"
#include "kiln/sdk/versioned.h"
#include "logging.h"
#include "streams.h"

namespace kiln::cpu {

namespace {

constexpr const char* kPluginName = "cpu";
constexpr const char* kPluginVersion = "0.1.0";

const char* describe(void*) { return plugin_state().description.c_str(); }

Device& device_at(int32_t index) {
  const auto& devices = plugin_state().devices;
  KILN_SDK_CHECK(
      index >= 0 && static_cast<size_t>(index) < devices.size(), KILN_STATUS_INVALID_ARGUMENT,
      "device index ", index, " is out of range: ", devices.size(),
      devices.size() == 1 ? " CPU device" : " CPU devices", " (set KILN_CPU_DEVICES for more)");
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
    device_at(index);
    fill_properties(plugin_state(), properties);
  });
}

kiln_status* device_open(void*, int32_t index, kiln_device** device) {
  return sdk::guard("device_open", [&] {
    KILN_SDK_CHECK(device != nullptr, KILN_STATUS_INVALID_ARGUMENT, "null output pointer");
    *device = to_handle(&device_at(index));
  });
}

kiln_status* allocate(kiln_device* device, size_t bytes, size_t alignment, kiln_stream*,
                      kiln_buffer** buffer, void** data) {
  // Not guard(): the message prefix would cost a string on every call; the allocator
  // throws only on the slow paths, and the catch below adds the context then.
  try {
    Device& d = from_handle(device);
    KILN_SDK_CHECK(buffer != nullptr && data != nullptr, KILN_STATUS_INVALID_ARGUMENT,
                   "null output pointer");
    HostBlock* block = d.allocator().allocate(bytes, alignment);
    *buffer = reinterpret_cast<kiln_buffer*>(block);
    *data = block->data;
    return nullptr;
  } catch (...) {
    std::string context = "allocate";
    if (device != nullptr) context += " on " + reinterpret_cast<Device*>(device)->label();
    return sdk::guard(context, [] { throw; });
  }
}

kiln_status* deallocate(kiln_device* device, kiln_buffer* buffer, kiln_stream*) {
  return sdk::guard("deallocate", [&] {
    from_handle(device).allocator().deallocate(reinterpret_cast<HostBlock*>(buffer));
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

// All three kinds are host memory here: a plain memcpy, finished on return.
kiln_status* copy(kiln_device* device, kiln_stream*, int32_t kind, void* dst, const void* src,
                  size_t bytes) {
  if (device == nullptr || kind < KILN_COPY_HOST_TO_DEVICE || kind > KILN_COPY_DEVICE_TO_DEVICE ||
      (bytes != 0 && (dst == nullptr || src == nullptr))) {
    return sdk::make_status(KILN_STATUS_INVALID_ARGUMENT,
                            sdk::str_cat("copy: bad arguments (device ", device, ", kind ", kind,
                                         ", dst ", dst, ", src ", src, ", ", bytes, " bytes)"));
  }
  if (bytes != 0 && dst != src) std::memmove(dst, src, bytes);
  return nullptr;
}

kiln_status* get_kernel(kiln_device* device, const char* name, int32_t version,
                        kiln_kernel* kernel) {
  return sdk::guard("get_kernel", [&] {
    from_handle(device);
    kernel_table().lookup(name, version, kernel);
  });
}

// The logical devices share the host's memory, so a peer copy is a memmove too.
kiln_status* copy_peer(kiln_device* dst_device, kiln_stream*, void* dst, kiln_device* src_device,
                       const void* src, size_t bytes) {
  if (dst_device == nullptr || src_device == nullptr ||
      (bytes != 0 && (dst == nullptr || src == nullptr))) {
    return sdk::make_status(
        KILN_STATUS_INVALID_ARGUMENT,
        sdk::str_cat("copy_peer: bad arguments (devices ", dst_device, " <- ", src_device, ", dst ",
                     dst, ", src ", src, ", ", bytes, " bytes)"));
  }
  if (bytes != 0 && dst != src) std::memmove(dst, src, bytes);
  return nullptr;
}

const void* get_extension(void*, const char* name) {
  if (name == nullptr) return nullptr;
  if (std::strcmp(name, KILN_EXTENSION_COLLECTIVES) == 0) return collectives_api();
  if (std::strcmp(name, KILN_EXTENSION_THREADS) == 0) return threads_api();
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
    &copy_peer,
    &event_elapsed,
    nullptr,  // range_push: no profiling tool to tell
    nullptr,  // range_pop
};

kiln_status* init(const kiln_host_api* host, const kiln_plugin_api** api) {
  sdk::check_host_abi(host, api, "the cpu plugin");
  attach_log(host);
  const PluginState& state = init_plugin_state();
  log(KILN_LOG_DEBUG, std::string("initialized: ") + state.description);
  *api = &kApi;
  return nullptr;
}

}  // namespace

}  // namespace kiln::cpu

extern "C" KILN_PLUGIN_EXPORT kiln_status* kiln_plugin_init(const kiln_host_api* host,
                                                            const kiln_plugin_api** api) {
  return kiln::sdk::guard("cpu plugin", [&] { return kiln::cpu::init(host, api); });
}
