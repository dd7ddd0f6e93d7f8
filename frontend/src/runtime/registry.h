#pragma once
// The plugin registry: which plugins loaded (or not, and why), their devices, and
// per device the kernel cache the dispatcher reads. Internal to libkiln.

#include <array>
#include <atomic>
#include <filesystem>
#include <map>
#include <memory>
#include <mutex>
#include <shared_mutex>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

#include "kiln/c_api.h"
#include "kiln/device.h"
#include "kiln/runtime.h"
#include "runtime/exit_guard.h"
#include "runtime/op_ids.h"
#include "runtime/storage.h"

namespace boost::dll {
class shared_library;
}

namespace kiln::detail {

struct Plugin;

/// A resolved kernel: what the plugin returned for one (device, op).
struct KernelSlot {
  enum class State : uint8_t { Unresolved, Native, Missing };
  std::atomic<State> state{State::Unresolved};
  kiln_kernel kernel{};
};

/// One opened device of one plugin. Never destroyed (plugins are never unloaded).
class DeviceContext {
 public:
  DeviceContext(Plugin* plugin, int index, kiln_device* handle);

  Plugin* plugin() const { return plugin_; }
  const kiln_plugin_api* api() const { return api_; }
  kiln_device* handle() const { return handle_; }
  int index() const { return index_; }
  const Device& device() const { return device_; }
  /// "cuda:0", for messages.
  const std::string& name() const { return name_; }
  /// True for the plugin named "cpu": the reference the fallback runs on.
  bool is_cpu_plugin() const;
  /// True when the host can use this device's memory directly (the device property
  /// KILN_DEVICE_FLAG_HOST_ACCESSIBLE; never inferred from the plugin's name).
  bool host_accessible() const { return host_accessible_; }

  /// The kernel for `op`, looked up in the plugin on first use.
  const KernelSlot& kernel(OpId op) {
    KernelSlot& slot = kernels_[static_cast<size_t>(op)];
    if (slot.state.load(std::memory_order_acquire) == KernelSlot::State::Unresolved) [[unlikely]]
      resolve(op, slot);
    return slot;
  }
  /// The kernel for an op outside the catalogue, by name and version ("acme.fused_gelu"
  /// version 1: kiln::call_op), looked up on first use; slots are kept for the process.
  const KernelSlot& named_kernel(const std::string& name, int32_t version);

  /// Allocates `bytes`; throws kiln::Error (out of memory states sizes) on failure.
  std::shared_ptr<Storage> allocate(size_t bytes);
  /// allocate() from the device itself, also during a graph capture (the graph's pool
  /// gets its blocks here; allocate() hands out views of them during a capture).
  std::shared_ptr<Storage> allocate_block(size_t bytes);
  void deallocate(kiln_buffer* buffer) noexcept;
  void copy(kiln_copy_kind kind, void* dst, const void* src, size_t bytes);
  /// True when the plugin offers copy_peer (ABI 1.1) between two of its devices.
  bool has_copy_peer() const;
  /// Copies `bytes` from `src` on `from` (another device of the same plugin) to `dst`
  /// here, device to device; ordered on both devices' default streams.
  void copy_peer(void* dst, DeviceContext& from, const void* src, size_t bytes);
  void synchronize();
  MemoryStats memory_stats();
  void empty_cache();

  // -- events, for the profiler's device timing -------------------------------------

  /// True when the plugin can time work on this device (events and event_elapsed).
  bool can_time() const;
  kiln_event* create_event();
  void destroy_event(kiln_event* event) noexcept;
  /// Records `event` on the default stream, after the work enqueued so far.
  void record_event(kiln_event* event);
  /// Device milliseconds between two recorded events whose work is done.
  double elapsed_ms(kiln_event* start, kiln_event* end);

  /// Throws kiln::Error "<what> on <device>: <message>" and frees `status` if it
  /// is an error; does nothing for NULL.
  void check(kiln_status* status, const char* what) const;

 private:
  /// check() of the status that `f` (a call into the plugin's entry `what`) returns;
  /// an exception escaping the plugin becomes an ABI-violation kiln::Error.
  template <class F>
  void call(const char* what, F&& f) const {
    check(call_plugin(api_->name, what, std::forward<F>(f)), what);
  }

  void resolve(OpId op, KernelSlot& slot);
  /// Asks the plugin for (name, version) and fills `slot`; resolve_mutex_ is held.
  void look_up(const char* name, int32_t version, KernelSlot& slot);

