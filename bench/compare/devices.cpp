#include "devices.h"

#include <kiln/kiln.h>

#include <algorithm>
#include <filesystem>

namespace kiln::bench {

namespace {

DeviceEntry entry_for(const PluginInfo& plugin, const DeviceInfo& device) {
  DeviceEntry e;
  e.spec = device.device.str();
  e.info = device;
  e.plugin = plugin.name;
  e.plugin_version = plugin.version;
  e.plugin_abi = std::to_string(plugin.abi_major) + "." + std::to_string(plugin.abi_minor);
  return e;
}

DeviceEntry unusable(std::string spec, std::string reason) {
  DeviceEntry e;
  e.spec = std::move(spec);
  e.reason = std::move(reason);
  return e;
}

// Devices open lazily: the first tensor made on one is where a broken device (or a
// driver without hardware) says so. The error becomes the reason, never fatal.
void open(DeviceEntry& e) {
  try {
    kiln::zeros({1}, TensorOptions().device(e.info.device));
    kiln::synchronize(e.info.device);
    e.usable = true;
  } catch (const std::exception& error) {
    e.reason = error.what();
  }
}

// The reason a candidate file libkiln_<backend>.so was rejected, or "".
std::string load_failure(const std::string& backend) {
  for (const PluginLoadFailure& f : plugin_load_failures())
    if (std::filesystem::path(f.path).filename() == "libkiln_" + backend + ".so")
      return f.path + ": " + f.reason;
  return "";
}

std::vector<std::string> split(const std::string& list) {
  std::vector<std::string> items;
  size_t start = 0;
  while (true) {
    size_t comma = list.find(',', start);
    items.push_back(
        list.substr(start, comma == std::string::npos ? std::string::npos : comma - start));
    if (comma == std::string::npos) return items;
    start = comma + 1;
  }
}

DeviceEntry resolve(const std::string& name, const std::vector<PluginInfo>& plugins) {
  if (name.empty())
    throw UsageError("--devices: empty device name (write e.g. --devices cpu:0,cpu:1)");
  Device device;
  try {
    device = Device(name);
  } catch (const kiln::Error& e) {
    throw UsageError(std::string("--devices: ") + e.what());
  }
  auto plugin = std::find_if(plugins.begin(), plugins.end(),
                             [&](const PluginInfo& p) { return p.name == device.backend(); });
  if (plugin == plugins.end()) {
    std::string failure = load_failure(device.backend());
    if (!failure.empty()) return unusable(name, "the plugin did not load: " + failure);
    throw UsageError("--devices: unknown device '" + name + "': no plugin named '" +
                     device.backend() + "' is loaded (available: " + available_devices() +
                     "; kiln-info lists the plugins and why others did not load)");
  }
  if (plugin->devices.empty())
    return unusable(name,
                    "the plugin '" + plugin->name + "' loaded but has no devices" +
                        (plugin->description.empty() ? "" : " (" + plugin->description + ")"));
  if (device.index() >= static_cast<int>(plugin->devices.size()))
    throw UsageError("--devices: unknown device '" + name + "': the plugin '" + plugin->name +
                     "' has " + std::to_string(plugin->devices.size()) +
                     " device(s) (available: " + available_devices() + ")");
  return entry_for(*plugin, plugin->devices[device.index()]);
}

}  // namespace

std::string available_devices() {
  std::string list;
  for (const PluginInfo& p : loaded_plugins())
    for (const DeviceInfo& d : p.devices) list += (list.empty() ? "" : ", ") + d.device.str();
  return list.empty() ? "none" : list;
}

std::vector<DeviceEntry> select_devices(const std::string& spec) {
  const std::vector<PluginInfo> plugins = loaded_plugins();
  std::vector<DeviceEntry> selected;
  if (spec == "all") {
    // The CPU plugin first: its device 0 is then the default baseline, whatever order
    // the plugin folders were searched in.
    std::vector<PluginInfo> ordered = plugins;
    std::stable_partition(ordered.begin(), ordered.end(),
                          [](const PluginInfo& p) { return p.name == "cpu"; });
    for (const PluginInfo& p : ordered) {
      if (p.devices.empty())
        selected.push_back(
            unusable(p.name, "the plugin loaded but has no devices" +
                                 (p.description.empty() ? "" : " (" + p.description + ")")));
      for (const DeviceInfo& d : p.devices) selected.push_back(entry_for(p, d));
    }
  } else {
    for (const std::string& name : split(spec)) {
      DeviceEntry e = resolve(name, plugins);
      for (const DeviceEntry& other : selected)
        if (other.spec == e.spec)
          throw UsageError("--devices: '" + name + "' names " + e.spec + " a second time");
      selected.push_back(std::move(e));
    }
  }
  for (DeviceEntry& e : selected)
    if (!e.plugin.empty() && e.reason.empty()) open(e);
  return selected;
}

}  // namespace kiln::bench
