#include "copies.h"

#include <cuda_runtime.h>

#include <mutex>
#include <set>
#include <utility>

#include "device.h"
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
void enable_peer_access(Device& device, int other) {
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

void device_to_device(Device& device, void* dst, const void* src, size_t bytes,
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

}  // namespace

kiln_status* copy(kiln_device* device, kiln_stream* stream, int32_t kind, void* dst,
                  const void* src, size_t bytes) {
  // No "copy:" prefix: the frontend already says "copy on cuda:0", and every message
  // below names the CUDA call or the op that failed.
  return sdk::guard([&] {
    Device& d = from_handle(device);
    KILN_SDK_CHECK(kind >= KILN_COPY_HOST_TO_DEVICE && kind <= KILN_COPY_DEVICE_TO_DEVICE,
                   KILN_STATUS_INVALID_ARGUMENT, "copy: unknown copy kind ", kind);
    KILN_SDK_CHECK(bytes == 0 || (dst != nullptr && src != nullptr), KILN_STATUS_INVALID_ARGUMENT,
                   "copy: null pointer (dst ", dst, ", src ", src, ", ", bytes, " bytes)");
    if (bytes == 0) return;
    const cudaStream_t s = stream_of(d, stream);
    d.make_current();
    switch (kind) {
      case KILN_COPY_HOST_TO_DEVICE:
        d.staging().host_to_device(dst, src, bytes, s);
        break;
      case KILN_COPY_DEVICE_TO_HOST:
        d.staging().device_to_host(dst, src, bytes, s);
        // The host has waited for everything before the copy on this stream: the place
        // to report what the GPU found in those ops.
        check_device_errors(d, s, "at a device-to-host copy");
        break;
      default:
        device_to_device(d, dst, src, bytes, s);
        break;
    }
  });
}

}  // namespace kiln::cuda
