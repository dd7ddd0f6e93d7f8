#pragma once
// Which devices `kiln-bench compare` runs on, and what it says about each.
//
//   auto devices = kiln::bench::select_devices("all");      // every device found
//   auto two = kiln::bench::select_devices("cpu:0,cpu:1");  // or named ones
//   for (const auto& d : two) if (!d.usable) std::cout << d.spec << ": " << d.reason;

#include <kiln/runtime.h>

#include <stdexcept>
#include <string>
#include <vector>

namespace kiln::bench {

/// A wrong command line: the caller prints the message and exits with status 2.
class UsageError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

/// A device a comparison was asked to run on.
struct DeviceEntry {
  std::string spec;            ///< "cpu:1"; for a plugin without devices, its name ("acme")
  DeviceInfo info;             ///< name, kind, memory... (default values when unknown)
  std::string plugin;          ///< the plugin's name ("cpu"), empty if it did not load
  std::string plugin_version;  ///< "0.1.0"
  std::string plugin_abi;      ///< the ABI the plugin speaks, "1.2"
  bool usable = false;
  std::string reason;  ///< why it is not usable ("" when usable)
};

/// Resolves --devices. "all": every device of every loaded plugin, the CPU plugin's first
/// and then the others in load order, plus one unusable entry per loaded plugin that has no
/// devices. Otherwise a comma-separated list of device names as kiln::Device writes them
/// ("cpu:1"; "cuda" means cuda:0), kept in the order given.
/// Each device is opened (a tensor made on it and the device synchronized); one that fails
/// is kept as unusable, with the error as its reason, as is a named plugin that has no
/// devices or that failed to load.
/// Throws UsageError, naming the offending text and what is available, for an empty or
/// malformed name, a name no plugin (loaded or failed) answers to, an index past the
/// plugin's last device, or a device named twice.
std::vector<DeviceEntry> select_devices(const std::string& spec);

/// "cpu:0, cpu:1, reference:0": every device of every loaded plugin, for messages.
std::string available_devices();

}  // namespace kiln::bench
