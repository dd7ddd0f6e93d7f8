// kiln::Graph on every backend: the frontend records the kernel calls its dispatcher
// makes during a capture and replays them (runtime/graph_capture.h, kiln/graph.h).

#include "kiln/graph.h"

#include <cstring>
#include <deque>
#include <exception>
#include <map>
#include <mutex>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include "graph/device_graphs.h"
#include "kiln/error.h"
#include "ops/common.h"
#include "runtime/exit_guard.h"
#include "runtime/graph_capture.h"
#include "runtime/log.h"
#include "runtime/registry.h"

namespace kiln::detail::graph {

std::atomic<int> open_captures{0};

namespace {
thread_local Capture* tls_capture = nullptr;
}  // namespace

// -- the pool ---------------------------------------------------------------------------

/// Device memory for graphs: blocks allocated from the device and never returned to it
/// while the pool lives. A tensor allocated during a capture gets a view of a block;
/// when the tensor goes, the block is free for the next allocation of a capture into
/// this pool (the same capture's later temporaries, or a later graph's).
class Pool : public std::enable_shared_from_this<Pool> {
 public:
  struct Allocation {
    std::shared_ptr<Storage> view, block;
  };
  Allocation allocate(DeviceContext* device, size_t bytes) {
    const size_t rounded = (std::max<size_t>(bytes, 1) + kAlign - 1) / kAlign * kAlign;
    std::shared_ptr<Storage> block;
    {
      std::lock_guard lock(mutex_);
      if (device_ == nullptr) device_ = device;
      KILN_CHECK(device_ == device, "graph capture on ", device->name(),
                 ": the pool given to it holds memory of ", device_->name(),
                 "; a pool serves one device");
      // Best fit among the free blocks, at most twice the size asked for, that no
      // graph holds: a block a graph still uses (a gradient set to none since) is only
      // free once that graph is gone. Free and unheld, a block has two owners: blocks_
      // and free_.
      for (auto it = free_.lower_bound(rounded); it != free_.end() && it->first <= 2 * rounded;
           ++it) {
        if (it->second.use_count() > 2) continue;
        block = it->second;
        free_.erase(it);
        break;
      }
    }
    if (!block) {
      block = device->allocate_block(rounded);
      std::lock_guard lock(mutex_);
      blocks_.push_back(block);
      bytes_ += rounded;
    }
    // The view keeps its block alive, so that it outlives the pool if it must; when it
    // goes, the block returns to the pool (when the pool is still there).
    std::weak_ptr<Pool> pool = weak_from_this();
    auto view = std::make_shared<Storage>(device, block->data, bytes, [pool, block](void*) {
      if (auto p = pool.lock()) p->give_back(block);
    });
    return {std::move(view), std::move(block)};
  }

  /// True when [data, data + bytes) lies in one of the pool's blocks.
  bool contains(const void* data, size_t bytes) const {
    std::lock_guard lock(mutex_);
    const auto* p = static_cast<const char*>(data);
    for (const auto& b : blocks_) {
      const auto* begin = static_cast<const char*>(b->data);
      if (p >= begin && p + bytes <= begin + b->bytes) return true;
    }
    return false;
  }

  size_t bytes() const {
    std::lock_guard lock(mutex_);
    return bytes_;
  }

 private:
  static constexpr size_t kAlign = 512;

  void give_back(const std::shared_ptr<Storage>& block) {
    std::lock_guard lock(mutex_);
    free_.emplace(block->bytes, block);
  }

