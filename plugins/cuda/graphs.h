// graphs.h — "kiln.graphs.v1" on CUDA graphs (staged, staged.h: graphs).
//
// capture_begin starts a stream capture (cudaStreamBeginCapture, thread-local mode) on
// the stream the frontend records on; the kernels it then runs with that stream are
// captured, not run. Two kinds of kernel decline to be recorded (KILN_STATUS_UNSUPPORTED,
// so the frontend runs them as ordinary calls): one that asks for scratch memory (the
// caching allocator records and queries events, which a capture forbids) and one that
// reports device-side errors through Launch::error_flag() (read back per call, which a
// graph launch cannot do yet). capture_end instantiates the captured graph
// (cudaGraphInstantiate); launch is cudaGraphLaunch and records an event that destroy
// waits for before freeing the executable graph. Not offered under KILN_CUDA_SYNC=1 (its
// per-op synchronization cannot be captured), with the cuda_malloc_async allocator (an
// allocation on a capturing stream becomes a graph node), or while the staged switch
// leaves it off.
#ifndef KILN_CUDA_GRAPHS_H
#define KILN_CUDA_GRAPHS_H

#include <cuda_runtime.h>

#include "kiln/c_api.h"

namespace kiln::cuda {

class CudaDevice;

/// The table, or nullptr where it is not offered (above).
const kiln_graphs_api* graphs_api();

/// Whether a capture records the work run with `stream` of `device` now (one relaxed
/// load while no capture is open anywhere).
bool recording(const CudaDevice& device, cudaStream_t stream) noexcept;

}  // namespace kiln::cuda

#endif  // KILN_CUDA_GRAPHS_H
