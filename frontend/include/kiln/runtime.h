#pragma once
/// @file runtime.h
/// What Kiln loaded and how it is doing: plugins, devices, rejected plugin
/// candidates, memory statistics and the CPU-fallback report. kiln-info prints
/// all of it.
///
/// Plugins are discovered on first use: every folder in KILN_PLUGIN_PATH (colon-
/// separated), then the folder kiln/plugins beside libkiln. KILN_PLUGINS (e.g.
/// "cpu,acme") limits which are opened; the CPU plugin is always loaded. Each file named
/// libkiln_<name>.so is opened with RTLD_NOW | RTLD_LOCAL and never unloaded. A
/// candidate that fails (not a library, no entry symbol, ABI major mismatch, init
/// error, a table too small, a duplicate name) is recorded with its reason and
/// skipped; the others load regardless.

#include <cstdint>
#include <string>
#include <vector>

#include "kiln/device.h"

namespace kiln {

/// "0.1.0"
std::string version();
/// The plugin ABI this libkiln speaks, "major.minor": KILN_ABI_MAJOR and KILN_ABI_MINOR
/// of kiln/c_api.h (share/doc/kiln/ABI.md lists what each minor version added).
std::string abi_version();

struct DeviceInfo {
  Device device;
  std::string name;
  std::string kind;  ///< "cpu", "gpu", "accelerator"
  int compute_capability_major = 0;
  int compute_capability_minor = 0;
  int multiprocessor_count = 0;
  uint64_t total_memory_bytes = 0;
  uint64_t free_memory_bytes = 0;
  /// The host can use this device's memory directly (ABI 1.1 property; false for
  /// 1.0 plugins).
  bool host_accessible = false;
  /// The plugin offers collectives (kiln.collectives.v1) and peer copies across
  /// its devices; without them, Kiln reduces and copies through the host.
  bool collectives = false;
  bool peer_copies = false;
};

/// Code a plugin ships that never ran on its hardware ("kiln.staged.v1", share/doc/kiln/ABI.md):
/// off unless the plugin's own switch (KILN_CUDA_STAGED) turns it on.
struct StagedInfo {
  std::string name;     ///< the name the plugin's switch takes
  std::string kind;     ///< "kernel" or "extension"
  std::string test;     ///< the test that covers it on the hardware
  std::string summary;  ///< one line
  bool enabled = false;
};

struct PluginInfo {
  std::string name;
  std::string version;
  std::string path;
  uint32_t abi_major = 0;
  uint32_t abi_minor = 0;
  std::string description;  ///< the plugin's own diagnostics (may be empty)
  std::vector<DeviceInfo> devices;
  std::vector<StagedInfo> staged;  ///< empty for a plugin without kiln.staged.v1
};

struct PluginLoadFailure {
  std::string path;
  std::string reason;
};

/// The folders searched, in order.
std::vector<std::string> plugin_search_path();
/// Every plugin that loaded, in load order.
std::vector<PluginInfo> loaded_plugins();
/// Every candidate that did not load, with the reason.
std::vector<PluginLoadFailure> plugin_load_failures();
/// Loads more plugins at run time: every libkiln_<name>.so of a folder (which joins
/// plugin_search_path()), or one such file, as torch.ops.load_library or
/// ggml_backend_load do. KILN_PLUGINS applies; a name already loaded is refused (the
/// first stays). Returns the plugins it loaded; each candidate it refused is added to
/// plugin_load_failures() with the reason, and `kiln::Device("acme", 0)` then says it.
/// Throws kiln::Error when `path` is neither a folder nor a plugin file. Thread-safe:
/// other threads may go on using Kiln meanwhile.
/// @code
///   kiln::load_plugins("/opt/acme/lib/kiln");  // then kiln::ones({2}, kiln::Device("acme"))
/// @endcode
std::vector<PluginInfo> load_plugins(const std::string& path);
/// Devices of the plugin named `backend` (0 when no such plugin loaded), as
/// torch.cuda.device_count().
int device_count(const std::string& backend);
/// True when the plugin named `backend` loaded and has at least one device.
bool is_available(const std::string& backend);

/// Host threads each op may use from now on (torch.set_num_threads), 1..1024: set in
/// every loaded plugin that runs its ops on a pool of host threads (the CPU plugin,
/// and OpenBLAS's count with it; plugins with the "kiln.threads.v1" extension). Safe
/// while other threads run ops: an op already running keeps its count. Plugins
/// loaded later start with KILN_NUM_THREADS. Throws kiln::Error for a count out of
/// range, naming it.
void set_num_threads(int num_threads);
/// The CPU plugin's thread count (KILN_NUM_THREADS, or the last set_num_threads).
int get_num_threads();

struct MemoryStats {
  uint64_t bytes_in_use = 0;
  uint64_t bytes_reserved = 0;
  uint64_t peak_bytes_in_use = 0;
  uint64_t num_allocations = 0;
  uint64_t num_system_allocations = 0;
};
MemoryStats memory_stats(const Device& device);
/// Returns the device allocator's cached memory to the system (if it caches).
void empty_cache(const Device& device);

/// One row per (op, device) that ran on the CPU plugin because the device's plugin
/// lacks the kernel or declined these arguments.
struct FallbackEntry {
  std::string op;      ///< "kiln.gather"
  std::string device;  ///< "acme:0"
  uint64_t calls = 0;
  double seconds = 0;  ///< wall time including the copies
  uint64_t bytes_moved = 0;
};
struct FallbackReport {
  std::vector<FallbackEntry> entries;
  bool empty() const { return entries.empty(); }
  /// A table, one line per entry, or "no CPU fallbacks".
  std::string str() const;
};
FallbackReport fallback_report();
void reset_fallback_report();

/// Allow: a missing kernel runs on the CPU plugin and is counted. Error: it throws
/// kiln::Error naming the op and the device instead (for plugin authors and CI).
/// The initial mode comes from KILN_FALLBACK ("allow", the default, or "error").
enum class FallbackMode { Allow, Error };
void set_fallback_mode(FallbackMode mode);
FallbackMode fallback_mode();

}  // namespace kiln
