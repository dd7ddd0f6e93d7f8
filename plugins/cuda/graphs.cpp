#include "graphs.h"

#include <algorithm>
#include <atomic>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "device.h"
#include "kiln/sdk/plugin.h"
#include "kiln/sdk/status.h"
#include "plugin_state.h"
#include "staged.h"

struct kiln_graph {
  kiln::cuda::CudaDevice* device = nullptr;
  cudaGraphExec_t exec = nullptr;
  cudaEvent_t last_launch = nullptr;  // recorded after each launch; destroy waits for it
};

namespace kiln::cuda {

namespace {

// An open capture: its device and stream.
struct Recording {
  const CudaDevice* device;
  cudaStream_t stream;
};

std::atomic<int> open_count{0};
std::mutex open_mutex;
std::vector<Recording> open_recordings;  // guarded by open_mutex

std::vector<Recording>::iterator find_locked(const CudaDevice& device, cudaStream_t stream) {
  return std::find_if(open_recordings.begin(), open_recordings.end(), [&](const Recording& r) {
    return r.device == &device && r.stream == stream;
  });
}

kiln_status* capture_begin(kiln_device* handle, kiln_stream* stream) {
  return sdk::guard("kiln.graphs.v1 capture_begin", [&] {
    CudaDevice& device = sdk::device_from_handle<CudaDevice>(handle);
    device.make_current();
    const cudaStream_t s = device.cuda_stream(sdk::stream_from_handle<CudaStream>(stream));
    std::lock_guard lock(open_mutex);
    for (const Recording& r : open_recordings)
      KILN_SDK_CHECK(r.device != &device, KILN_STATUS_INVALID_ARGUMENT,
                     "a capture is already open on ", device.label());
    open_recordings.push_back({&device, s});  // first: nothing throws after the capture starts
    if (const cudaError_t began = cudaStreamBeginCapture(s, cudaStreamCaptureModeThreadLocal);
        began != cudaSuccess) {
      open_recordings.pop_back();
      check(began, "cudaStreamBeginCapture");
    }
    open_count.fetch_add(1, std::memory_order_relaxed);
  });
}

kiln_status* capture_end(kiln_device* handle, kiln_stream* stream, kiln_graph** out) {
  return sdk::guard("kiln.graphs.v1 capture_end", [&] {
    KILN_SDK_CHECK(out != nullptr, KILN_STATUS_INVALID_ARGUMENT, "null output pointer");
    *out = nullptr;
    CudaDevice& device = sdk::device_from_handle<CudaDevice>(handle);
    device.make_current();
    const cudaStream_t s = device.cuda_stream(sdk::stream_from_handle<CudaStream>(stream));
    {
      std::lock_guard lock(open_mutex);
      const auto it = find_locked(device, s);
      KILN_SDK_CHECK(it != open_recordings.end(), KILN_STATUS_INVALID_ARGUMENT,
                     "no capture is open on ", device.label(), " on this stream");
      open_recordings.erase(it);
      open_count.fetch_sub(1, std::memory_order_relaxed);
    }
    cudaGraph_t graph = nullptr;
    const cudaError_t ended = cudaStreamEndCapture(s, &graph);
    cudaGraphExec_t exec = nullptr;
    cudaError_t instantiated = cudaErrorStreamCaptureInvalidated;
    if (ended == cudaSuccess && graph != nullptr) {
      instantiated = cudaGraphInstantiate(&exec, graph, 0);
      (void)cudaGraphDestroy(graph);
    }
    if (ended != cudaSuccess || instantiated != cudaSuccess) {
      (void)cudaGetLastError();  // the capture's failure is reported here, not by the next op
      check(ended != cudaSuccess ? ended : instantiated,
            ended != cudaSuccess ? "cudaStreamEndCapture" : "cudaGraphInstantiate");
    }
    kiln_graph* g = nullptr;
    try {
      g = new kiln_graph;
    } catch (...) {
      (void)cudaGraphExecDestroy(exec);
      throw;
    }
    g->device = &device;
    g->exec = exec;
    *out = g;
  });
}

kiln_status* launch(kiln_device* handle, kiln_graph* graph, kiln_stream* stream) {
  return sdk::guard("kiln.graphs.v1 launch", [&] {
    KILN_SDK_CHECK(graph != nullptr, KILN_STATUS_INVALID_ARGUMENT, "null graph");
    CudaDevice& device = sdk::device_from_handle<CudaDevice>(handle);
    KILN_SDK_CHECK(graph->device == &device, KILN_STATUS_INVALID_ARGUMENT,
                   "the graph was recorded on another device");
    device.make_current();
    const cudaStream_t s = device.cuda_stream(sdk::stream_from_handle<CudaStream>(stream));
    check(cudaGraphLaunch(graph->exec, s), "cudaGraphLaunch");
    if (graph->last_launch == nullptr) graph->last_launch = device.events().get();
    check(cudaEventRecord(graph->last_launch, s), "cudaEventRecord");
  });
}

kiln_status* destroy(kiln_device* handle, kiln_graph* graph) {
  return sdk::guard("kiln.graphs.v1 destroy", [&] {
    if (graph == nullptr) return;
    std::unique_ptr<kiln_graph> owned(graph);
    CudaDevice& device = sdk::device_from_handle<CudaDevice>(handle);
    device.make_current();
    cudaError_t waited = cudaSuccess;
    if (graph->last_launch != nullptr) {
      waited = cudaEventSynchronize(graph->last_launch);
      device.events().put(graph->last_launch);
    }
    const cudaError_t destroyed = graph->exec ? cudaGraphExecDestroy(graph->exec) : cudaSuccess;
    check(waited, "cudaEventSynchronize (the graph's last launch)");
    check(destroyed, "cudaGraphExecDestroy");
  });
}

const kiln_graphs_api kGraphs = {sizeof(kiln_graphs_api), &capture_begin, &capture_end, &launch,
                                 &destroy};

}  // namespace

const kiln_graphs_api* graphs_api() {
  // Not under KILN_CUDA_SYNC=1 (a synchronization per op cannot be captured) nor
  // cuda_malloc_async (an allocation on a capturing stream becomes a graph node).
  static const bool offered = staged_on(kStagedGraphs) && !plugin_state().config.sync_after_ops &&
                              plugin_state().config.allocator != AllocatorKind::MallocAsync;
  return offered ? &kGraphs : nullptr;
}

bool recording(const CudaDevice& device, cudaStream_t stream) noexcept {
  if (open_count.load(std::memory_order_relaxed) == 0) [[likely]]
    return false;
  std::lock_guard lock(open_mutex);
  return find_locked(device, stream) != open_recordings.end();
}

}  // namespace kiln::cuda
