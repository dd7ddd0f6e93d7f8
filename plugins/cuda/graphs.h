// graphs.h — "kiln.graphs.v1" on CUDA graphs (staged, staged.h: graphs).
//
// capture_begin starts a stream capture (cudaStreamBeginCapture, thread-local mode) on
// the stream the frontend records on; the kernels it then runs with that stream are
// captured, not run. Their scratch memory is kept for the graph's life instead of going
// back to the allocator when the call returns (a replay reuses it), and a kernel that
// reports device-side errors through Launch::error_flag() declines to be recorded
// (KILN_STATUS_UNSUPPORTED: the runtime reads those flags back per call, which a graph
// launch cannot do yet), so the frontend runs it as an ordinary call. capture_end
// instantiates the captured graph (cudaGraphInstantiate); launch is cudaGraphLaunch and
// records an event that destroy waits for before freeing the executable graph and its
// scratch memory. Not offered under KILN_CUDA_SYNC=1 (its per-op synchronization cannot
// be captured) or while the staged switch leaves it off.
#ifndef KILN_CUDA_GRAPHS_H
#define KILN_CUDA_GRAPHS_H

#include <cuda_runtime.h>

#include "allocator.h"
#include "kiln/c_api.h"

namespace kiln::cuda {

class Device;

/// The table, or nullptr where it is not offered (above).
const kiln_graphs_api* graphs_api();

/// Whether a capture records the work run with `stream` of `device` now (one relaxed
/// load while no capture is open anywhere).
bool recording(const Device& device, cudaStream_t stream) noexcept;

/// Keeps `allocation` (scratch memory of a kernel being recorded on `stream`) for the
/// life of the graph. Throws (leaving the allocation to the caller) when no capture is
/// open there.
void keep_for_graph(const Device& device, cudaStream_t stream, Allocation* allocation);

}  // namespace kiln::cuda

#endif  // KILN_CUDA_GRAPHS_H
