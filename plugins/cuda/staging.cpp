#include "staging.h"

#include <algorithm>
#include <cstring>
#include <limits>

#include "device.h"
#include "kiln/sdk/status.h"

namespace kiln::cuda {

namespace {
constexpr size_t kNoRoom = std::numeric_limits<size_t>::max();
}  // namespace

bool Staging::is_pinned(const void* host) {
  cudaPointerAttributes attributes{};
  if (cudaPointerGetAttributes(&attributes, host) != cudaSuccess) {
    cudaGetLastError();  // older drivers call pageable memory an invalid value
    return false;
  }
  return attributes.type == cudaMemoryTypeHost;
}

void Staging::ensure_ring() {
  if (ring_ != nullptr) return;
  void* memory = nullptr;
  // Portable: the ring may serve copies whatever device is current on the thread.
  if (const cudaError_t status = cudaHostAlloc(&memory, kRingBytes, cudaHostAllocPortable);
      status != cudaSuccess) {
    device_.fail(status, "allocating the pinned staging buffer");
  }
  ring_ = static_cast<char*>(memory);
}

void Staging::retire_completed() {
  while (!in_flight_.empty() && !in_flight_.front().host_busy &&
         device_.event_done(in_flight_.front().event)) {
    device_.events().put(in_flight_.front().event);
    in_flight_.pop_front();
  }
}

// Ring regions are handed out in order; the free space is what lies between the end of
// the newest region (head_) and the start of the oldest one still in flight.
size_t Staging::reserve(size_t bytes) {
  for (;;) {
    retire_completed();
    if (in_flight_.empty()) {
      head_ = 0;
      return 0;
    }
    const size_t tail = in_flight_.front().begin;
    if (head_ > tail) {
      if (kRingBytes - head_ >= bytes) return head_;
      if (tail >= bytes) return 0;  // wrap around
    } else if (head_ < tail) {
      if (tail - head_ >= bytes) return head_;
    }
    // Full. The oldest region is a chunk this very call still has to copy out: the
    // caller must drain it first.
    if (in_flight_.front().host_busy) return kNoRoom;
    device_.wait_for_event(in_flight_.front().event, "waiting for the staging buffer");
  }
}

void Staging::host_to_device(void* dst, const void* src, size_t bytes, cudaStream_t stream) {
  if (bytes == 0) return;
  std::lock_guard lock(mutex_);
  if (bytes >= kChunkBytes && is_pinned(src)) {
    // Already pinned: one DMA, no memcpy. The wait is the ABI's promise that `src` may
    // be reused on return.
    if (const cudaError_t status = cudaMemcpyAsync(dst, src, bytes, cudaMemcpyHostToDevice, stream);
        status != cudaSuccess) {
      device_.fail(status, "cudaMemcpyAsync (host to device)");
    }
    cudaEvent_t event = device_.events().get();
    try {
      device_.record_cuda_event(event, stream, "recording a copy event");
      device_.wait_for_event(event, "copy (host to device, pinned)");
    } catch (...) {
      device_.events().put(event);
      throw;
    }
    device_.events().put(event);
    return;
  }
  ensure_ring();
  const char* from = static_cast<const char*>(src);
  char* to = static_cast<char*>(dst);
  for (size_t done = 0; done < bytes;) {
    const size_t n = std::min(kChunkBytes, bytes - done);
    const size_t offset = reserve(n);
    std::memcpy(ring_ + offset, from + done, n);
    if (const cudaError_t status =
            cudaMemcpyAsync(to + done, ring_ + offset, n, cudaMemcpyHostToDevice, stream);
        status != cudaSuccess) {
      device_.fail(status, "cudaMemcpyAsync (host to device)");
    }
    cudaEvent_t event = device_.events().get();
    try {
      device_.record_cuda_event(event, stream, "recording a staging event");
      in_flight_.push_back(InFlight{offset, offset + n, event, false});
    } catch (...) {
      // The region cannot be tracked, so it must not be reused before the copy ends.
      device_.wait_stream(stream, "copy (host to device)");
      device_.events().put(event);
      throw;
    }
    head_ = offset + n;
    done += n;
  }
}

void Staging::device_to_host(void* dst, const void* src, size_t bytes, cudaStream_t stream) {
  if (bytes == 0) return;
  std::lock_guard lock(mutex_);
  if (is_pinned(dst)) {
    if (const cudaError_t status = cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDeviceToHost, stream);
        status != cudaSuccess) {
      device_.fail(status, "cudaMemcpyAsync (device to host)");
    }
    device_.wait_stream(stream, "copy (device to host)");
    return;
  }
  ensure_ring();
  // Chunks waiting to be copied out, oldest first: (offset in dst, size, ring offset,
  // event). At most two, so one lands while the previous one is copied out.
  struct Pending {
    size_t done;
    size_t size;
    size_t ring_offset;
    cudaEvent_t event;
  };
  std::deque<Pending> pending;
  auto copy_out_oldest = [&] {
    const Pending p = pending.front();
    if (const cudaError_t status = cudaEventSynchronize(p.event); status != cudaSuccess) {
      device_.fail(status, "copy (device to host)");
    }
    std::memcpy(static_cast<char*>(dst) + p.done, ring_ + p.ring_offset, p.size);
    for (InFlight& f : in_flight_) {
      if (f.event == p.event) f.host_busy = false;
    }
    pending.pop_front();
  };
  // The whole call is one host synchronization, however many chunks it takes.
  device_.count_host_wait();
  try {
    const char* from = static_cast<const char*>(src);
    size_t done = 0;
    while (done < bytes || !pending.empty()) {
      if (done < bytes && pending.size() < 2) {
        const size_t n = std::min(kChunkBytes, bytes - done);
        const size_t offset = reserve(n);
        if (offset == kNoRoom) {
          copy_out_oldest();
          continue;
        }
        if (const cudaError_t status =
                cudaMemcpyAsync(ring_ + offset, from + done, n, cudaMemcpyDeviceToHost, stream);
            status != cudaSuccess) {
          device_.fail(status, "cudaMemcpyAsync (device to host)");
        }
        cudaEvent_t event = device_.events().get();
        in_flight_.push_back(InFlight{offset, offset + n, event, true});
        head_ = offset + n;
        device_.record_cuda_event(event, stream, "recording a staging event");
        pending.push_back(Pending{done, n, offset, event});
        done += n;
      } else {
        copy_out_oldest();
      }
    }
  } catch (...) {
    // Leave no region marked busy forever: the copies may still be running, so wait
    // for the stream (best effort) before the regions can be reused.
    cudaStreamSynchronize(stream);
    cudaGetLastError();
    for (InFlight& f : in_flight_) f.host_busy = false;
    throw;
  }
}

}  // namespace kiln::cuda
