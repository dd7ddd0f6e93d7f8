// error_flags.h — errors only the GPU can see (an index read from device memory that
// is out of range), reported without making any op wait for the GPU.
//
// Each launch that asks for Launch::error_flag() gets its own slot in a small array
// in device memory (ErrorSlot: a code and three details), and the runtime keeps a
// host-side record of which op on which stream owns which slot. A kernel that finds
// bad data claims its slot with atomicCAS(code, 0, value) and fills the details.
//
// Nothing is read back when the op is enqueued. At the next synchronization point of
// that stream (stream_synchronize, event_synchronize of an event recorded after it,
// a device-to-host copy), and only if such records are pending, the slot array is
// copied to a pinned mirror in the same stream order and checked: the first record
// (in launch order) whose slot is set becomes the error of that synchronization,
// INVALID_ARGUMENT "<op>: index 7 is out of range for dimension 0 of size 5 (...)";
// its slot is cleared, and every checked slot is free again. KILN_CUDA_SYNC=1 checks
// right after each op instead.
//
// 256 slots: more launches than that between two synchronizations of their streams is
// rare, and then the runtime waits for the device and checks everything to free them.
#ifndef KILN_CUDA_ERROR_FLAGS_H
#define KILN_CUDA_ERROR_FLAGS_H

#include <cuda_runtime.h>

#include <cstdint>
#include <deque>
#include <limits>
#include <mutex>
#include <string>
#include <vector>

namespace kiln::cuda {

class CudaDevice;

/// One slot, as kernels see it (device memory).
struct ErrorSlot {
  int32_t code;  // 0: no error; a DeviceErrorCode (launch.h) otherwise
  int32_t reserved;
  int64_t detail[3];
};
static_assert(sizeof(ErrorSlot) == 32, "ErrorSlot is copied as raw bytes");

class ErrorFlags {
 public:
  static constexpr int kSlots = 256;
  static constexpr size_t kSpareBytes = 256;
  static constexpr uint64_t kAll = std::numeric_limits<uint64_t>::max();

  explicit ErrorFlags(CudaDevice& device) : device_(device) {}
  ErrorFlags(const ErrorFlags&) = delete;
  ErrorFlags& operator=(const ErrorFlags&) = delete;

  /// Allocates and zeroes the slots (waits once, at device open). Throws on failure.
  void init();

  /// kSpareBytes of device memory next to the slots that nothing reads or writes: the
  /// pointer every 0-byte allocation gets.
  void* spare_device_bytes() const noexcept { return spare_; }

  /// A zeroed slot, recorded as owned by `op` (a string that lives for the process)
  /// launched on `stream`. Does not wait, except in the rare case described above.
  ErrorSlot* acquire(const char* op, cudaStream_t stream);

  /// The sequence number the next acquired slot will get: an event records it, so its
  /// synchronization checks exactly the launches enqueued before it.
  uint64_t watermark() const;

  /// Whether launches on `stream` numbered below `before` own slots not yet checked.
  bool pending(cudaStream_t stream, uint64_t before = kAll) const;

  /// A readback in flight: the mirror it fills and the records it covers.
  struct Readback {
    ErrorSlot* mirror = nullptr;
    uint64_t limit = 0;
  };

  /// Enqueues a copy of every slot to a pinned mirror on `stream`, after the work
  /// already enqueued there.
  Readback enqueue_readback(cudaStream_t stream);

  /// Once the readback's copy has completed (its stream was synchronized): checks and
  /// frees the slots of launches on `stream` numbered below `before` (and covered by
  /// the readback). Throws kiln::sdk::Error (INVALID_ARGUMENT) naming the first op that
  /// reported an error, with `where` (the call that found it) in the message.
  void check(Readback& readback, cudaStream_t stream, uint64_t before, const char* where);

  /// Gives back a readback's mirror without checking (an error came first).
  void abandon(Readback& readback) noexcept;

  /// Records of `from` (a stream being destroyed, after `to` was made to wait for it)
  /// now belong to `to`.
  void retag_stream(cudaStream_t from, cudaStream_t to);

 private:
  struct Record {
    uint64_t seq;
    int slot;
    cudaStream_t stream;
    const char* op;
  };

  ErrorSlot* take_mirror();
  void reclaim_all_locked();
  std::string describe(const Record& record, const ErrorSlot& slot, const char* where) const;

  CudaDevice& device_;
  ErrorSlot* slots_ = nullptr;  // device memory, kSlots of them, then the spare bytes
  void* spare_ = nullptr;
  mutable std::mutex mutex_;
  std::vector<int> free_;
  std::deque<Record> records_;  // in launch order
  uint64_t next_seq_ = 0;
  std::vector<ErrorSlot*> mirrors_;  // pinned host buffers not in use
};

}  // namespace kiln::cuda

#endif  // KILN_CUDA_ERROR_FLAGS_H
