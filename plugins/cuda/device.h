// device.h — CudaDevice, one GPU as the plugin sees it: its CUDA ordinal and properties,
// and, once opened, its default stream, allocator, pinned staging, device-error slots,
// event pool and library handles. It is a BackendDevice of the plugin kit
// (kiln/sdk/plugin.h): a CachingDevice whose allocator's Allocation records are the
// buffer handles, with asynchronous streams and events on cudaStream_t and cudaEvent_t
// (streams.cpp) and copies through pinned staging (copies.cpp).
//
// A CudaDevice is created for every usable GPU when the plugin loads, without touching
// the GPU; `open()` (device_open) creates the CUDA context and everything else, once.
// Devices are never closed or destroyed: plugins are never unloaded, and tensors
// freed during static destruction must still find their device.
//
// Every call that works on the device makes it current first (`make_current`): Kiln
// never relies on the calling thread's current device, and leaves it set to the
// device it last used.
#ifndef KILN_CUDA_DEVICE_H
#define KILN_CUDA_DEVICE_H

#include <cublasLt.h>
#include <cublas_v2.h>
#include <cuda_runtime.h>
#include <cudnn.h>

#include <atomic>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "kiln/c_api.h"
#include "kiln/sdk/plugin.h"
#include "launch.h"
#include "plugin_state.h"

namespace kiln::cuda {

class Allocator;
class ErrorFlags;
class Staging;

class CudaDevice;

/// A stream made by stream_create: a non-blocking cudaStream_t of its device.
struct CudaStream : sdk::Stream {
  cudaStream_t stream = nullptr;
  // Checked by kernel calls, whose streams the kit does not check.
  const CudaDevice* owner = nullptr;
};

/// An event made by event_create (timing enabled, for event_elapsed).
struct CudaEvent : sdk::Event {
  cudaEvent_t event = nullptr;
  // Set by record_event: the stream and the error-slot watermark at that point, so
  // synchronize_event checks exactly the ops the event covers.
  cudaStream_t recorded_on = nullptr;
  uint64_t watermark = 0;
};

/// Reusable cudaEvent_t (timing disabled) of one device. Thread-safe.
class EventPool {
 public:
  explicit EventPool(CudaDevice& device) : device_(device) {}
  /// An event of this device; throws on CUDA failure.
  cudaEvent_t get();
  /// Returns an event (recorded or not) for reuse. Never throws.
  void put(cudaEvent_t event) noexcept;

 private:
  CudaDevice& device_;
  std::mutex mutex_;
  std::vector<cudaEvent_t> free_;
};

class CudaDevice final : public sdk::CachingDevice {
 public:
  CudaDevice(int32_t index, int ordinal, const cudaDeviceProp& properties, const Config& config);
  ~CudaDevice() override;  // never runs in practice: devices live as long as the process
  CudaDevice(const CudaDevice&) = delete;
  CudaDevice& operator=(const CudaDevice&) = delete;

  // -- the kit's BackendDevice (the ABI's entries; the kit has checked handles and arguments)
  /// Creates the context and the per-device machinery on the first call; later calls
  /// return at once. Thread-safe; throws kiln::sdk::Error (DEVICE_ERROR) on failure,
  /// and a later call tries again.
  void open() override;
  Block allocate_block(size_t bytes, size_t alignment, sdk::Stream* stream) override;
  void deallocate_block(kiln_buffer* handle, sdk::Stream* stream) override;
  /// HOST_TO_DEVICE returns once `src` may be reused (the GPU copy may still be
  /// queued); DEVICE_TO_HOST returns once `dst` holds the data, and reports any
  /// device-side error of the ops before it on the stream; DEVICE_TO_DEVICE is
  /// enqueued only. A DEVICE_TO_DEVICE copy whose source or destination lives on
  /// another GPU (unified addressing tells) becomes a peer copy, ordered on `stream`
  /// of this device only: work on the other GPU must be ordered with events.
  void copy(sdk::CopyKind kind, void* dst, const void* src, size_t bytes,
            sdk::Stream* stream) override;
  /// copy_peer (ABI 1.1): cudaMemcpyPeerAsync on `stream` of this (the destination)
  /// device, after the source device's default stream (an event), which in turn waits
  /// for the copy, so neither side touches the bytes while they move. Enqueued only.
  void copy_peer(void* dst, sdk::BackendDevice& src_device, const void* src, size_t bytes,
                 sdk::Stream* stream) override;
  void properties(kiln_device_properties& properties) override;
  void memory_stats(kiln_memory_stats& stats) override;
  void empty_cache() override;
  std::unique_ptr<sdk::Stream> create_stream() override;
  void destroy_stream(sdk::Stream& stream) override;
  void synchronize(sdk::Stream* stream) override;
  std::unique_ptr<sdk::Event> create_event() override;
  void destroy_event(sdk::Event& event) override;
  void record_event(sdk::Event& event, sdk::Stream* stream) override;
  void wait_event(sdk::Stream* stream, sdk::Event& event) override;
  void synchronize_event(sdk::Event& event) override;
  double elapsed_ms(sdk::Event& start, sdk::Event& end) override;
  const sdk::KernelTable* kernels() override;

  /// The CUDA stream behind a kit stream of this device (nullptr: the default stream).
  cudaStream_t cuda_stream(sdk::Stream* stream) const noexcept {
    return stream != nullptr ? static_cast<CudaStream*>(stream)->stream : default_stream_;
  }

