// kiln::Graph's device graphs (graph/device_graphs.h).

#include "graph/device_graphs.h"

#include <deque>
#include <utility>

#include "kiln/error.h"
#include "runtime/log.h"
#include "runtime/registry.h"

namespace kiln::detail::graph {

namespace {

// A call into the plugin's entry `what`, its status checked (kiln::Error on failure).
template <class F>
void call(DeviceContext* device, const char* what, F&& f) {
  device->check(call_plugin(device->api()->name, what, std::forward<F>(f)), what);
}

// The stream the captures record on: the plugin's own for the purpose where it can
// make one, so that another thread's work on the default stream is never recorded.
class CaptureStream {
 public:
  explicit CaptureStream(DeviceContext* device) : device_(device) {
    const kiln_plugin_api* api = device->api();
    if (api->stream_create && api->stream_destroy)
      call(device, "stream_create", [&] { return api->stream_create(device->handle(), &stream_); });
  }
  ~CaptureStream() {
    if (!stream_) return;
    const kiln_plugin_api* api = device_->api();
    if (kiln_status* s = call_plugin(api->name, "stream_destroy", [&] {
          return api->stream_destroy(device_->handle(), stream_);
        }))
      log(KILN_LOG_ERROR, api->name, concat("stream_destroy: ", consume_status(s)));
  }
  CaptureStream(const CaptureStream&) = delete;
  CaptureStream& operator=(const CaptureStream&) = delete;
  kiln_stream* get() const { return stream_; }

 private:
  DeviceContext* device_;
  kiln_stream* stream_ = nullptr;
};

}  // namespace

DeviceGraphs::DeviceGraphs(DeviceContext* device, const kiln_graphs_api* api,
                           const std::vector<bool>& capturable, const RunStep& run)
    : device_(device), api_(api), segment_at_(capturable.size(), -1) {
  try {
    CaptureStream stream(device);
    // Runs of capturable steps still to record; a run the plugin declines a call of
    // splits around that call.
    std::deque<std::pair<size_t, size_t>> runs;
    for (size_t i = 0; i < capturable.size();) {
      size_t end = i;
      while (end < capturable.size() && capturable[end]) ++end;
      if (end > i) runs.emplace_back(i, end);
      i = end + 1;
    }
    while (!runs.empty()) {
      const auto [first, end] = runs.front();
      runs.pop_front();
      if (end - first < kMinCalls) continue;
      size_t declined = end;
      kiln_graph* g = record(first, end, stream.get(), run, &declined);
      if (g == nullptr) {
        runs.emplace_front(declined + 1, end);
        runs.emplace_front(first, declined);
        continue;
      }
      segment_at_[first] = static_cast<int>(segments_.size());
      segments_.push_back({first, end, g});
    }
  } catch (...) {
    destroy_all();
    throw;
  }
}

kiln_graph* DeviceGraphs::record(size_t first, size_t end, kiln_stream* stream, const RunStep& run,
                                 size_t* declined) {
  const char* plugin = device_->api()->name;
  kiln_device* handle = device_->handle();
  call(device_, "kiln.graphs.v1 capture_begin",
       [&] { return api_->capture_begin(handle, stream); });
  // Ends the capture and destroys what it held: after a declined or failed call.
  auto discard = [&] {
    kiln_graph* g = nullptr;
    if (kiln_status* s = call_plugin(plugin, "kiln.graphs.v1 capture_end",
                                     [&] { return api_->capture_end(handle, stream, &g); }))
      (void)consume_status(s);
    if (g)
      if (kiln_status* s = call_plugin(plugin, "kiln.graphs.v1 destroy",
                                       [&] { return api_->destroy(handle, g); }))
        log(KILN_LOG_ERROR, plugin, concat("kiln.graphs.v1 destroy: ", consume_status(s)));
  };
  for (size_t i = first; i < end; ++i) {
    kiln_status* status = nullptr;
    try {
      status = run(i, stream);
    } catch (...) {
      discard();
      throw;
    }
    if (status == nullptr || status->code == KILN_STATUS_OK) {
      if (status) (void)consume_status(status);
      continue;
    }
    if (status->code == KILN_STATUS_UNSUPPORTED) {
      (void)consume_status(status);
      discard();
      *declined = i;
      return nullptr;
    }
    discard();
    device_->check(status,
                   concat("recording a device graph (graph replay, step ", i + 1, ")").c_str());
  }
  kiln_graph* g = nullptr;
  call(device_, "kiln.graphs.v1 capture_end",
       [&] { return api_->capture_end(handle, stream, &g); });
  KILN_CHECK(g != nullptr, "kiln.graphs.v1 capture_end on ", device_->name(),
             " returned no graph and no error");
  return g;
}

DeviceGraphs::~DeviceGraphs() { destroy_all(); }

void DeviceGraphs::destroy_all() noexcept {
  const char* plugin = device_->api()->name;
  for (const Segment& s : segments_) {
    try {
      if (kiln_status* status = call_plugin(plugin, "kiln.graphs.v1 destroy", [&] {
            return api_->destroy(device_->handle(), s.graph);
          }))
        log(KILN_LOG_ERROR, plugin, concat("kiln.graphs.v1 destroy: ", consume_status(status)));
    } catch (const std::exception& e) {
      log(KILN_LOG_ERROR, plugin, e.what());
    }
  }
  segments_.clear();
}

size_t DeviceGraphs::launch_at(size_t i) const {
  const int at = segment_at_[i];
  if (at < 0) return i;
  const Segment& s = segments_[static_cast<size_t>(at)];
  try {
    call(device_, "kiln.graphs.v1 launch",
         [&] { return api_->launch(device_->handle(), s.graph, nullptr); });
  } catch (const Error& e) {
    throw Error(concat(e.what(), " (graph replay, the device graph of steps ", s.first + 1, " to ",
                       s.end, ")"));
  }
  return s.end;
}

}  // namespace kiln::detail::graph
