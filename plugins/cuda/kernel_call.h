// kernel_call.h — how get_kernel's kernels run: the kernel call (the per-call wrapper
// around every KernelEntry::impl) and the bookkeeping behind Launch.
//
// Every sdk::KernelEntry of the plugin's table (kernels/registry.h) has
// `run_bound_kernel` as its `run` and the plugin's KernelEntry as its `data`; the
// kit's get_kernel hands the sdk entry out as the kernel's context. Each call:
//   1. finds the device from the first output's handle, makes it current and
//      resolves the stream (NULL: the device's default stream);
//   2. opens an NVTX range named after the op, so Nsight timelines read like the
//      program;
//   3. runs impl inside sdk::guard, so every error message starts with the op's name;
//   4. releases the call's scratch memory on the stream (after the work enqueued);
//   5. checks cudaGetLastError, so a failed launch is reported by the op that made it;
//   6. under KILN_CUDA_SYNC=1, waits for the stream and reports the CUDA error or the
//      op's device-side error (error_flags.h) right there.
// Nothing else waits for the GPU.
#ifndef KILN_CUDA_KERNEL_CALL_H
#define KILN_CUDA_KERNEL_CALL_H

#include <vector>

#include "allocator.h"
#include "error_flags.h"
#include "kiln/c_api.h"
#include "launch.h"

namespace kiln::cuda {

/// What one kernel call collects while it runs (Launch points at it).
struct LaunchState {
  const char* op = nullptr;          // catalogue name, lives for the process
  std::vector<Allocation*> scratch;  // released on the stream when the call ends
  ErrorSlot* slot = nullptr;         // acquired on the first error_flag() call
};

/// The kiln_kernel.run of every kernel; `context` is its sdk::KernelEntry.
kiln_status* run_bound_kernel(void* context, const kiln_op_args* args) noexcept;

}  // namespace kiln::cuda

#endif  // KILN_CUDA_KERNEL_CALL_H
