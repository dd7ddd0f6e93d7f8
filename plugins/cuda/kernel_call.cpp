#include "kernel_call.h"

#include <nvtx3/nvToolsExt.h>

#include <algorithm>
#include <cstring>
#include <string>

#include "device.h"
#include "graphs.h"
#include "kernels/registry.h"
#include "kiln/sdk/status.h"
#include "streams.h"

namespace kiln::cuda {

namespace {

// An NVTX range for the op's host-side enqueue; Nsight Systems shows it above the
// kernels it launched. Costs a few nanoseconds when no tool is attached.
class NvtxRange {
 public:
  explicit NvtxRange(const char* name) noexcept { nvtxRangePushA(name); }
  ~NvtxRange() { nvtxRangePop(); }
  NvtxRange(const NvtxRange&) = delete;
  NvtxRange& operator=(const NvtxRange&) = delete;
};

// Releases the call's scratch memory when the call ends, thrown or not. Release is
// stream-ordered, so work the call enqueued may still use it.
class ScratchRelease {
 public:
  ScratchRelease(CudaDevice& device, cudaStream_t stream, LaunchState& state) noexcept
      : device_(device), stream_(stream), state_(state) {}
  ~ScratchRelease() {
    for (Allocation* a : state_.scratch) {
      try {
        device_.allocator().deallocate(a, stream_);
      } catch (const std::exception& e) {
        sdk::log(KILN_LOG_ERROR,
                 std::string(state_.op) + ": releasing scratch memory: " + e.what());
      }
    }
  }
  ScratchRelease(const ScratchRelease&) = delete;
  ScratchRelease& operator=(const ScratchRelease&) = delete;