  mutable std::mutex mutex_;
  DeviceContext* device_ = nullptr;
  std::vector<std::shared_ptr<Storage>> blocks_;
  std::multimap<size_t, std::shared_ptr<Storage>> free_;
  size_t bytes_ = 0;
};

// -- the recording ----------------------------------------------------------------------

namespace {

/// One recorded step: a kernel call, or a copy. Never moved (a std::deque element),
/// since `args` points into it.
struct Step {
  enum class Kind { Kernel, Copy } kind = Kind::Kernel;
  DeviceContext* device = nullptr;
  std::string name;  // the op, for messages
  // Kernel:
  kiln_kernel kernel{};
  std::vector<kiln_tensor_view> views;  // inputs, then outputs
  std::vector<int64_t> dims;            // the views' shapes and strides
  std::vector<kiln_attr> attrs;
  std::deque<std::string> texts;  // attribute names and string values
  std::deque<std::vector<int64_t>> ints;
  std::deque<std::vector<double>> floats;
  kiln_op_args args{};
  int patch = -1;  // index into GraphImpl::patches_
  // Copy:
  kiln_copy_kind copy_kind = KILN_COPY_DEVICE_TO_DEVICE;
  void* dst = nullptr;
  const void* src = nullptr;
  std::vector<unsigned char> host_bytes;  // a host-to-device copy's source
  size_t bytes = 0;
};

struct PatchEntry {
  Patch patch;
  bool has_owner = false;
  std::weak_ptr<void> owner;
  std::string owner_name;
};

}  // namespace

class GraphImpl {
 public:
  DeviceContext* device = nullptr;
  std::shared_ptr<Pool> pool;
  std::deque<Step> steps;
  std::vector<PatchEntry> patches;
  // Storages the calls use that the pool does not own: each must still be alive at a
  // replay, or the graph would write into memory that is no longer the tensor's.
  std::vector<std::weak_ptr<Storage>> external;
  // Storages the kernels write: a replay bumps their version counters, as the eager
  // ops did (autograd's saved-tensor check, autocast's cast cache).
  std::vector<std::weak_ptr<Storage>> written;
  // Blocks of the pool that tensors alive at the end of the capture use: held, so
  // that no later capture into the pool reuses them while this graph may replay.
  std::vector<std::shared_ptr<Storage>> pinned;
  // The device's own graphs (kiln.graphs.v1), recorded at the first replay where the
  // device offers them.
  std::unique_ptr<DeviceGraphs> device_graphs;
  bool device_graphs_planned = false;
  bool captured = false;
  bool capturing = false;  // a GraphCapture into this graph is open
  std::string failure;     // why the last capture failed, when it did
  std::mutex replay_mutex;

  void replay();

 private:
  void plan_device_graphs();
};

class Capture {
 public:
  Capture(std::shared_ptr<GraphImpl> graph, DeviceContext* device, std::shared_ptr<Pool> pool)
      : graph(std::move(graph)), device(device), pool(std::move(pool)) {}

  std::shared_ptr<GraphImpl> graph;
  DeviceContext* device;
  std::shared_ptr<Pool> pool;
  std::deque<Step> steps;
  std::vector<PatchEntry> patches;
  // Every storage a call uses, once each, by control block (an address may be reused
  // after a storage dies during the capture).
  std::vector<std::weak_ptr<Storage>> external, written;
  std::unordered_map<const Storage*, std::weak_ptr<Storage>> seen_external, seen_written;
  struct PoolView {
    std::weak_ptr<Storage> view, block;
  };
  std::unordered_map<const Storage*, PoolView> from_pool;  // views allocated by this capture
  std::atomic<bool> closed{false};  // its GraphCapture was destroyed on another thread
  struct Pending {
    std::string op;  // empty: the next call with a "seed" attribute
    PatchEntry entry;
  };
  std::optional<Pending> pending;
  std::string failure;
  int exceptions_at_start = std::uncaught_exceptions();

