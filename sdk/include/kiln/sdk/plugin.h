// kiln/sdk/plugin.h — write a Kiln backend as a few C++ classes; the kit makes the C ABI.
//
// A plugin author derives a BackendDevice (memory, copies, optionally streams, events and
// kernels) and a Backend (how many devices, which one is which), and names the
// backend in KILN_SDK_PLUGIN. The kit then provides everything the ABI asks of a
// plugin: the exported entry point `kiln_plugin_init`, the version negotiation, the
// `kiln_plugin_api` table, struct-size handling in both directions, validation of
// handles and arguments, allocator statistics, and the translation of C++ exceptions
// into owned `kiln_status` values (kiln/sdk/status.h). No exception ever crosses the
// boundary.
//
// The smallest backend: host memory, one device, no kernels (every op then runs on
// the CPU plugin through the frontend's fallback, counted in kiln::fallback_report()):
//
// @code
//   #include <kiln/sdk/plugin.h>
//
//   class HostDevice : public kiln::sdk::BackendDevice {
//    public:
//     void* allocate(size_t bytes, size_t alignment, kiln::sdk::Stream*) override {
//       return std::aligned_alloc(alignment, (bytes + alignment - 1) / alignment * alignment
//                                              + (bytes == 0 ? alignment : 0));
//     }
//     void deallocate(void* data, kiln::sdk::Stream*) override { std::free(data); }
//     void copy(kiln::sdk::CopyKind, void* dst, const void* src, size_t bytes,
//               kiln::sdk::Stream*) override { std::memcpy(dst, src, bytes); }
//   };
//   KILN_SDK_PLUGIN(kiln::sdk::SingleDeviceBackend<HostDevice>, "host", "0.1.0")
// @endcode
//
// Kernels are added by returning a kiln::sdk::KernelTable from BackendDevice::kernels()
// (kiln/sdk/kernel_table.h); each op is optional. share/doc/kiln/examples/plugin-template
// is a complete, commented backend built this way, and Kiln's CPU plugin (plugins/cpu
// in the Kiln sources: several devices, a caching allocator, extensions) is a
// full-size one. share/doc/kiln/plugin-guide.md walks through writing one.
//
// What the kit guarantees the author (the ABI's rules, applied once here):
//   - Every virtual function may throw; kiln::sdk::Error keeps its status code,
//     std::bad_alloc becomes OUT_OF_MEMORY, anything else INTERNAL. Messages are
//     prefixed with the plugin, the function and the device ("acme: allocate on
//     acme:0: ...").
//   - Handles are checked before the author sees them: a null, unknown, or already
//     destroyed device, buffer, stream or event is INVALID_ARGUMENT, not a crash.
//   - Arguments are checked too: alignment a power of two, copy kind, null pointers.
//   - Structs the caller sized (properties, memory statistics, kernels) are written
//     only as far as their struct_size reaches, so older and newer frontends work.
//   - Memory statistics are kept by the kit (bytes in use, peak, allocation count);
//     BackendDevice::memory_stats may refine them (e.g. bytes reserved by a cache).
//   - Streams and events default to a synchronous device: every call completes its
//     work before it returns, so synchronizing and waiting have nothing to do. An
//     asynchronous backend overrides the stream and event functions together:
//     create_stream, destroy_stream, synchronize, create_event, destroy_event,
//     record_event, wait_event, synchronize_event and elapsed_ms. A kernel finds its
//     stream with stream_from_handle(args.raw().stream) (below). A
//     stream may wait for an event of any device of the plugin; the default (NULL)
//     stream is never destroyed.
//   - A device with a caching allocator derives CachingDevice: its block records are
//     the buffer handles, and the allocation path (every op's) takes no lock of the
//     kit's. Devices that copy to each other directly say so with
//     Backend::peer_copies() and implement BackendDevice::copy_peer.
//   - The backend is constructed once and never destroyed, so memory a program frees
//     while its statics are destroyed at exit still reaches a live device.
//
// Threading: the kit's bookkeeping is thread-safe; the author's functions may be
// called from any thread, concurrently (the ABI's rule), and must protect their own
// state.
#ifndef KILN_SDK_PLUGIN_H
#define KILN_SDK_PLUGIN_H

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <unordered_set>
#include <utility>
#include <vector>

