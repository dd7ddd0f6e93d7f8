// The public view of the registry (kiln/runtime.h): versions, plugins, devices,
// load failures and memory statistics.

#include <cstring>

#include "kiln/error.h"
#include "kiln/runtime.h"
#include "runtime/registry.h"

namespace kiln {

std::string version() { return KILN_VERSION_STRING; }

std::string abi_version() {
  return std::to_string(KILN_ABI_MAJOR) + "." + std::to_string(KILN_ABI_MINOR);
}

std::vector<std::string> plugin_search_path() { return detail::Registry::get().search_path(); }

std::vector<PluginLoadFailure> plugin_load_failures() { return detail::Registry::get().failures(); }

namespace {

// The plugin's staged code, "kiln.staged.v1" (the table was checked at load); an entry
// too small for its fields is skipped, a missing string read as empty.
std::vector<StagedInfo> staged_of(const detail::Plugin* plugin) {
  std::vector<StagedInfo> out;
  const kiln_staged_api* table = plugin->staged;
  if (!table) return out;
  auto text = [](const char* s) { return std::string(s ? s : ""); };
  for (size_t i = 0; i < table->count; ++i) {
    const kiln_staged_entry* e = table->entries[i];
    if (!e || e->struct_size < KILN_STAGED_ENTRY_SIZE_V1 || !e->name) continue;
    out.push_back({e->name, text(e->kind), text(e->test), text(e->summary), e->enabled != 0});
  }
  return out;
}

PluginInfo info_of(const detail::Plugin* plugin) {
  const kiln_plugin_api* api = plugin->api;
  PluginInfo info;
  info.name = api->name;
  info.version = api->version ? api->version : "";
  info.path = plugin->path;
  info.abi_major = api->abi_major;
  info.abi_minor = api->abi_minor;
  if (api->describe) info.description = api->describe(api->context);
  info.staged = staged_of(plugin);
  for (int32_t i = 0; i < plugin->device_count; ++i) {
    kiln_device_properties p{};
    p.struct_size = sizeof(p);
    DeviceInfo d;
    d.device = Device(api->name, i);
    if (kiln_status* s = api->device_get_properties(api->context, i, &p)) {
      d.name = "(properties unavailable: " + detail::consume_status(s) + ")";
    } else {
      d.name.assign(p.name, strnlen(p.name, sizeof(p.name)));
      d.kind = p.kind == KILN_DEVICE_KIND_CPU   ? "cpu"
               : p.kind == KILN_DEVICE_KIND_GPU ? "gpu"
                                                : "accelerator";
      d.compute_capability_major = p.compute_capability_major;
      d.compute_capability_minor = p.compute_capability_minor;
      d.multiprocessor_count = p.multiprocessor_count;
      d.total_memory_bytes = p.total_memory_bytes;
      d.free_memory_bytes = p.free_memory_bytes;
      if (p.struct_size >= KILN_DEVICE_PROPERTIES_SIZE_1_1)
        d.host_accessible = (p.flags & KILN_DEVICE_FLAG_HOST_ACCESSIBLE) != 0;
    }
    d.collectives = plugin->collectives != nullptr;
    d.peer_copies = plugin->copy_peer != nullptr;
    info.devices.push_back(std::move(d));
  }
  return info;
}

}  // namespace

std::vector<PluginInfo> loaded_plugins() {
  std::vector<PluginInfo> out;
  for (const detail::Plugin* plugin : detail::Registry::get().plugins())
    out.push_back(info_of(plugin));
  return out;
}

std::vector<PluginInfo> load_plugins(const std::string& path) {
  std::vector<PluginInfo> out;
  for (const detail::Plugin* plugin : detail::Registry::get().add_plugins(path))
    out.push_back(info_of(plugin));
  return out;
}

int device_count(const std::string& backend) {
  for (const auto& plugin : detail::Registry::get().plugins())
    if (backend == plugin->api->name) return plugin->device_count;
  return 0;
}

bool is_available(const std::string& backend) { return device_count(backend) > 0; }

void set_num_threads(int num_threads) {
  KILN_CHECK(num_threads >= 1 && num_threads <= 1024,
             "set_num_threads: the thread count must be between 1 and 1024, got ", num_threads);
  for (const auto& plugin : detail::Registry::get().plugins()) {
    if (!plugin->threads) continue;
    const kiln_threads_api* api = plugin->threads;
    if (kiln_status* status = detail::call_plugin(plugin->api->name, "set_num_threads", [&] {
          return api->set_num_threads(plugin->api->context, num_threads);
        }))
      throw Error(detail::concat("set_num_threads(", num_threads, ") on ", plugin->api->name, ": ",
                                 detail::consume_status(status)));
  }
}

int get_num_threads() {
  for (const auto& plugin : detail::Registry::get().plugins())
    if (plugin->threads && std::string_view(plugin->api->name) == "cpu")
      return detail::call_plugin("cpu", "get_num_threads", [&] {
        return plugin->threads->get_num_threads(plugin->api->context);
      });
  return 1;
}

MemoryStats memory_stats(const Device& device) {
  return detail::Registry::get().resolve(device)->memory_stats();
}

void empty_cache(const Device& device) { detail::Registry::get().resolve(device)->empty_cache(); }

}  // namespace kiln