  static bool same(const std::weak_ptr<Storage>& a, const std::shared_ptr<Storage>& b) {
    return !a.owner_before(b) && !b.owner_before(a);
  }
  // Adds `s` to `list` unless it is there already.
  static void add_once(std::unordered_map<const Storage*, std::weak_ptr<Storage>>& seen,
                       std::vector<std::weak_ptr<Storage>>& list,
                       const std::shared_ptr<Storage>& s) {
    auto [it, inserted] = seen.try_emplace(s.get(), s);
    if (!inserted && same(it->second, s)) return;
    it->second = s;
    list.push_back(s);
  }
  void note_storage(const std::shared_ptr<Storage>& s, bool writes) {
    if (writes) add_once(seen_written, written, s);
    auto it = from_pool.find(s.get());
    if (it != from_pool.end() && same(it->second.view, s)) return;
    add_once(seen_external, external, s);
  }
};

Capture* this_thread_capture() {
  Capture* c = tls_capture;
  if (c != nullptr && c->closed.load(std::memory_order_acquire)) [[unlikely]] {
    tls_capture = nullptr;  // its GraphCapture was destroyed on another thread
    return nullptr;
  }
  return c;
}

void refuse(Capture& capture, std::string_view what, std::string_view why) {
  std::string message = concat(what, " inside a graph capture on ", capture.device->name(), ": ",
                               why, " (the graph cannot be replayed; see kiln/graph.h)");
  if (capture.failure.empty()) capture.failure = message;
  throw Error(message);
}

void refuse_if_capturing(std::string_view what, std::string_view why) {
  if (Capture* c = active()) refuse(*c, what, why);
}

namespace {

void check_device(Capture& c, DeviceContext* device, std::string_view what) {
  if (device != c.device)
    refuse(c, what,
           concat("it runs on ", device->name(),
                  "; a graph records the work of one device (move the operands, or capture "
                  "each device's work in its own graph)"));
}

const kiln_attr* find_attr(std::span<const kiln_attr> attrs, const char* name) {
  for (const kiln_attr& a : attrs)
    if (a.name && std::strcmp(a.name, name) == 0) return &a;
  return nullptr;
}

}  // namespace

void record_kernel(Capture& c, const kiln_kernel& kernel, DeviceContext* device, const char* name,
                   const kiln_op_args& args, std::span<const TensorImpl* const> inputs,
                   std::span<const TensorImpl* const> outputs) {
  check_device(c, device, name);
  const std::span<const kiln_attr> attrs(args.attrs, args.num_attrs);
  const bool random = find_attr(attrs, "seed") != nullptr;
  int patch = -1;
  if (c.pending) {
    const bool wants_seed = c.pending->op.empty();
    if (wants_seed ? random : c.pending->op == name) {
      patch = static_cast<int>(c.patches.size());
      c.patches.push_back(std::move(c.pending->entry));
      c.pending.reset();
    }
  }
  if (patch < 0 && random)
    refuse(c, name,
           "a random op without a capturable generator state: its seed does not come from "
           "Kiln's generator, so every replay would draw the same numbers");

  Step& s = c.steps.emplace_back();
  s.kind = Step::Kind::Kernel;
  s.device = device;
  s.name = name;
  s.kernel = kernel;
  s.patch = patch;
  const size_t n = inputs.size() + outputs.size();
  size_t ndims = 0;
  for (const TensorImpl* t : inputs) ndims += 2 * t->shape.size();
  for (const TensorImpl* t : outputs) ndims += 2 * t->shape.size();
  s.dims.reserve(ndims);  // the views point into it: it must not grow past this
  s.views.reserve(n);
  auto add_view = [&](const kiln_tensor_view& v) {
    kiln_tensor_view copy = v;
    const size_t at = s.dims.size();
    s.dims.insert(s.dims.end(), v.shape, v.shape + v.ndim);
    s.dims.insert(s.dims.end(), v.strides, v.strides + v.ndim);
    copy.shape = s.dims.data() + at;
    copy.strides = s.dims.data() + at + v.ndim;
    s.views.push_back(copy);
  };
  for (size_t i = 0; i < inputs.size(); ++i) {
    add_view(args.inputs[i]);
    c.note_storage(inputs[i]->storage, false);
  }
  for (size_t i = 0; i < outputs.size(); ++i) {
    add_view(args.outputs[i]);
    c.note_storage(outputs[i]->storage, true);
  }
  for (const kiln_attr& a : attrs) {
    kiln_attr copy = a;
    copy.name = a.name ? s.texts.emplace_back(a.name).c_str() : nullptr;
    if (a.type == KILN_ATTR_STRING && a.value.s)
      copy.value.s = s.texts.emplace_back(a.value.s).c_str();
    if (a.type == KILN_ATTR_INTS && a.value.ints)
      copy.value.ints = s.ints.emplace_back(a.value.ints, a.value.ints + a.count).data();
    if (a.type == KILN_ATTR_FLOATS && a.value.floats)
      copy.value.floats = s.floats.emplace_back(a.value.floats, a.value.floats + a.count).data();
    s.attrs.push_back(copy);
  }
  s.args = args;
  s.args.inputs = s.views.data();
  s.args.outputs = s.views.data() + inputs.size();
  s.args.attrs = s.attrs.data();
  s.args.stream = nullptr;
}

std::shared_ptr<Storage> allocate(Capture& c, DeviceContext* device, size_t bytes) {
  check_device(c, device, concat("an allocation of ", bytes, " bytes"));
  Pool::Allocation a = c.pool->allocate(device, bytes);
  c.from_pool.insert_or_assign(a.view.get(), Capture::PoolView{a.view, a.block});
  return std::move(a.view);
}

void record_copy(Capture& c, DeviceContext* device, kiln_copy_kind kind, void* dst, const void* src,
                 size_t bytes) {
  if (kind == KILN_COPY_DEVICE_TO_HOST)
    refuse(c, "a copy from the device to the host",
           "a replay cannot hand values back to host code (item(), to_vector(), .to(\"cpu\") "
           "and ops whose output shape depends on the data all read the device)");
  check_device(c, device, "a copy");
  if (kind != KILN_COPY_HOST_TO_DEVICE)
    refuse(c, "a device-to-device copy outside an op",
           "only host-to-device copies into tensors made during the capture are recorded");
  if (!c.pool->contains(dst, bytes))
    refuse(c, "a copy from the host into a tensor made before the capture",
           "a replay could not tell whether that tensor still exists; copy into a new tensor "
           "and then copy_() it, which records an op");
  Step& s = c.steps.emplace_back();
  s.kind = Step::Kind::Copy;
  s.device = device;
  s.name = "copy host to device";
  s.copy_kind = kind;
  s.dst = dst;
  s.bytes = bytes;
  // The host source may be gone after the call (a stack value): keep its bytes.
  const auto* p = static_cast<const unsigned char*>(src);
  s.host_bytes.assign(p, p + bytes);
  s.src = s.host_bytes.data();
}

void patch_next(Capture& c, const char* op, Patch patch, std::weak_ptr<void> owner,
                std::string owner_name) {
  if (c.pending)
    refuse(c, op, concat("internal error: the patch for ", c.pending->op, " was not used"));
  PatchEntry e;
  e.patch = std::move(patch);
  e.has_owner = !owner_name.empty();
  e.owner = std::move(owner);
  e.owner_name = std::move(owner_name);
  c.pending = Capture::Pending{op, std::move(e)};
}

void patch_next_random(Capture& c, int64_t numel) {
  if (c.pending)
    refuse(c, "a random op",
           concat("internal error: the patch for ", c.pending->op, " was not used"));
  PatchEntry e;
  e.patch = [numel](std::span<kiln_attr> attrs) {
    const GeneratorState s = reserve_random(numel);
    set_attr(attrs, "seed", static_cast<int64_t>(s.seed));
    set_attr(attrs, "offset", static_cast<int64_t>(s.offset));
  };
  c.pending = Capture::Pending{"", std::move(e)};
}

namespace {
kiln_attr& attr_or_throw(std::span<kiln_attr> attrs, const char* name, int type) {
  for (kiln_attr& a : attrs)
    if (a.name && std::strcmp(a.name, name) == 0 && a.type == type) return a;
  throw Error(concat("graph replay: the recorded call has no attribute '", name, "' of that type"));
}
}  // namespace

void set_attr(std::span<kiln_attr> attrs, const char* name, double value) {
  attr_or_throw(attrs, name, KILN_ATTR_FLOAT).value.f = value;
}
void set_attr(std::span<kiln_attr> attrs, const char* name, int64_t value) {
  attr_or_throw(attrs, name, KILN_ATTR_INT).value.i = value;
}

// -- replay -----------------------------------------------------------------------------

void GraphImpl::plan_device_graphs() {
  device_graphs_planned = true;
  const kiln_graphs_api* api = device->plugin()->graphs;
  if (api == nullptr) return;
  std::vector<bool> capturable(steps.size());
  for (size_t i = 0; i < steps.size(); ++i)
    capturable[i] = steps[i].kind == Step::Kind::Kernel && steps[i].patch < 0;
  // A plugin that fails to record leaves the replay to the recorded path (same results).
  try {
    device_graphs = std::make_unique<DeviceGraphs>(
        device, api, capturable, [this](size_t i, kiln_stream* stream) -> kiln_status* {
          Step& s = steps[i];
          s.args.stream = stream;
          kiln_status* status;
          try {
            status = s.kernel.run(s.kernel.context, &s.args);
          } catch (...) {
            s.args.stream = nullptr;
            throw_abi_violation(s.device->api()->name, s.name);
          }
          s.args.stream = nullptr;
          return status;
        });
  } catch (const Error& e) {
    log(KILN_LOG_WARNING, device->api()->name,
        concat("kiln.graphs.v1 failed (", e.what(), "); this graph replays call by call"));
  }
}

void GraphImpl::replay() {
  if (active() != nullptr)
    throw Error("Graph::replay: called inside a graph capture; replay a graph outside captures");
  std::unique_lock lock(replay_mutex, std::try_to_lock);
  KILN_CHECK(lock.owns_lock(), "Graph::replay: this graph is being replayed on another thread");
  KILN_CHECK(captured, "Graph::replay: the graph holds no capture",
             failure.empty() ? std::string(" (capture it with kiln::GraphCapture)")
                             : concat(" (its capture failed: ", failure, ")"));
  std::vector<std::shared_ptr<void>> owners;  // held through the replay
  for (const PatchEntry& p : patches) {
    if (!p.has_owner) continue;
    owners.push_back(p.owner.lock());
    KILN_CHECK(owners.back() != nullptr, "Graph::replay: ", p.owner_name,
               " that this graph captured was destroyed; capture the graph again");
  }
  std::vector<std::shared_ptr<Storage>> alive;
  alive.reserve(external.size());
  for (const auto& w : external) {
    alive.push_back(w.lock());
    KILN_CHECK(alive.back() != nullptr,
               "Graph::replay: a tensor the graph reads or writes was freed or reallocated "
               "since the capture (a static input replaced by a new tensor instead of refilled "
               "with copy_(), say); capture the graph again");
  }
  PluginCallScope in_plugin;
  if (!device_graphs_planned) plan_device_graphs();
  size_t index = 0;
  for (size_t next = 0; next < steps.size();) {
    if (device_graphs) {
      const size_t after = device_graphs->launch_at(next);
      if (after != next) {
        next = after;
        continue;
      }
    }
    Step& s = steps[next++];
    index = next;
    if (s.kind == Step::Kind::Copy) {
      s.device->copy(s.copy_kind, s.dst, s.src, s.bytes);
      continue;
    }
    if (s.patch >= 0) patches[static_cast<size_t>(s.patch)].patch(s.attrs);
    kiln_status* status;
    try {
      status = s.kernel.run(s.kernel.context, &s.args);
    } catch (...) {
      throw_abi_violation(s.device->api()->name, s.name);
    }
    if (status != nullptr) [[unlikely]] {
      try {
        s.device->check(status, s.name.c_str());
      } catch (const Error& e) {
        throw Error(concat(e.what(), " (graph replay, step ", index, " of ", steps.size(), ")"));
      }
    }
  }
  for (const auto& w : written)
    if (auto s = w.lock()) ++s->version;
}

}  // namespace kiln::detail::graph

