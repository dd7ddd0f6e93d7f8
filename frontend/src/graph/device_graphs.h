#pragma once
// The device's own graphs under kiln::Graph ("kiln.graphs.v1", kiln/c_api.h).
//
// Where the capture's device offers the extension, the first replay records each run
// of consecutive recorded kernel calls that no replay patches into one device graph,
// and every replay launches those graphs in place of their calls; patched calls,
// copies and calls the plugin declines to record (KILN_STATUS_UNSUPPORTED while
// capturing) run as ordinary calls between them. The results are the same calls' with
// the same arguments, so a replay gives the bits of the recorded path.

#include <cstddef>
#include <functional>
#include <vector>

#include "kiln/c_api.h"

namespace kiln::detail {
class DeviceContext;
}

namespace kiln::detail::graph {

class DeviceGraphs {
 public:
  /// Runs recorded step `i` with `stream`, returning the kernel's status unchecked.
  using RunStep = std::function<kiln_status*(size_t i, kiln_stream* stream)>;

  /// Records the device graphs of steps [0, capturable.size()): `capturable[i]` says
  /// whether step i is a kernel call no replay patches. Throws kiln::Error when the
  /// plugin fails a capture for another reason than declining a call.
  DeviceGraphs(DeviceContext* device, const kiln_graphs_api* api,
               const std::vector<bool>& capturable, const RunStep& run);
  ~DeviceGraphs();
  DeviceGraphs(const DeviceGraphs&) = delete;
  DeviceGraphs& operator=(const DeviceGraphs&) = delete;

  /// The step after the device graph that starts at step `i`, having enqueued that
  /// graph on the default stream; `i` when no graph starts there.
  size_t launch_at(size_t i) const;
  /// How many device graphs a replay launches.
  size_t size() const { return segments_.size(); }

  /// Runs shorter than this stay ordinary calls (one call gains nothing).
  static constexpr size_t kMinCalls = 2;

 private:
  struct Segment {
    size_t first, end;
    kiln_graph* graph;
  };
  /// Records steps [first, end) on `stream`: the graph, or null when the plugin
  /// declined step `*declined` (set then).
  kiln_graph* record(size_t first, size_t end, kiln_stream* stream, const RunStep& run,
                     size_t* declined);
  void destroy_all() noexcept;

  DeviceContext* device_;
  const kiln_graphs_api* api_;
  std::vector<Segment> segments_;
  std::vector<int> segment_at_;  // per step: the index of the graph starting there, or -1
};

}  // namespace kiln::detail::graph
