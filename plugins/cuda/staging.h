// staging.h — host<->device copies through a ring of pinned (page-locked) memory.
//
// The ABI hands `copy` ordinary pageable host memory and promises the caller that a
// host-to-device source may be reused when the call returns and that device-to-host
// data is there when it returns. DMA needs pinned memory, so:
//
//  - host -> device: the bytes are copied into the ring (a memcpy on the calling
//    thread) and a cudaMemcpyAsync from the ring is enqueued on the stream; the call
//    returns without waiting for the GPU. The ring region is reused once an event
//    recorded after that copy has completed (queried, not waited for), so a training
//    loop's uploads never block unless 8 MiB of uploads are still queued behind
//    unfinished work.
//  - device -> host: chunks are copied into the ring on the stream and out to the
//    destination as each one lands (two in flight, so the DMA of one overlaps the
//    memcpy of the previous one). This is a host synchronization by definition.
//
// Copies larger than a chunk (2 MiB) go through in chunks. Pinned host memory the
// caller already has skips the ring: device -> host copies DMA straight into it, and
// large host -> device copies DMA straight from it and then wait (the source must be
// reusable when the call returns).
#ifndef KILN_CUDA_STAGING_H
#define KILN_CUDA_STAGING_H

#include <cuda_runtime.h>

#include <cstddef>
#include <deque>
#include <mutex>

namespace kiln::cuda {

class CudaDevice;

class Staging {
 public:
  static constexpr size_t kRingBytes = size_t{8} << 20;
  static constexpr size_t kChunkBytes = size_t{2} << 20;

  explicit Staging(CudaDevice& device) : device_(device) {}
  Staging(const Staging&) = delete;
  Staging& operator=(const Staging&) = delete;

  /// Enqueues a copy of src[0, bytes) (host memory) to dst (device memory) on `stream`;
  /// `src` may be reused on return. Throws kiln::sdk::Error on CUDA failure.
  void host_to_device(void* dst, const void* src, size_t bytes, cudaStream_t stream);

  /// Copies src[0, bytes) (device memory) to dst (host memory) after the work already
  /// enqueued on `stream`; returns when the bytes are in `dst`.
  void device_to_host(void* dst, const void* src, size_t bytes, cudaStream_t stream);

 private:
  struct InFlight {
    size_t begin;
    size_t end;
    cudaEvent_t event;
    bool host_busy;  // a device->host chunk not yet copied out: not reusable yet
  };

  static bool is_pinned(const void* host);
  void ensure_ring();
  // A region of `bytes` (<= kChunkBytes) of the ring, waiting for the oldest copy in
  // flight only when the ring is full. Returns its offset (the caller pushes the
  // InFlight entry that covers it), or SIZE_MAX when the oldest region is a
  // device->host chunk the caller has not copied out yet.
  size_t reserve(size_t bytes);
  void retire_completed();

  CudaDevice& device_;
  std::mutex mutex_;  // one copy at a time per device: the ring is shared
  char* ring_ = nullptr;
  size_t head_ = 0;                 // end of the newest region
  std::deque<InFlight> in_flight_;  // oldest first
};

}  // namespace kiln::cuda

#endif  // KILN_CUDA_STAGING_H
