// copies.cpp — CudaDevice::copy: host<->device through pinned staging (staging.h),
// device<->device on the copy engines, and peer copies between GPUs (inside copy, for
// pointers on another GPU, and as the ABI's copy_peer).
#include <cuda_runtime.h>

#include <mutex>
#include <set>
#include <utility>

#include "device.h"
#include "error_flags.h"
#include "kiln/sdk/status.h"
#include "staging.h"
#include "streams.h"

namespace kiln::cuda {

namespace {

// The CUDA device a pointer's memory lives on, or -1 for host memory.
int device_of(const void* pointer) {
  cudaPointerAttributes attributes{};
  if (cudaPointerGetAttributes(&attributes, pointer) != cudaSuccess) {
    cudaGetLastError();
    return -1;
  }
  return attributes.type == cudaMemoryTypeDevice || attributes.type == cudaMemoryTypeManaged
             ? attributes.device
             : -1;
}

// Peer copies work without peer access (the driver stages them), but go straight over
// NVLink/PCIe with it. Enabled once per ordered pair, best effort.
void enable_peer_access(CudaDevice& device, int other) {
  static std::mutex mutex;
  static std::set<std::pair<int, int>> tried;
  std::lock_guard lock(mutex);
  if (!tried.insert({device.ordinal(), other}).second) return;
  int can_access = 0;
  if (cudaDeviceCanAccessPeer(&can_access, device.ordinal(), other) == cudaSuccess && can_access) {
    device.make_current();
    cudaDeviceEnablePeerAccess(other, 0);
  }
  cudaGetLastError();  // "already enabled" and friends are not errors of the copy
}

void device_to_device(CudaDevice& device, void* dst, const void* src, size_t bytes,
                      cudaStream_t stream) {
  const int src_device = device_of(src);
  const int dst_device = device_of(dst);
  if (src_device >= 0 && dst_device >= 0 &&
      (src_device != device.ordinal() || dst_device != device.ordinal())) {
    const int other = src_device != device.ordinal() ? src_device : dst_device;
    enable_peer_access(device, other);
    device.make_current();
    if (const cudaError_t status =
            cudaMemcpyPeerAsync(dst, dst_device, src, src_device, bytes, stream);
        status != cudaSuccess) {
      device.fail(status, "cudaMemcpyPeerAsync");
    }
    return;
  }
  if (const cudaError_t status = cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDeviceToDevice, stream);
      status != cudaSuccess) {
    device.fail(status, "cudaMemcpyAsync (device to device)");
  }
}

// The host waits for everything before the copy on this stream: the place to report
// what the GPU found in those ops. The error slots' readback is enqueued before the
// copy, so the copy's one wait covers it too (reading a loss is one host wait).
void copy_to_host_and_check(CudaDevice& device, void* dst, const void* src, size_t bytes,
                            cudaStream_t stream) {
  ErrorFlags& flags = device.error_flags();
  const bool pending = flags.pending(stream);
  ErrorFlags::Readback readback;
  if (pending) readback = flags.enqueue_readback(stream);
  try {
    device.staging().device_to_host(dst, src, bytes, stream);
  } catch (...) {
    flags.abandon(readback);
    throw;
  }
  if (pending) flags.check(readback, stream, ErrorFlags::kAll, "at a device-to-host copy");
  device.raise_deferred_error("at a device-to-host copy");
}

}  // namespace

// The kit has checked the kind and the pointers, and answers 0-byte copies itself.
void CudaDevice::copy(sdk::CopyKind kind, void* dst, const void* src, size_t bytes,
                      sdk::Stream* stream) {
  const cudaStream_t s = cuda_stream(stream);
  make_current();
  switch (kind) {
    case sdk::CopyKind::HostToDevice:
      staging_->host_to_device(dst, src, bytes, s);
      break;
    case sdk::CopyKind::DeviceToHost:
      copy_to_host_and_check(*this, dst, src, bytes, s);
      break;
    case sdk::CopyKind::DeviceToDevice:
      device_to_device(*this, dst, src, bytes, s);
      break;
  }
}

// The source's default stream is where the frontend wrote the source and where it will
// free or overwrite it next: the copy waits for the first and the second waits for the
// copy. The pool's events may go back at once: a wait holds the record it was made on.
void CudaDevice::copy_peer(void* dst, sdk::BackendDevice& src_device, const void* src, size_t bytes,
                           sdk::Stream* stream) {
  // The kit passes only this plugin's devices.
  auto& source = dynamic_cast<CudaDevice&>(src_device);
  const cudaStream_t s = cuda_stream(stream);
  if (source.ordinal() != ordinal_) enable_peer_access(*this, source.ordinal());
  cudaEvent_t source_ready = source.events().get();
  cudaEvent_t copied = nullptr;
  try {
    source.make_current();
    source.record_cuda_event(source_ready, source.default_stream(), "copy_peer (source ready)");
    make_current();
    if (const cudaError_t status = cudaStreamWaitEvent(s, source_ready, 0); status != cudaSuccess)
      fail(status, "cudaStreamWaitEvent (copy_peer)");
    if (const cudaError_t status =
            cudaMemcpyPeerAsync(dst, ordinal_, src, source.ordinal(), bytes, s);
        status != cudaSuccess) {
      fail(status, "cudaMemcpyPeerAsync");
    }
    note_op("copy_peer");
    copied = events_.get();
    record_cuda_event(copied, s, "copy_peer (copied)");
    source.make_current();
    if (const cudaError_t status = cudaStreamWaitEvent(source.default_stream(), copied, 0);
        status != cudaSuccess) {
      source.fail(status, "cudaStreamWaitEvent (copy_peer)");
    }
    make_current();
  } catch (...) {
    source.events().put(source_ready);
    events_.put(copied);
    throw;
  }
  source.events().put(source_ready);
  events_.put(copied);
}

}  // namespace kiln::cuda
