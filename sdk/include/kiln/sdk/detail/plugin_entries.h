// kiln/sdk/detail/plugin_entries.h — the C entry points the plugin kit puts in the
// kiln_plugin_api table: each checks its arguments and handles, calls the author's
// BackendDevice or Backend, and answers with a status. Part of kiln/sdk/plugin.h; include
// that instead.
#ifndef KILN_SDK_DETAIL_PLUGIN_ENTRIES_H
#define KILN_SDK_DETAIL_PLUGIN_ENTRIES_H

#ifndef KILN_SDK_PLUGIN_H
#error "include kiln/sdk/plugin.h, not this file"
#endif

#include "kiln/sdk/detail/plugin_state.h"

namespace kiln::sdk::detail {

// -- plugin level ----------------------------------------------------------------------

inline const char* describe(void*) {
  PluginState* s = g_state.load(std::memory_order_acquire);
  return s != nullptr ? s->description.c_str() : "";
}

inline kiln_status* device_count(void*, int32_t* count) {
  return boundary("device_count", nullptr, [&] {
    KILN_SDK_CHECK(count != nullptr, KILN_STATUS_INVALID_ARGUMENT, "null output pointer");
    const int32_t n = state().backend->device_count();
    KILN_SDK_CHECK(n >= 0, KILN_STATUS_INTERNAL, "the backend reports ", n, " devices");
    *count = n;
  });
}

inline void check_index(int32_t index) {
  PluginState& s = state();
  const int32_t n = s.backend->device_count();
  // With no device at all, describe() says why (no driver, no GPU it has code for).
  KILN_SDK_CHECK(index >= 0 && index < n, KILN_STATUS_INVALID_ARGUMENT, "device index ", index,
                 " is out of range: the plugin has ", n, n == 1 ? " device" : " devices",
                 n == 0 && !s.description.empty() ? " (" + s.description + ")" : "");
}

inline DeviceSlot& open_slot(int32_t index) {
  check_index(index);
  PluginState& s = state();
  std::lock_guard lock(s.open_mutex);
  if (s.slots.size() <= static_cast<size_t>(index)) s.slots.resize(static_cast<size_t>(index) + 1);
  auto& slot = s.slots[static_cast<size_t>(index)];
  if (!slot) {
    auto fresh = std::make_unique<DeviceSlot>();
    fresh->plugin = &s;
    fresh->index = index;
    fresh->label = str_cat(s.name, ":", index);
    fresh->device = &s.backend->device(index);
    fresh->caching = dynamic_cast<CachingDevice*>(fresh->device);
    slot = std::move(fresh);
  }
  return *slot;
}

inline kiln_status* device_get_properties(void*, int32_t index,
                                          kiln_device_properties* properties) {
  return boundary("device_get_properties", nullptr, [&] {
    KILN_SDK_CHECK(properties != nullptr, KILN_STATUS_INVALID_ARGUMENT, "null output pointer");
    check_size_prefix(properties->struct_size, "kiln_device_properties");
    DeviceSlot& slot = open_slot(index);
    kiln_device_properties full{};
    full.struct_size = sizeof full;
    std::snprintf(full.name, sizeof full.name, "%s device %d", slot.plugin->name, index);
    full.kind = KILN_DEVICE_KIND_ACCELERATOR;
    full.multiprocessor_count = 1;
    slot.device->properties(full);
    full.name[sizeof full.name - 1] = '\0';
    write_sized(properties, full);
  });
}

inline kiln_status* device_open(void*, int32_t index, kiln_device** device) {
  return boundary("device_open", nullptr, [&] {
    KILN_SDK_CHECK(device != nullptr, KILN_STATUS_INVALID_ARGUMENT, "null output pointer");
    DeviceSlot& slot = open_slot(index);
    slot.device->open();
    *device = reinterpret_cast<kiln_device*>(&slot);
  });
}

// -- memory ------------------------------------------------------------------------------

// A buffer the kit keeps a record of (a BackendDevice that is not a CachingDevice).
[[gnu::noinline]] inline void allocate_record(DeviceSlot& slot, size_t bytes, size_t alignment,
                                              Stream* s, kiln_buffer** buffer, void** data) {
  auto record = std::make_unique<BufferRecord>(BufferRecord{nullptr, bytes});
  record->data = slot.device->allocate(bytes, alignment, s);
  if (record->data == nullptr) {
    std::lock_guard lock(slot.mutex);
    throw Error(KILN_STATUS_OUT_OF_MEMORY, str_cat("out of memory: requested ", bytes, " bytes; ",
                                                   slot.bytes_in_use, " bytes in use"));
  }
  if (reinterpret_cast<uintptr_t>(record->data) % alignment != 0) {
    slot.device->deallocate(record->data, s);
    throw Error(KILN_STATUS_INTERNAL, str_cat("BackendDevice::allocate returned ", record->data,
                                              ", which is not aligned to ", alignment));
  }
  try {
    std::lock_guard lock(slot.mutex);
    slot.buffers.insert(record.get());
    slot.bytes_in_use += bytes;
    slot.peak_bytes_in_use = std::max(slot.peak_bytes_in_use, slot.bytes_in_use);
    slot.num_allocations += 1;
  } catch (...) {
    slot.device->deallocate(record->data, s);
    throw;
  }
  *data = record->data;
  *buffer = reinterpret_cast<kiln_buffer*>(record.release());
}

[[gnu::noinline]] inline void deallocate_record(DeviceSlot& slot, kiln_buffer* buffer, Stream* s) {
  auto* record = reinterpret_cast<BufferRecord*>(buffer);
  {
    std::lock_guard lock(slot.mutex);
    KILN_SDK_CHECK(slot.buffers.erase(record) == 1, KILN_STATUS_INVALID_ARGUMENT,
                   "unknown buffer handle ", static_cast<void*>(buffer), " (never allocated on ",
                   slot.label, ", or already freed)");
    slot.bytes_in_use -= record->bytes;
  }
  std::unique_ptr<BufferRecord> owned(record);
  slot.device->deallocate(owned->data, s);
}

// Every op allocates its outputs here, so the CachingDevice path is kept short.
inline kiln_status* allocate(kiln_device* device, size_t bytes, size_t alignment,
                             kiln_stream* stream, kiln_buffer** buffer, void** data) {
  return boundary("allocate", device, [&] {
    DeviceSlot& slot = slot_of(device);
    KILN_SDK_CHECK(buffer != nullptr && data != nullptr, KILN_STATUS_INVALID_ARGUMENT,
                   "null output pointer");
    KILN_SDK_CHECK(alignment != 0 && (alignment & (alignment - 1)) == 0,
                   KILN_STATUS_INVALID_ARGUMENT, "alignment ", alignment, " is not a power of two");
    Stream* s = stream_of(slot, stream);
    if (slot.caching == nullptr) return allocate_record(slot, bytes, alignment, s, buffer, data);
    const CachingDevice::Block block = slot.caching->allocate_block(bytes, alignment, s);
    KILN_SDK_CHECK(block.handle != nullptr && block.data != nullptr, KILN_STATUS_OUT_OF_MEMORY,
                   "out of memory: requested ", bytes, " bytes");
    *data = block.data;
    *buffer = block.handle;
  });
}

inline kiln_status* deallocate(kiln_device* device, kiln_buffer* buffer, kiln_stream* stream) {
  return boundary("deallocate", device, [&] {
    DeviceSlot& slot = slot_of(device);
    KILN_SDK_CHECK(buffer != nullptr, KILN_STATUS_INVALID_ARGUMENT, "null buffer handle");
    Stream* s = stream_of(slot, stream);
    if (slot.caching == nullptr) return deallocate_record(slot, buffer, s);
    slot.caching->deallocate_block(buffer, s);
  });
}

inline kiln_status* memory_stats(kiln_device* device, kiln_memory_stats* stats) {
  return boundary("memory_stats", device, [&] {
    DeviceSlot& slot = slot_of(device);
    KILN_SDK_CHECK(stats != nullptr, KILN_STATUS_INVALID_ARGUMENT, "null output pointer");
    check_size_prefix(stats->struct_size, "kiln_memory_stats");
    kiln_memory_stats full{};
    full.struct_size = sizeof full;
    {
      std::lock_guard lock(slot.mutex);
      full.bytes_in_use = slot.bytes_in_use;
      full.bytes_reserved = slot.bytes_in_use;
      full.peak_bytes_in_use = slot.peak_bytes_in_use;
      full.num_allocations = slot.num_allocations;
      full.num_system_allocations = slot.num_allocations;
    }
    slot.device->memory_stats(full);
    write_sized(stats, full);
  });
}

inline kiln_status* empty_cache(kiln_device* device) {
  return boundary("empty_cache", device, [&] { slot_of(device).device->empty_cache(); });
}

inline kiln_status* copy(kiln_device* device, kiln_stream* stream, int32_t kind, void* dst,
                         const void* src, size_t bytes) {
  return boundary("copy", device, [&] {
    DeviceSlot& slot = slot_of(device);
    KILN_SDK_CHECK(kind == KILN_COPY_HOST_TO_DEVICE || kind == KILN_COPY_DEVICE_TO_HOST ||
                       kind == KILN_COPY_DEVICE_TO_DEVICE,
                   KILN_STATUS_INVALID_ARGUMENT, "unknown copy kind ", kind);
    Stream* s = stream_of(slot, stream);
    if (bytes == 0) return;
    KILN_SDK_CHECK(dst != nullptr && src != nullptr, KILN_STATUS_INVALID_ARGUMENT,
                   "null pointer (dst ", dst, ", src ", src, ") for ", bytes, " bytes");
    slot.device->copy(static_cast<CopyKind>(kind), dst, src, bytes, s);
  });
}

// -- streams and events --------------------------------------------------------------------

inline kiln_status* stream_create(kiln_device* device, kiln_stream** stream) {
  return boundary("stream_create", device, [&] {
    DeviceSlot& slot = slot_of(device);
    KILN_SDK_CHECK(stream != nullptr, KILN_STATUS_INVALID_ARGUMENT, "null output pointer");
    std::unique_ptr<Stream> created = slot.device->create_stream();
    KILN_SDK_CHECK(created != nullptr, KILN_STATUS_INTERNAL, "create_stream returned null");
    {
      std::lock_guard lock(slot.mutex);
      slot.streams.insert(created.get());
    }
    *stream = reinterpret_cast<kiln_stream*>(created.release());
  });
}

// Destroys a stream or event handle: out of the registry, through the device's destroy,
// deleted. A device whose destroy throws keeps it: the handle is put back and stays
// valid (it may be destroyed again), rather than leaking what the device still holds.
template <class Handle, class Destroy>
void destroy_handle(DeviceSlot& slot, std::unordered_set<const void*>& live, void* handle,
                    const char* what, Destroy&& destroy) {
  {
    std::lock_guard lock(slot.mutex);
    KILN_SDK_CHECK(live.erase(handle) == 1, KILN_STATUS_INVALID_ARGUMENT, "unknown ", what,
                   " handle ", handle, " (never created on ", slot.label,
                   ", or already destroyed)");
  }
  auto* owned = static_cast<Handle*>(handle);
  try {
    destroy(*owned);
  } catch (...) {
    std::lock_guard lock(slot.mutex);
    live.insert(owned);
    throw;
  }
  delete owned;
}

inline kiln_status* stream_destroy(kiln_device* device, kiln_stream* stream) {
  return boundary("stream_destroy", device, [&] {
    DeviceSlot& slot = slot_of(device);
    KILN_SDK_CHECK(stream != nullptr, KILN_STATUS_INVALID_ARGUMENT,
                   "the default (NULL) stream cannot be destroyed");
    destroy_handle<Stream>(slot, slot.streams, stream, "stream",
                           [&](Stream& s) { slot.device->destroy_stream(s); });
  });
}

inline kiln_status* stream_synchronize(kiln_device* device, kiln_stream* stream) {
  return boundary("stream_synchronize", device, [&] {
    DeviceSlot& slot = slot_of(device);
    slot.device->synchronize(stream_of(slot, stream));
  });
}

inline Event& event_of(DeviceSlot& slot, kiln_event* event) {
  KILN_SDK_CHECK(event != nullptr, KILN_STATUS_INVALID_ARGUMENT, "null event handle");
  return *checked_handle<Event>(slot, slot.events, event, "event");
}

inline kiln_status* event_create(kiln_device* device, kiln_event** event) {
  return boundary("event_create", device, [&] {
    DeviceSlot& slot = slot_of(device);
    KILN_SDK_CHECK(event != nullptr, KILN_STATUS_INVALID_ARGUMENT, "null output pointer");
    std::unique_ptr<Event> created = slot.device->create_event();
    KILN_SDK_CHECK(created != nullptr, KILN_STATUS_INTERNAL, "create_event returned null");
    {
      std::lock_guard lock(slot.mutex);
      slot.events.insert(created.get());
    }
    *event = reinterpret_cast<kiln_event*>(created.release());
  });
}

inline kiln_status* event_destroy(kiln_device* device, kiln_event* event) {
  return boundary("event_destroy", device, [&] {
    DeviceSlot& slot = slot_of(device);
    KILN_SDK_CHECK(event != nullptr, KILN_STATUS_INVALID_ARGUMENT, "null event handle");
    destroy_handle<Event>(slot, slot.events, event, "event",
                          [&](Event& e) { slot.device->destroy_event(e); });
  });
}

inline kiln_status* event_record(kiln_device* device, kiln_event* event, kiln_stream* stream) {
  return boundary("event_record", device, [&] {
    DeviceSlot& slot = slot_of(device);
    Event& e = event_of(slot, event);
    e.host_recorded_at = std::chrono::steady_clock::now();
    slot.device->record_event(e, stream_of(slot, stream));
  });
}

inline kiln_status* event_elapsed(kiln_device* device, kiln_event* start, kiln_event* end,
                                  double* milliseconds) {
  return boundary("event_elapsed", device, [&] {
    DeviceSlot& slot = slot_of(device);
    KILN_SDK_CHECK(milliseconds != nullptr, KILN_STATUS_INVALID_ARGUMENT, "null output pointer");
    *milliseconds = slot.device->elapsed_ms(event_of(slot, start), event_of(slot, end));
  });
}

// A stream may wait for an event of any device of the plugin (multi-device code
// orders one device's work after another's this way): the event's own device first,
// then the others that are open.
inline Event& event_of_any_device(DeviceSlot& slot, kiln_event* event) {
  KILN_SDK_CHECK(event != nullptr, KILN_STATUS_INVALID_ARGUMENT, "null event handle");
  const auto live_on = [event](DeviceSlot& d) {
    std::lock_guard lock(d.mutex);
    return d.events.count(event) != 0;
  };
  if (live_on(slot)) return *reinterpret_cast<Event*>(event);
  PluginState& s = *slot.plugin;
  std::lock_guard open_lock(s.open_mutex);  // then each slot's: the one nesting anywhere
  for (const auto& other : s.slots) {
    if (other && other.get() != &slot && live_on(*other)) return *reinterpret_cast<Event*>(event);
  }
  throw Error(KILN_STATUS_INVALID_ARGUMENT,
              str_cat("unknown event handle ", static_cast<void*>(event),
                      " (never created on a device of this plugin, or already destroyed)"));
}

inline kiln_status* stream_wait_event(kiln_device* device, kiln_stream* stream, kiln_event* event) {
  return boundary("stream_wait_event", device, [&] {
    DeviceSlot& slot = slot_of(device);
    slot.device->wait_event(stream_of(slot, stream), event_of_any_device(slot, event));
  });
}

inline kiln_status* event_synchronize(kiln_device* device, kiln_event* event) {
  return boundary("event_synchronize", device, [&] {
    DeviceSlot& slot = slot_of(device);
    slot.device->synchronize_event(event_of(slot, event));
  });
}

inline kiln_status* copy_peer(kiln_device* dst_device, kiln_stream* stream, void* dst,
                              kiln_device* src_device, const void* src, size_t bytes) {
  return boundary("copy_peer", dst_device, [&] {
    DeviceSlot& slot = slot_of(dst_device);
    DeviceSlot& source = slot_of(src_device);
    Stream* s = stream_of(slot, stream);
    if (bytes == 0) return;
    KILN_SDK_CHECK(dst != nullptr && src != nullptr, KILN_STATUS_INVALID_ARGUMENT,
                   "null pointer (dst ", dst, ", src ", src, ") for ", bytes, " bytes");
    slot.device->copy_peer(dst, *source.device, src, bytes, s);
  });
}

// -- ops ------------------------------------------------------------------------------------

inline kiln_status* get_kernel(kiln_device* device, const char* name, int32_t version,
                               kiln_kernel* kernel) {
  return boundary("get_kernel", device, [&] {
    DeviceSlot& slot = slot_of(device);
    static const KernelTable empty_table(KernelList{});
    const KernelTable* table = slot.device->kernels();
    (table != nullptr ? table : &empty_table)->lookup(name, version, kernel);
  });
}

// Never fail, never throw (the ABI says so): a backend's exception is dropped.
inline void range_push(void*, const char* name) {
  try {
    PluginState* s = g_state.load(std::memory_order_acquire);
    if (s != nullptr && name != nullptr) s->backend->range_push(name);
  } catch (...) {
  }
}

inline void range_pop(void*) {
  try {
    if (PluginState* s = g_state.load(std::memory_order_acquire)) s->backend->range_pop();
  } catch (...) {
  }
}

inline const void* get_extension(void*, const char* name) {
  try {
    PluginState* s = g_state.load(std::memory_order_acquire);
    return s != nullptr && name != nullptr ? s->backend->extension(name) : nullptr;
  } catch (...) {
    return nullptr;
  }
}

// -- the entry point --------------------------------------------------------------------------

constexpr bool valid_backend_name(const char* name) {
  if (name == nullptr || *name == '\0') return false;
  for (; *name != '\0'; ++name) {
    const char c = *name;
    if (!((c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '_')) return false;
  }
  return true;
}

inline void fill_table(PluginState& s) {
  kiln_plugin_api& t = s.table;
  t.struct_size = sizeof(kiln_plugin_api);
  t.abi_major = KILN_ABI_MAJOR;
  t.abi_minor = KILN_ABI_MINOR;
  t.name = s.name;
  t.version = s.version;
  t.context = &s;
  t.describe = &describe;
  t.device_count = &device_count;
  t.device_get_properties = &device_get_properties;
  t.device_open = &device_open;
  t.allocate = &allocate;
  t.deallocate = &deallocate;
  t.memory_stats = &memory_stats;
  t.empty_cache = &empty_cache;
  t.copy = &copy;
  t.stream_create = &stream_create;
  t.stream_destroy = &stream_destroy;
  t.stream_synchronize = &stream_synchronize;
  t.event_create = &event_create;
  t.event_destroy = &event_destroy;
  t.event_record = &event_record;
  t.stream_wait_event = &stream_wait_event;
  t.event_synchronize = &event_synchronize;
  t.get_kernel = &get_kernel;
  t.get_extension = &get_extension;
  t.event_elapsed = &event_elapsed;
  t.range_push = &range_push;
  t.range_pop = &range_pop;
}

/// The body of kiln_plugin_init for backend B (see KILN_SDK_PLUGIN). Idempotent: a
/// second call returns the same table.
template <class B>
kiln_status* plugin_init(const kiln_host_api* host, const kiln_plugin_api** api, const char* name,
                         const char* version) noexcept {
  static std::mutex init_mutex;
  return guard(name, [&] {
    check_host_abi(host, api, "the plugin");
    std::lock_guard lock(init_mutex);
    if (PluginState* ready = g_state.load(std::memory_order_acquire)) {
      *api = &ready->table;
      return;
    }
    auto s = std::make_unique<PluginState>();
    s->name = name;
    s->version = version;
    if (host_has_log(host)) {
      s->host_log = host->log;
      s->log_level = host->log_level;
    }
    fill_table(*s);
    supports_error_sink.store(
        [](const char* op, const char* message) noexcept {
          log(KILN_LOG_ERROR, std::string(op) + ": " + message);
        },
        std::memory_order_release);
    // Published before the backend is built, so that its constructor may log.
    g_state.store(s.get(), std::memory_order_release);
    try {
      // Constructed once (a throw leaves it unbuilt, and the next init tries again) and
      // never destroyed: buffers a program frees while its statics are destroyed at
      // exit still reach a live backend.
      static B* const backend_instance = new B();
      s->backend = backend_instance;
      s->description = backend_instance->describe();
      if (backend_instance->peer_copies()) s->table.copy_peer = &copy_peer;
    } catch (...) {
      g_state.store(nullptr, std::memory_order_release);
      throw;
    }
    *api = &s.release()->table;  // lives for the process, as the ABI requires
  });
}

}  // namespace kiln::sdk::detail

#endif  // KILN_SDK_DETAIL_PLUGIN_ENTRIES_H
