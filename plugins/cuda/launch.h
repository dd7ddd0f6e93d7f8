// launch.h — the contract between the CUDA plugin's runtime and its kernel files.
//
// A kernel file defines each op as `void impl(const sdk::OpArgs& args, const Launch& l)`
// and lists it with its `add_*_kernels(KernelList&)`. `impl` enqueues its work on
// `l.stream()` and returns without synchronizing; it throws kiln::sdk::Error for bad
// arguments (the runtime turns that into a status prefixed with the op's name).
// Operand data pointers are device pointers on `l.device()`.
//
// Errors that only the GPU can see (an out-of-range index read from device memory)
// are reported through `l.error_flag()`: a kernel writes a nonzero code there and the
// runtime raises the error, naming the op, at the next synchronization point (or at
// once under KILN_CUDA_SYNC=1).
#ifndef KILN_CUDA_LAUNCH_H
#define KILN_CUDA_LAUNCH_H

#include <cublasLt.h>
#include <cublas_v2.h>
#include <cuda_runtime.h>
#include <cudnn.h>

#include <cstddef>
#include <cstdint>
#include <vector>

#include "kiln/c_api.h"
#include "kiln/sdk/kernel_table.h"  // sdk::SupportsFn
#include "kiln/sdk/op_args.h"
#include "kiln/sdk/status.h"

namespace kiln::cuda {

class CudaDevice;    // one GPU: ordinal, properties, caching allocator, handles (device.h)
struct LaunchState;  // the runtime's bookkeeping for one kernel call (kernel_call.h)

/// Codes a kernel writes through Launch::error_flag(); the runtime turns them into
/// INVALID_ARGUMENT messages using the values the kernel put in error_detail().
enum DeviceErrorCode : int32_t {
  kDeviceErrorIndexOutOfRange = 1,   ///< detail: {index, size of the dimension, dimension}
  kDeviceErrorTargetOutOfRange = 2,  ///< detail: {target, number of classes, position}
};

/// What one kernel call runs with. Cheap to construct; valid during the call only.
class Launch {
 public:
  Launch(CudaDevice& device, cudaStream_t stream) noexcept : device_(&device), stream_(stream) {}

  CudaDevice& device() const noexcept { return *device_; }
  cudaStream_t stream() const noexcept { return stream_; }
  int ordinal() const noexcept;  // the CUDA device number
  int multiprocessor_count() const noexcept;

  /// Library handles of this device, bound to stream() (created on first use).
  cublasHandle_t cublas() const;
  cublasLtHandle_t cublaslt() const;
  cudnnHandle_t cudnn() const;

  /// Stream-ordered scratch memory of at least `bytes` (256-byte aligned), from the
  /// caching allocator; released when the kernel returns, after the work already
  /// enqueued on stream() (so enqueued work may keep using it).
  void* scratch(size_t bytes) const;

  /// Device pointer to an int32 the kernel may set nonzero (see the file comment);
  /// `describe` turns the code into the message. Cleared by the runtime.
  int32_t* error_flag() const;

  /// TF32 tensor cores allowed for float32 GEMM/convolution
  /// (kiln::set_matmul_precision("high") / KILN_MATMUL_PRECISION=high).
  bool allow_tf32(const sdk::OpArgs& args) const;

  // -- added by the runtime ------------------------------------------------------------

  /// The runtime's constructor: `state` collects the call's scratch memory and error
  /// slot (the two-argument constructor has none: scratch() then throws).
  Launch(CudaDevice& device, cudaStream_t stream, LaunchState* state) noexcept
      : device_(&device), stream_(stream), state_(state) {}

  /// Device pointer to the three int64 that go with error_flag(): a kernel that finds
  /// bad data claims the flag first, then fills them (kernels/common.cuh has
  /// report_device_error for this):
  ///   if (atomicCAS(flag, 0, kDeviceErrorIndexOutOfRange) == 0) { detail[0] = ...; }
  int64_t* error_detail() const;

  /// The catalogue name of the op being run ("kiln.gather").
  const char* op_name() const noexcept;

 private:
  CudaDevice* device_;
  cudaStream_t stream_;
  LaunchState* state_ = nullptr;
};

using KernelImpl = void (*)(const sdk::OpArgs& args, const Launch& launch);

struct KernelEntry {
  const char* name;  // catalogue name, "kiln.matmul"
  KernelImpl impl;
  sdk::SupportsFn supports;  // nullptr: every valid argument list
  uint32_t flags;            // KILN_KERNEL_*
};
using KernelList = std::vector<KernelEntry>;

/// Throws sdk::Error naming `what` and the library's error string unless OK.
void check(cudaError_t status, const char* what);
void check(cublasStatus_t status, const char* what);
void check(cudnnStatus_t status, const char* what);

}  // namespace kiln::cuda

#define KILN_CUDA_CHECK(expr) ::kiln::cuda::check((expr), #expr)

#endif  // KILN_CUDA_LAUNCH_H