 private:
  CudaDevice& device_;
  cudaStream_t stream_;
  LaunchState& state_;
};

kiln_status_code code_for(cudaError_t status) {
  switch (status) {
    case cudaErrorMemoryAllocation:
      return KILN_STATUS_OUT_OF_MEMORY;
    case cudaErrorInvalidValue:
      return KILN_STATUS_INVALID_ARGUMENT;
    case cudaErrorNotSupported:
      return KILN_STATUS_UNSUPPORTED;
    default:
      return KILN_STATUS_DEVICE_ERROR;
  }
}

}  // namespace

kiln_status* run_bound_kernel(void* context, const kiln_op_args* args) noexcept {
  const auto* entry = static_cast<const sdk::KernelEntry*>(context);
  if (entry == nullptr || entry->data == nullptr || args == nullptr) {
    return sdk::make_status(KILN_STATUS_INVALID_ARGUMENT,
                            "kiln op: null kernel context or arguments");
  }
  const char* name = entry->name;
  const auto& kernel = *static_cast<const KernelEntry*>(entry->data);
  CudaDevice* device = nullptr;
  cudaStream_t stream = nullptr;
  kiln_status* status = sdk::guard(name, [&] {
    // Every catalogue op has an output, on the device the kernel was looked up for.
    KILN_SDK_CHECK(args->num_outputs > 0 && args->outputs != nullptr, KILN_STATUS_INVALID_ARGUMENT,
                   "no output operand to find the device by");
    device = &sdk::device_from_handle<CudaDevice>(args->outputs[0].device);
    device->make_current();
    const sdk::OpArgs op_args(args);
    // The kit checks the handles its entry points get, not a kernel's stream (the hot
    // path): at least make sure it is one of this device's.
    auto* user_stream = sdk::stream_from_handle<CudaStream>(args->stream);
    KILN_SDK_CHECK(user_stream == nullptr || user_stream->owner == device,
                   KILN_STATUS_INVALID_ARGUMENT, "the stream is not one of ", device->label(),
                   "'s (the operands' device)");
    stream = device->cuda_stream(user_stream);
    NvtxRange range(name);
    LaunchState state;
    state.op = name;
    {
      ScratchRelease release(*device, stream, state);
      const Launch launch(*device, stream, &state);
      kernel.impl(op_args, launch);
    }
    device->note_op(name);
    // A launch that failed (bad configuration, no kernel image for this GPU) is
    // reported here, by the op that made it, not by whoever synchronizes next.
    if (const cudaError_t launch_status = cudaGetLastError(); launch_status != cudaSuccess) {
      device->fail(launch_status, "enqueuing the kernel");
    }
  });
  if (status != nullptr || !device->config().sync_after_ops) return status;
  // KILN_CUDA_SYNC=1: the messages below name the op themselves.
  return sdk::guard([&] {
    const std::string where = sdk::str_cat("right after ", name, " (KILN_CUDA_SYNC=1)");
    synchronize_stream(*device, stream, where.c_str());
  });
}

// -- Launch ---------------------------------------------------------------------------------

int Launch::ordinal() const noexcept { return device_->ordinal(); }

int Launch::multiprocessor_count() const noexcept {
  return device_->properties().multiProcessorCount;
}

cublasHandle_t Launch::cublas() const {
  cublasHandle_t handle = device_->cublas_handle();
  check(cublasSetStream(handle, stream_), "cublasSetStream");
  return handle;
}

// cublasLt takes the stream with every call; the handle itself carries none.
cublasLtHandle_t Launch::cublaslt() const { return device_->cublaslt_handle(); }

cudnnHandle_t Launch::cudnn() const {
  cudnnHandle_t handle = device_->cudnn_handle();
  check(cudnnSetStream(handle, stream_), "cudnnSetStream");
  return handle;
}

void* Launch::scratch(size_t bytes) const {
  KILN_SDK_CHECK(state_ != nullptr, KILN_STATUS_INTERNAL,
                 "Launch::scratch needs a Launch made by the runtime");
  // While a CUDA graph records this stream the call declines (it runs as an ordinary
  // call): the caching allocator records and queries events to reuse blocks, which a
  // stream capture forbids.
  KILN_SDK_CHECK(!recording(*device_, stream_), KILN_STATUS_UNSUPPORTED,
                 "needs scratch memory, which is not allocated while a CUDA graph records: "
                 "not recorded (it runs as an ordinary call)");
  Allocation* a = device_->allocator().allocate(bytes, 256, stream_);
  try {
    state_->scratch.push_back(a);
  } catch (...) {
    device_->allocator().deallocate(a, stream_);
    throw;
  }
  return a->data;
}

int32_t* Launch::error_flag() const {
  KILN_SDK_CHECK(state_ != nullptr, KILN_STATUS_INTERNAL,
                 "Launch::error_flag needs a Launch made by the runtime");
  KILN_SDK_CHECK(!recording(*device_, stream_), KILN_STATUS_UNSUPPORTED,
                 "reports device-side errors through a flag read back per call, which a CUDA "
                 "graph launch does not do: not recorded (it runs as an ordinary call)");
  if (state_->slot == nullptr) state_->slot = device_->error_flags().acquire(state_->op, stream_);
  return &state_->slot->code;
}

int64_t* Launch::error_detail() const {
  error_flag();
  return state_->slot->detail;
}

const char* Launch::op_name() const noexcept {
  return state_ != nullptr ? state_->op : "(unknown op)";
}

bool Launch::allow_tf32(const sdk::OpArgs& args) const {
  // matmul's and the conv2d ops' attribute lists differ; both have this optional STRING
  const char* precision = args.attr_string_or("precision", "highest");
  return std::strcmp(precision, "high") == 0 || std::strcmp(precision, "medium") == 0;
}

// -- library status checks ---------------------------------------------------------------------

void check(cudaError_t status, const char* what) {
  if (status == cudaSuccess) return;
  cudaGetLastError();  // clear it (if not sticky), or the next op would report it again
  throw sdk::Error(code_for(status), sdk::str_cat(what, ": ", cudaGetErrorString(status), " (",
                                                  cudaGetErrorName(status), ")"));
}

void check(cublasStatus_t status, const char* what) {
  if (status == CUBLAS_STATUS_SUCCESS) return;
  kiln_status_code code = KILN_STATUS_DEVICE_ERROR;
  if (status == CUBLAS_STATUS_ALLOC_FAILED) code = KILN_STATUS_OUT_OF_MEMORY;
  if (status == CUBLAS_STATUS_NOT_SUPPORTED || status == CUBLAS_STATUS_ARCH_MISMATCH) {
    code = KILN_STATUS_UNSUPPORTED;
  }
  if (status == CUBLAS_STATUS_INVALID_VALUE) code = KILN_STATUS_INVALID_ARGUMENT;
  throw sdk::Error(code, sdk::str_cat(what, ": ", cublasGetStatusString(status), " (",
                                      cublasGetStatusName(status), ")"));
}

void check(cudnnStatus_t status, const char* what) {
  if (status == CUDNN_STATUS_SUCCESS) return;
  // cuDNN 9 groups its codes by thousands: 2xxx bad parameters, 3xxx not supported.
  kiln_status_code code = KILN_STATUS_DEVICE_ERROR;
  if (status / 1000 == 2) code = KILN_STATUS_INVALID_ARGUMENT;
  if (status / 1000 == 3) code = KILN_STATUS_UNSUPPORTED;
  if (status == CUDNN_STATUS_INTERNAL_ERROR_HOST_ALLOCATION_FAILED ||
      status == CUDNN_STATUS_INTERNAL_ERROR_DEVICE_ALLOCATION_FAILED) {
    code = KILN_STATUS_OUT_OF_MEMORY;
  }
  throw sdk::Error(code, sdk::str_cat(what, ": ", cudnnGetErrorString(status)));
}

}  // namespace kiln::cuda