#include "kiln/c_api.h"
#include "kiln/sdk/kernel_table.h"
#include "kiln/sdk/op_args.h"
#include "kiln/sdk/status.h"
#include "kiln/sdk/versioned.h"

namespace kiln::sdk {

/// The direction of a copy (kiln_copy_kind).
enum class CopyKind : int32_t {
  HostToDevice = KILN_COPY_HOST_TO_DEVICE,
  DeviceToHost = KILN_COPY_DEVICE_TO_HOST,
  DeviceToDevice = KILN_COPY_DEVICE_TO_DEVICE,
};

/// A stream handle. The default implementation carries nothing (a synchronous device
/// runs everything at once); an asynchronous backend derives its own and returns it
/// from BackendDevice::create_stream. The kit owns the object until stream_destroy.
class Stream {
 public:
  virtual ~Stream() = default;
};

/// An event handle; same ownership as Stream.
class Event {
 public:
  virtual ~Event() = default;
  /// When event_record was last called for it, stamped by the kit (what the default
  /// BackendDevice::elapsed_ms measures for a synchronous device).
  std::chrono::steady_clock::time_point host_recorded_at{};
};

/// One device, as its plugin implements it (the frontend's handle to a device is
/// kiln::Device). A `Stream*` argument of nullptr means the device's default stream.
class BackendDevice {
 public:
  virtual ~BackendDevice() = default;

  // -- memory and copies (required) -------------------------------------------------

  /// Returns `bytes` of device memory aligned to at least `alignment` (a power of
  /// two, checked by the kit), usable by work on `stream` from now on. `bytes` may
  /// be 0: return any non-null pointer that deallocate accepts (it is never
  /// dereferenced). Throw (or return nullptr) when out of memory: the kit reports
  /// KILN_STATUS_OUT_OF_MEMORY with the request and the bytes in use.
  virtual void* allocate(size_t bytes, size_t alignment, Stream* stream) = 0;
  /// Releases memory from allocate once the work enqueued on `stream` is done.
  virtual void deallocate(void* data, Stream* stream) = 0;
  /// Copies `bytes` contiguous bytes (never 0: the kit answers those itself), in
  /// order on `stream`. Host memory is pageable: when this returns, a host source
  /// may be reused and a host destination must hold the data.
  virtual void copy(CopyKind kind, void* dst, const void* src, size_t bytes, Stream* stream) = 0;
  /// Copies `bytes` (never 0) from `src` on `src_device`, another device of this
  /// backend, to `dst` here, ordered after the work on `stream` (of this device) and
  /// on the source's default stream. Called only when Backend::peer_copies() is true;
  /// otherwise the frontend copies through the host with copy().
  virtual void copy_peer(void* dst, BackendDevice& src_device, const void* src, size_t bytes,
                         Stream* stream) {
    (void)dst;
    (void)src_device;
    (void)src;
    (void)bytes;
    (void)stream;
    throw Error(KILN_STATUS_UNSUPPORTED, "this device has no peer copies");
  }

  // -- opening (optional) -------------------------------------------------------------

  /// Called at every device_open of this device, before its handle is handed out: the
  /// place for what only a device in use needs (a context, streams, a memory pool),
  /// which listing the devices and their properties must not pay for. Must be cheap
  /// once done and safe to call concurrently; a throw fails that device_open, and the
  /// next one calls it again.
  virtual void open() {}

  // -- description (optional) -------------------------------------------------------

  /// Fills in what is known about the device. The kit has already written defaults:
  /// name "<plugin> device <index>", kind ACCELERATOR, multiprocessor_count 1,
  /// memory_alignment 0 (unknown), everything else 0.
  virtual void properties(kiln_device_properties& properties) { (void)properties; }
  /// Refines the statistics the kit keeps (bytes_in_use, peak_bytes_in_use and
  /// num_allocations are exact; bytes_reserved and num_system_allocations default to
  /// bytes_in_use and num_allocations, which is right for a non-caching allocator).
  virtual void memory_stats(kiln_memory_stats& stats) { (void)stats; }
  /// Returns cached, unused memory to the system.
  virtual void empty_cache() {}

