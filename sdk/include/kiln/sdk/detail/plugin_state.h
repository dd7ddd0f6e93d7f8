// kiln/sdk/detail/plugin_state.h — the plugin kit's bookkeeping: the plugin's one
// state object, per-device slots (the kiln_device handles), live-handle registries,
// and the ABI boundary that turns exceptions into statuses. Part of kiln/sdk/plugin.h;
// include that instead.
#ifndef KILN_SDK_DETAIL_PLUGIN_STATE_H
#define KILN_SDK_DETAIL_PLUGIN_STATE_H

#ifndef KILN_SDK_PLUGIN_H
#error "include kiln/sdk/plugin.h, not this file"
#endif

namespace kiln::sdk {

namespace detail {

struct PluginState;

// What the kit keeps per opened device; kiln_device* handles point here.
struct DeviceSlot {
  // "kilnDEV2" (the layout with `caching`); every kit-built plugin uses it, so a
  // handle is also checked to be this plugin's (slot_of).
  static constexpr uint64_t kMagic = 0x6b696c6e44455632ull;
  uint64_t magic = kMagic;
  PluginState* plugin = nullptr;
  BackendDevice* device = nullptr;
  CachingDevice* caching = nullptr;  // the same device when it keeps its own blocks
  int32_t index = 0;
  std::string label;  // "acme:0"

  std::mutex mutex;  // guards everything below
  std::unordered_set<const void*> buffers, streams, events;
  uint64_t bytes_in_use = 0, peak_bytes_in_use = 0, num_allocations = 0;
};

// A buffer handle: the memory and the size it was requested with.
struct BufferRecord {
  void* data;
  size_t bytes;
};

struct PluginState {
  const char* name = nullptr;
  const char* version = nullptr;
  Backend* backend = nullptr;
  kiln_plugin_api table{};
  std::string description;
  void (*host_log)(int32_t, const char*, const char*) = nullptr;
  int32_t log_level = KILN_LOG_WARNING;
  std::mutex open_mutex;
  std::vector<std::unique_ptr<DeviceSlot>> slots;  // index -> opened or null
};

// The plugin's one state object (hidden visibility: each plugin has its own).
inline std::atomic<PluginState*> g_state{nullptr};

inline PluginState& state() {
  PluginState* s = g_state.load(std::memory_order_acquire);
  KILN_SDK_CHECK(s != nullptr, KILN_STATUS_INTERNAL, "the plugin is not initialized");
  return *s;
}

[[noreturn]] inline void bad_device_handle(const DeviceSlot* slot) {
  throw Error(KILN_STATUS_INVALID_ARGUMENT,
              slot == nullptr ? "null device handle" : "not a device handle of this plugin");
}

// Every entry point's first step, so the check is two compares and the message is
// built out of line.
inline DeviceSlot& slot_of(kiln_device* handle) {
  auto* slot = reinterpret_cast<DeviceSlot*>(handle);
  if (slot == nullptr || slot->magic != DeviceSlot::kMagic ||
      slot->plugin != g_state.load(std::memory_order_relaxed)) [[unlikely]] {
    bad_device_handle(slot);
  }
  return *slot;
}

// The exception in flight (call only inside a catch block) as a status whose message
// names the plugin, the function and (when known) the device. Out of line: the
// success path of every entry point stays small enough to inline.
[[gnu::cold, gnu::noinline]] inline kiln_status* failure_status(const char* function,
                                                                kiln_device* device) noexcept {
  std::string context;
  try {
    PluginState* s = g_state.load(std::memory_order_acquire);
    context = s != nullptr && s->name != nullptr ? s->name : "plugin";
    context += ": ";
    context += function;
    auto* slot = reinterpret_cast<DeviceSlot*>(device);
    if (slot != nullptr && slot->magic == DeviceSlot::kMagic && slot->plugin == s) {
      context += " on " + slot->label;
    }
  } catch (...) {
    context.clear();
  }
  return guard(context, [] { throw; });
}

// Runs `fn` at the ABI boundary: exceptions become failure_status's status.
template <class Fn>
kiln_status* boundary(const char* function, kiln_device* device, Fn&& fn) noexcept {
  try {
    fn();
    return nullptr;
  } catch (...) {
    return failure_status(function, device);
  }
}

inline void check_size_prefix(size_t struct_size, const char* what) {
  KILN_SDK_CHECK(struct_size >= sizeof(size_t), KILN_STATUS_INVALID_ARGUMENT, what,
                 ".struct_size is ", struct_size, ", too small for any field");
}

template <class Handle>
Handle* checked_handle(DeviceSlot& slot, const std::unordered_set<const void*>& live, void* handle,
                       const char* what) {
  if (handle == nullptr) return nullptr;
  std::lock_guard lock(slot.mutex);
  KILN_SDK_CHECK(live.count(handle) != 0, KILN_STATUS_INVALID_ARGUMENT, "unknown ", what,
                 " handle ", handle, " (never created on ", slot.label, ", or already destroyed)");
  return static_cast<Handle*>(handle);
}

inline Stream* stream_of(DeviceSlot& slot, kiln_stream* stream) {
  if (stream == nullptr) return nullptr;  // the default stream: the hot path, no lock
  return checked_handle<Stream>(slot, slot.streams, stream, "stream");
}

}  // namespace detail
}  // namespace kiln::sdk

#endif  // KILN_SDK_DETAIL_PLUGIN_STATE_H