namespace kiln {

namespace g = detail::graph;

size_t GraphPool::bytes() const { return impl_ ? impl_->bytes() : 0; }

GraphPool graph_pool() {
  GraphPool p;
  p.impl_ = std::make_shared<g::Pool>();
  return p;
}

Graph::Graph() : impl_(std::make_shared<g::GraphImpl>()) {}
Graph::~Graph() = default;
Graph::Graph(Graph&&) noexcept = default;
Graph& Graph::operator=(Graph&&) noexcept = default;

void Graph::replay() {
  KILN_CHECK(impl_ != nullptr, "Graph::replay: the graph was moved from");
  impl_->replay();
}

bool Graph::captured() const { return impl_ && impl_->captured; }

size_t Graph::num_calls() const { return impl_ ? impl_->steps.size() : 0; }

size_t Graph::num_device_graphs() const {
  return impl_ && impl_->device_graphs ? impl_->device_graphs->size() : 0;
}

Device Graph::device() const {
  KILN_CHECK(captured(), "Graph::device: the graph holds no capture");
  return impl_->device->device();
}

GraphPool Graph::pool() const {
  GraphPool p;
  if (impl_) p.impl_ = impl_->pool;
  return p;
}

void Graph::reset() {
  if (!impl_) return;
  std::lock_guard lock(impl_->replay_mutex);
  impl_->device_graphs.reset();
  impl_->device_graphs_planned = false;
  impl_->steps.clear();
  impl_->patches.clear();
  impl_->external.clear();
  impl_->written.clear();
  impl_->pinned.clear();
  impl_->pool.reset();
  impl_->captured = false;
  impl_->failure.clear();
}

GraphCapture::GraphCapture(Graph& graph, const Device& device, GraphPool pool) {
  KILN_CHECK(g::active() == nullptr, "GraphCapture on ", device.str(),
             ": a capture is already open on this thread; captures do not nest");
  if (!graph.impl_) graph.impl_ = std::make_shared<g::GraphImpl>();
  detail::DeviceContext* dev = detail::Registry::get().resolve(device);
  std::shared_ptr<g::GraphImpl> impl = graph.impl_;
  {
    std::lock_guard lock(impl->replay_mutex);
    KILN_CHECK(!impl->capturing, "GraphCapture on ", device.str(),
               ": another capture into this graph is open (on another thread)");
    impl->capturing = true;
  }
  try {
    graph.reset();  // waits for a replay in flight on another thread
    capture_ = std::make_unique<g::Capture>(impl, dev,
                                            pool.impl_ ? pool.impl_ : std::make_shared<g::Pool>());
  } catch (...) {
    std::lock_guard lock(impl->replay_mutex);
    impl->capturing = false;
    throw;
  }
  g::tls_capture = capture_.get();
  g::open_captures.fetch_add(1, std::memory_order_relaxed);
}

GraphCapture::~GraphCapture() {
  g::Capture& c = *capture_;
  g::open_captures.fetch_sub(1, std::memory_order_relaxed);
  if (g::tls_capture == &c) {
    g::tls_capture = nullptr;
  } else {
    // Destroyed on another thread than the one it captures: that thread still points
    // at it, so it is left (closed) rather than freed, and the graph stays uncaptured.
    detail::log(KILN_LOG_ERROR, "graph",
                "a GraphCapture was destroyed on another thread than the one that opened it; "
                "the capture is discarded");
    std::lock_guard lock(c.graph->replay_mutex);
    c.graph->capturing = false;
    c.graph->failure = "its GraphCapture was destroyed on another thread";
    c.closed.store(true, std::memory_order_release);
    (void)capture_.release();
    return;
  }
  g::GraphImpl& graph = *c.graph;
  std::lock_guard lock(graph.replay_mutex);
  graph.capturing = false;
  if (c.failure.empty() && c.pending)
    c.failure =
        detail::concat("a patch for ", c.pending->op.empty() ? "a random op" : c.pending->op,
                       " was registered but its call was never recorded");
  if (c.failure.empty() && std::uncaught_exceptions() > c.exceptions_at_start)
    c.failure = "the capture scope was left by an exception";
  graph.failure = c.failure;
  if (!c.failure.empty()) return;
  graph.device = c.device;
  graph.pool = c.pool;
  graph.steps = std::move(c.steps);
  graph.patches = std::move(c.patches);
  graph.external = std::move(c.external);
  graph.written = std::move(c.written);
  for (const auto& [storage, pooled] : c.from_pool)
    if (!pooled.view.expired())
      if (auto block = pooled.block.lock()) graph.pinned.push_back(std::move(block));
  graph.captured = true;
}

bool is_capturing() { return g::active() != nullptr; }

}  // namespace kiln