  // -- streams and events (optional; defaults are those of a synchronous device) ---

  virtual std::unique_ptr<Stream> create_stream() { return std::make_unique<Stream>(); }
  /// Called before the kit deletes the stream.
  virtual void destroy_stream(Stream& stream) { (void)stream; }
  /// Blocks until the work on `stream` is done; reports its asynchronous errors.
  virtual void synchronize(Stream* stream) { (void)stream; }
  virtual std::unique_ptr<Event> create_event() { return std::make_unique<Event>(); }
  virtual void destroy_event(Event& event) { (void)event; }
  /// Marks the point in `stream` that `event` waits for.
  virtual void record_event(Event& event, Stream* stream) {
    (void)event;
    (void)stream;
  }
  /// Work enqueued on `stream` after this call waits for `event`, which may belong to
  /// any device of this backend (the kit checks it is a live event of one of them).
  virtual void wait_event(Stream* stream, Event& event) {
    (void)stream;
    (void)event;
  }
  virtual void synchronize_event(Event& event) { (void)event; }
  /// Device milliseconds from `start` to `end` (both recorded, their work done). The
  /// default is right for a synchronous device: the host time between the two
  /// event_record calls. An asynchronous device overrides it with its own timer.
  virtual double elapsed_ms(Event& start, Event& end) {
    return std::chrono::duration<double, std::milli>(end.host_recorded_at - start.host_recorded_at)
        .count();
  }

  // -- kernels (optional) -------------------------------------------------------------

  /// The ops this device runs natively, or nullptr for none. Must return the same
  /// table every time (the frontend caches the kernels it looks up).
  virtual const KernelTable* kernels() { return nullptr; }
};

/// The 1.0 name, kept for out-of-tree plugins through 1.x (warns when used).
using Device [[deprecated("renamed kiln::sdk::BackendDevice")]] = BackendDevice;

/// A device whose allocator keeps a record per block, as a caching allocator does:
/// the records are the kiln_buffer handles. The kit then keeps no registry, no lock and
/// no counters of its own on the allocation path, which every op takes. In exchange
/// the device checks the handles it is given back (a foreign or freed one must throw
/// INVALID_ARGUMENT, not crash) and memory_stats reports all of its statistics (the
/// kit's own counters stay 0). Both in-tree plugins are built this way.
class CachingDevice : public BackendDevice {
 public:
  /// What allocate_block returns: the handle the frontend gets and its memory.
  struct Block {
    kiln_buffer* handle;
    void* data;
  };
  /// As BackendDevice::allocate (same rules for `bytes`, `alignment` and out of memory),
  /// returning the block's handle as well.
  virtual Block allocate_block(size_t bytes, size_t alignment, Stream* stream) = 0;
  /// As BackendDevice::deallocate, for a handle allocate_block returned (checked here).
  virtual void deallocate_block(kiln_buffer* handle, Stream* stream) = 0;