  int32_t index() const noexcept { return index_; }
  int ordinal() const noexcept { return ordinal_; }
  const cudaDeviceProp& properties() const noexcept { return properties_; }
  const Config& config() const noexcept { return config_; }
  /// "cuda:0", for messages.
  const std::string& label() const noexcept { return label_; }
  bool is_open() const noexcept { return open_.load(std::memory_order_acquire); }

  /// Makes this device the calling thread's current CUDA device.
  void make_current() const;

  /// The device's default stream: created non-blocking, so it never serializes with
  /// the legacy stream 0 that other code in the process may use.
  cudaStream_t default_stream() const noexcept { return default_stream_; }
  /// An internal stream used only to read device-error slots back after an
  /// event_synchronize.
  cudaStream_t check_stream() const noexcept { return check_stream_; }

  Allocator& allocator() noexcept { return *allocator_; }
  ErrorFlags& error_flags() noexcept { return *error_flags_; }
  Staging& staging() noexcept { return *staging_; }
  EventPool& events() noexcept { return events_; }
  /// A valid device pointer for 0-byte allocations (never read or written).
  void* empty_allocation() const noexcept { return empty_allocation_; }

  /// Library handles of the calling thread for this device, created on first use
  /// (one per thread, so threads driving one device never race on a handle's stream).
  cublasHandle_t cublas_handle();
  cublasLtHandle_t cublaslt_handle();
  cudnnHandle_t cudnn_handle();

  // -- host waits: every place the plugin blocks the calling thread on GPU work ------
  // Each counts one host synchronization (see the kiln.cuda.debug extension) and
  // turns a CUDA error into kiln::sdk::Error naming `what`, the device, and the last
  // op enqueued on it.
  void wait_stream(cudaStream_t stream, const char* what);
  void wait_for_event(cudaEvent_t event, const char* what);
  void wait_device(const char* what);
  /// Counts a host wait done elsewhere (a synchronous CUDA call).
  void count_host_wait() noexcept { host_syncs_.fetch_add(1, std::memory_order_relaxed); }

  /// Whether the work `event` recorded is done, without waiting (cudaEventQuery).
  bool event_done(cudaEvent_t event);
  /// cudaEventRecord(event, stream); throws naming `what` on failure.
  void record_cuda_event(cudaEvent_t event, cudaStream_t stream, const char* what);

  // -- errors found after the work was enqueued -----------------------------------------
  /// Records an error that no call can return because it struck work already enqueued:
  /// a collective aborted after its call returned (a peer that never came, NCCL's
  /// asynchronous error), whose kernels then end early and leave the output undefined.
  /// The next synchronization point of this device (stream_synchronize,
  /// event_synchronize, a device-to-host copy), on any of its streams, throws it with
  /// `code`, once; a later error while one is pending is dropped (the first explains
  /// it). Thread-safe; never throws.
  void post_deferred_error(kiln_status_code code, const std::string& message) noexcept;
  /// Throws the error post_deferred_error recorded, if any, and forgets it; `where`
  /// says which call found it. Cheap when there is none (one atomic load).
  void raise_deferred_error(const char* where);

  /// Records that `op` was enqueued (for counters and error messages).
  void note_op(const char* op) noexcept {
    op_calls_.fetch_add(1, std::memory_order_relaxed);
    last_op_.store(op, std::memory_order_relaxed);
  }
  /// Throws DEVICE_ERROR "<what> on cuda:N: <CUDA error> (last op enqueued: ...)"
  /// for a failed CUDA call (clearing the runtime's error state when it can be).
  [[noreturn]] void fail(cudaError_t status, const char* what) const;

  /// Live streams created through stream_create: while there are none, memory is
  /// only ever used on the default stream and frees need no event.
  std::atomic<int32_t>& user_streams() noexcept { return user_streams_; }

  struct Counters {
    uint64_t host_synchronizations;
    uint64_t op_calls;
    uint64_t error_flag_readbacks;
  };
  Counters counters() const noexcept;
  void count_error_readback() noexcept { flag_reads_.fetch_add(1, std::memory_order_relaxed); }

  static constexpr size_t kAlignment = 256;  // of every allocation (cudaMalloc's guarantee)

 private:
  void open_locked();

  int32_t index_;
  int ordinal_;
  cudaDeviceProp properties_;
  Config config_;
  std::string label_;

  std::mutex open_mutex_;
  std::atomic<bool> open_{false};
  cudaStream_t default_stream_ = nullptr;
  cudaStream_t check_stream_ = nullptr;
  void* empty_allocation_ = nullptr;
  EventPool events_;
  std::unique_ptr<Allocator> allocator_;
  std::unique_ptr<ErrorFlags> error_flags_;
  std::unique_ptr<Staging> staging_;

  std::atomic<int32_t> user_streams_{0};
  std::atomic<uint64_t> host_syncs_{0};
  std::atomic<uint64_t> op_calls_{0};
  std::atomic<uint64_t> flag_reads_{0};
  std::atomic<const char*> last_op_{nullptr};

  std::atomic<bool> deferred_pending_{false};
  std::mutex deferred_mutex_;
  kiln_status_code deferred_code_ = KILN_STATUS_OK;
  std::string deferred_message_;
};

/// "1.5 GiB", for messages.
std::string human_bytes(uint64_t bytes);

}  // namespace kiln::cuda

#endif  // KILN_CUDA_DEVICE_H