  Plugin* plugin_;
  const kiln_plugin_api* api_;
  int index_;
  kiln_device* handle_;
  Device device_;
  std::string name_;
  bool host_accessible_ = false;
  std::mutex resolve_mutex_;
  std::array<KernelSlot, kNumOps> kernels_;
  std::map<std::pair<std::string, int32_t>, KernelSlot> named_kernels_;  // resolve_mutex_
};

struct Plugin {
  std::string path;
  const kiln_plugin_api* api = nullptr;
  /// The plugin's "kiln.staged.v1" table, NULL without one.
  const kiln_staged_api* staged = nullptr;
  /// The plugin's entries that ABI 1.1 appended, NULL where its table is too small
  /// (a 1.0 plugin) or it does not provide them.
  kiln_status* (*copy_peer)(kiln_device*, kiln_stream*, void*, kiln_device*, const void*,
                            size_t) = nullptr;
  /// The 1.2 profiling entries, NULL where the table is older or lacks them.
  /// event_elapsed is kept only when the five event functions are there too.
  kiln_status* (*event_elapsed)(kiln_device*, kiln_event*, kiln_event*, double*) = nullptr;
  void (*range_push)(void*, const char*) = nullptr;
  void (*range_pop)(void*) = nullptr;
  /// The "kiln.collectives.v1" extension, or NULL (looked up once, at load).
  const kiln_collectives_api* collectives = nullptr;
  /// The "kiln.threads.v1" extension, or NULL (looked up once, at load).
  const kiln_threads_api* threads = nullptr;
  /// The "kiln.graphs.v1" extension, or NULL (looked up once, at load; kiln::Graph).
  const kiln_graphs_api* graphs = nullptr;
  int32_t device_count = 0;
  std::mutex open_mutex;
  std::vector<std::unique_ptr<DeviceContext>> devices;  // index -> opened or null
};

/// Returns the message of a status (or a placeholder) and destroys it.
std::string consume_status(kiln_status* status);

/// Called inside a catch block: describes the exception in flight, e.g.
/// `a C++ exception (std::runtime_error: "boom")`.
std::string escaped_exception_text();

/// Called inside a catch block around a call into a plugin: an exception crossing the
/// C ABI is a defect of the plugin; throws kiln::Error "ABI violation: ... escaped from
/// plugin '<plugin>' <entry> ...", which leaves the process usable.
[[noreturn]] void throw_abi_violation(const char* plugin, std::string_view entry);

/// Calls `f`, a call into plugin `plugin`'s entry `entry`, turning an exception that
/// escapes it into throw_abi_violation.
template <class F>
decltype(auto) call_plugin(const char* plugin, std::string_view entry, F&& f) {
  PluginCallScope in_plugin;  // an orderly exit waits for this call (exit_guard.h)
  try {
    return f();
  } catch (...) {
    throw_abi_violation(plugin, entry);
  }
}

class Registry {
 public:
  /// The process-wide registry; discovers and loads plugins on first call.
  static Registry& get();

  /// The opened device for `device`; throws kiln::Error naming what is available
  /// when the backend is unknown or the index out of range.
  DeviceContext* resolve(const Device& device);
  /// cpu:0, the fallback target; throws if the CPU plugin did not load.
  DeviceContext* cpu();
  /// The default device (set_default_device, KILN_BACKEND, or cpu:0).
  DeviceContext* default_context();
  void set_default(const Device& device);

  /// Snapshots: plugins are added at run time (add_plugins), never removed, and a
  /// Plugin never moves, so the pointers stay valid.
  std::vector<Plugin*> plugins() const;
  std::vector<PluginLoadFailure> failures() const;
  std::vector<std::string> search_path() const;
  /// "cpu (2 devices), cuda (0 devices)" for messages.
  std::string describe_loaded() const;

  /// Loads the candidates of a folder, or one plugin file (kiln::load_plugins); returns
  /// those that loaded. Throws kiln::Error when `path` is neither.
  std::vector<Plugin*> add_plugins(const std::string& path);

 private:
  Registry();
  std::string describe_loaded_locked() const;
  /// Loads one libkiln_<name>.so unless KILN_PLUGINS leaves it out; records a refusal.
  void consider(const std::filesystem::path& path);
  /// Loads every candidate of `dir`, recording each rejected one in failures_.
  void load_folder(const std::string& dir);
  std::string load_plugin(const std::filesystem::path& path);
  Plugin* find(const std::string& name) const;
  DeviceContext* open(Plugin& plugin, int index);

  // Guards what add_plugins changes (plugins_, failures_, search_path_, libraries_):
  // exclusive while loading, shared for lookups. The constructor needs none.
  mutable std::shared_mutex mutex_;
  // Opened libraries, kept for the life of the process (never unloaded).
  std::vector<std::unique_ptr<boost::dll::shared_library>> libraries_;
  std::vector<std::string> search_path_;
  std::vector<std::string> allowed_;  ///< KILN_PLUGINS, empty: every plugin
  std::string allowed_text_;
  std::vector<std::unique_ptr<Plugin>> plugins_;
  std::vector<PluginLoadFailure> failures_;
  std::atomic<DeviceContext*> default_{nullptr};
  std::mutex default_mutex_;
  std::atomic<DeviceContext*> cpu_{nullptr};  // set once: at start-up or by add_plugins
};

}  // namespace kiln::detail
