#include "cuda_test_util.h"

#include <dlfcn.h>

#include <cstdlib>

namespace kiln::test::cuda {

CudaPluginInfo cuda_plugin() {
  CudaPluginInfo out;
  for (const PluginInfo& p : loaded_plugins()) {
    if (p.name == "cuda") {
      out.found = true;
      out.info = p;
    }
  }
  return out;
}

std::string why_no_cuda() {
  const CudaPluginInfo p = cuda_plugin();
  if (!p.found) {
    std::string failures;
    for (const PluginLoadFailure& f : plugin_load_failures()) {
      failures += "\n  " + f.path + ": " + f.reason;
    }
    return "the cuda plugin did not load" + (failures.empty() ? std::string() : failures);
  }
  if (p.info.devices.empty()) return p.info.description;
  return "";
}

std::string take(kiln_status* status) {
  if (status == nullptr) return "";
  std::string message = status->message != nullptr ? status->message : "(no message)";
  if (message.empty()) message = "(empty message)";
  status->destroy(status);
  return message;
}

namespace {

RawPlugin load_raw() {
  RawPlugin raw;
  const CudaPluginInfo p = cuda_plugin();
  if (!p.found) return raw;
  void* library = dlopen(p.info.path.c_str(), RTLD_NOW | RTLD_LOCAL | RTLD_NOLOAD);
  if (library == nullptr) return raw;
  auto init = reinterpret_cast<kiln_plugin_init_fn>(dlsym(library, KILN_PLUGIN_ENTRY_SYMBOL));
  if (init == nullptr) return raw;
  kiln_host_api host{};
  host.struct_size = sizeof host;
  host.abi_major = KILN_ABI_MAJOR;
  host.abi_minor = KILN_ABI_MINOR;
  host.kiln_version = "test";
  host.log = nullptr;  // keeps the loader's log sink
  const kiln_plugin_api* api = nullptr;
  if (!take(init(&host, &api)).empty() || api == nullptr) return raw;
  raw.api = api;
  raw.debug = static_cast<const kiln_cuda_debug_v1*>(
      api->get_extension(api->context, KILN_CUDA_DEBUG_EXTENSION));
  int32_t count = 0;
  if (take(api->device_count(api->context, &count)).empty() && count > 0) {
    kiln_device* device = nullptr;
    if (take(api->device_open(api->context, 0, &device)).empty()) raw.device = device;
  }
  return raw;
}

}  // namespace

const RawPlugin& raw_plugin() {
  static const RawPlugin raw = load_raw();
  return raw;
}

kiln_cuda_debug_counters counters() {
  kiln_cuda_debug_counters c{};
  c.struct_size = sizeof c;
  const RawPlugin& raw = raw_plugin();
  EXPECT_NE(raw.debug, nullptr);
  EXPECT_NE(raw.device, nullptr);
  if (raw.debug == nullptr || raw.device == nullptr) return c;
  EXPECT_EQ(take(raw.debug->get_counters(raw.device, &c)), "");
  return c;
}

std::string allocator_name() {
  const RawPlugin& raw = raw_plugin();
  return raw.debug != nullptr ? raw.debug->allocator_name() : "";
}

}  // namespace kiln::test::cuda