 private:
  // Never called for a CachingDevice: the kit calls the block functions instead.
  void* allocate(size_t, size_t, Stream*) final { return nullptr; }
  void deallocate(void*, Stream*) final {}
};

/// The plugin as a whole: its devices. Constructed once, at the first
/// kiln_plugin_init (so a constructor may read the environment, probe drivers, and
/// throw: the loader then records the message and skips the plugin), and never
/// destroyed (plugins are never unloaded).
class Backend {
 public:
  virtual ~Backend() = default;
  /// How many devices there are; may be 0 (say why in describe()).
  virtual int32_t device_count() = 0;
  /// Device `index` (checked by the kit to be in [0, device_count())). Called once per
  /// index, when the frontend opens it; the reference must stay valid for the process.
  virtual BackendDevice& device(int32_t index) = 0;
  /// True when its devices copy to one another directly (BackendDevice::copy_peer); the kit
  /// then offers `copy_peer` in the plugin's table. Asked once, after construction.
  virtual bool peer_copies() { return false; }
  /// Free-form diagnostics for kiln-info (e.g. driver version, why there are no
  /// devices). Asked once; the kit keeps the text.
  virtual std::string describe() { return {}; }
  /// Profiler ranges (ABI 1.2): Kiln opens one per op and record_function scope on
  /// the calling thread while its profiler runs, for the backend's own tools (NVTX,
  /// ...). Must be cheap; an exception is dropped. Default: nothing.
  virtual void range_push(const char* name) { (void)name; }
  virtual void range_pop() {}
  /// Extension tables by name (ABI 1.x additions such as "kiln.collectives.v1").
  virtual const void* extension(const char* name) {
    (void)name;
    return nullptr;
  }
};

/// A backend with exactly one device of type D (default-constructed).
template <class D>
class SingleDeviceBackend : public Backend {
 public:
  int32_t device_count() override { return 1; }
  BackendDevice& device(int32_t) override { return device_; }

 private:
  D device_;
};

/// Writes one line to Kiln's log through the host's callback (if it has one and the
/// level is enabled). Never throws.
inline void log(kiln_log_level level, std::string_view message) noexcept;

}  // namespace kiln::sdk

// The kit's machinery: bookkeeping, then the C entry points.
#include "kiln/sdk/detail/plugin_entries.h"

namespace kiln::sdk {

inline void log(kiln_log_level level, std::string_view message) noexcept {
  detail::PluginState* s = detail::g_state.load(std::memory_order_acquire);
  if (s == nullptr || s->host_log == nullptr || level > s->log_level) return;
  try {
    const std::string text(message);
    s->host_log(level, s->name, text.c_str());
  } catch (...) {
  }
}

/// The BackendDevice behind a kiln_device handle that this kit handed out, e.g. in a kernel:
/// @code
///   auto& device = kiln::sdk::device_from_handle<MyDevice>(args.raw().outputs[0].device);
/// @endcode
/// Throws INVALID_ARGUMENT for a null or foreign handle or a BackendDevice of another type.
template <class D = BackendDevice>
D& device_from_handle(kiln_device* handle) {
  BackendDevice* device = detail::slot_of(handle).device;
  auto* typed = dynamic_cast<D*>(device);
  KILN_SDK_CHECK(typed != nullptr, KILN_STATUS_INVALID_ARGUMENT,
                 "the device handle belongs to another BackendDevice type");
  return *typed;
}

/// The Stream behind the `stream` of a kernel's arguments (nullptr: default stream).
/// Not validated (kernels are the hot path): the frontend passes only handles that
/// stream_create returned.
template <class S = Stream>
S* stream_from_handle(kiln_stream* handle) {
  return static_cast<S*>(reinterpret_cast<Stream*>(handle));
}

}  // namespace kiln::sdk

/// Defines the plugin's entry point for backend class `BackendClass` (default-
/// constructible, derived from kiln::sdk::Backend), named `name` ([a-z0-9_]+; the
/// file must be libkiln_<name>.so, as kiln_add_plugin names it) at plugin version
/// `version`. Use once per plugin, at namespace scope:
/// @code
///   KILN_SDK_PLUGIN(acme::Backend, "acme", "1.2.0")
/// @endcode
#define KILN_SDK_PLUGIN(BackendClass, name, version)                                         \
  static_assert(::kiln::sdk::detail::valid_backend_name(name),                               \
                "KILN_SDK_PLUGIN: the backend name must match [a-z0-9_]+");                  \
  extern "C" KILN_PLUGIN_EXPORT kiln_status* kiln_plugin_init(const kiln_host_api* host,     \
                                                              const kiln_plugin_api** api) { \
    return ::kiln::sdk::detail::plugin_init<BackendClass>(host, api, name, version);         \
  }

#endif  // KILN_SDK_PLUGIN_H
