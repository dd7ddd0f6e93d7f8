// kiln::Graph on every backend: the frontend records the kernel calls its dispatcher
// makes during a capture and replays them (graph/capture.h, kiln/graph.h).

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

#include "graph/capture.h"
#include "kiln/error.h"
#include "ops/common.h"
#include "runtime/exit_guard.h"
#include "runtime/registry.h"

namespace kiln::detail::graph {

std::atomic<int> open_captures{0};

namespace {
thread_local Capture* tls_capture = nullptr;
}  // namespace

Capture* this_thread_capture() { return tls_capture; }

// -- the pool ---------------------------------------------------------------------------

/// Device memory for graphs: blocks allocated from the device and never returned to it
/// while the pool lives. A tensor allocated during a capture gets a view of a block;
/// when the tensor goes, the block is free for the next allocation of a capture into
/// this pool (the same capture's later temporaries, or a later graph's).
class Pool : public std::enable_shared_from_this<Pool> {
 public:
  std::shared_ptr<Storage> allocate(DeviceContext* device, size_t bytes) {
    const size_t rounded = (std::max<size_t>(bytes, 1) + kAlign - 1) / kAlign * kAlign;
    std::shared_ptr<Storage> block;
    {
      std::lock_guard lock(mutex_);
      if (device_ == nullptr) device_ = device;
      KILN_CHECK(device_ == device, "graph capture on ", device->name(),
                 ": the pool given to it holds memory of ", device_->name(),
                 "; a pool serves one device");
      // Best fit among the free blocks, at most twice the size asked for.
      auto it = free_.lower_bound(rounded);
      if (it != free_.end() && it->first <= 2 * rounded) {
        block = it->second;
        free_.erase(it);
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
    return std::make_shared<Storage>(device, block->data, bytes, [pool, block](void*) {
      if (auto p = pool.lock()) p->give_back(block);
    });
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
  bool captured = false;
  std::string failure;  // why the last capture failed, when it did
  std::mutex replay_mutex;

  void replay();
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
  std::unordered_map<const Storage*, std::weak_ptr<Storage>> external;
  std::unordered_map<const Storage*, bool> from_pool;  // views allocated by this capture
  struct Pending {
    std::string op;  // empty: the next call with a "seed" attribute
    PatchEntry entry;
  };
  std::optional<Pending> pending;
  std::string failure;
  int exceptions_at_start = std::uncaught_exceptions();

  void note_storage(const std::shared_ptr<Storage>& s) {
    if (from_pool.count(s.get())) return;
    external.try_emplace(s.get(), s);
  }
};

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
  int patch = -1;
  if (c.pending) {
    const bool wants_seed = c.pending->op.empty();
    if (wants_seed ? find_attr(attrs, "seed") != nullptr : c.pending->op == name) {
      patch = static_cast<int>(c.patches.size());
      c.patches.push_back(std::move(c.pending->entry));
      c.pending.reset();
    }
  }
  if (patch < 0 && find_attr(attrs, "seed") != nullptr)
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
  auto add_view = [&](const kiln_tensor_view& v, const TensorImpl& t) {
    kiln_tensor_view copy = v;
    const size_t at = s.dims.size();
    s.dims.insert(s.dims.end(), v.shape, v.shape + v.ndim);
    s.dims.insert(s.dims.end(), v.strides, v.strides + v.ndim);
    copy.shape = s.dims.data() + at;
    copy.strides = s.dims.data() + at + v.ndim;
    s.views.push_back(copy);
    c.note_storage(t.storage);
  };
  for (size_t i = 0; i < inputs.size(); ++i) add_view(args.inputs[i], *inputs[i]);
  for (size_t i = 0; i < outputs.size(); ++i) add_view(args.outputs[i], *outputs[i]);
  for (const kiln_attr& a : attrs) {
    kiln_attr copy = a;
    copy.name = a.name ? s.texts.emplace_back(a.name).c_str() : nullptr;
    if (a.type == KILN_ATTR_STRING && a.value.s)
      copy.value.s = s.texts.emplace_back(a.value.s).c_str();
    if (a.type == KILN_ATTR_INTS && a.value.ints)
      copy.value.ints = s.ints.emplace_back(a.value.ints, a.value.ints + a.count).data();
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
  std::shared_ptr<Storage> s = c.pool->allocate(device, bytes);
  c.from_pool.emplace(s.get(), true);
  return s;
}

void record_copy(Capture& c, DeviceContext* device, kiln_copy_kind kind, void* dst, const void* src,
                 size_t bytes) {
  if (kind == KILN_COPY_DEVICE_TO_HOST)
    refuse(c, "a copy from the device to the host",
           "a replay cannot hand values back to host code (item(), to_vector(), .to(\"cpu\") "
           "and ops whose output shape depends on the data all read the device)");
  check_device(c, device, "a copy");
  Step& s = c.steps.emplace_back();
  s.kind = Step::Kind::Copy;
  s.device = device;
  s.name = kind == KILN_COPY_HOST_TO_DEVICE ? "copy host to device" : "copy device to device";
  s.copy_kind = kind;
  s.dst = dst;
  s.bytes = bytes;
  if (kind == KILN_COPY_HOST_TO_DEVICE) {
    // The host source may be gone after the call (a stack value): keep its bytes.
    const auto* p = static_cast<const unsigned char*>(src);
    s.host_bytes.assign(p, p + bytes);
    s.src = s.host_bytes.data();
  } else {
    s.src = src;
  }
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

void GraphImpl::replay() {
  if (active() != nullptr)
    throw Error("Graph::replay: called inside a graph capture; replay a graph outside captures");
  std::unique_lock lock(replay_mutex, std::try_to_lock);
  KILN_CHECK(lock.owns_lock(), "Graph::replay: this graph is being replayed on another thread");
  KILN_CHECK(captured, "Graph::replay: the graph holds no capture",
             failure.empty() ? std::string(" (capture it with kiln::GraphCapture)")
                             : concat(" (its capture failed: ", failure, ")"));
  for (const PatchEntry& p : patches)
    KILN_CHECK(!p.has_owner || !p.owner.expired(), "Graph::replay: ", p.owner_name,
               " that this graph captured was destroyed; capture the graph again");
  std::vector<std::shared_ptr<Storage>> alive;
  alive.reserve(external.size());
  for (const auto& w : external) {
    alive.push_back(w.lock());
    KILN_CHECK(alive.back() != nullptr,
               "Graph::replay: a tensor the graph reads or writes was freed or reallocated "
               "since the capture (a static input replaced by a new tensor instead of refilled "
               "with copy_(), or grads set to none); capture the graph again");
  }
  PluginCallScope in_plugin;
  size_t index = 0;
  for (Step& s : steps) {
    ++index;
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
  impl_->steps.clear();
  impl_->patches.clear();
  impl_->external.clear();
  impl_->pool.reset();
  impl_->captured = false;
  impl_->failure.clear();
}

GraphCapture::GraphCapture(Graph& graph, const Device& device, GraphPool pool) {
  KILN_CHECK(g::active() == nullptr, "GraphCapture on ", device.str(),
             ": a capture is already open on this thread; captures do not nest");
  if (!graph.impl_) graph.impl_ = std::make_shared<g::GraphImpl>();
  detail::DeviceContext* dev = detail::Registry::get().resolve(device);
  std::shared_ptr<g::Pool> p = pool.impl_ ? pool.impl_ : std::make_shared<g::Pool>();
  graph.reset();  // throws nothing; waits for a replay in flight on another thread
  capture_ = std::make_unique<g::Capture>(graph.impl_, dev, std::move(p));
  g::tls_capture = capture_.get();
  g::open_captures.fetch_add(1, std::memory_order_relaxed);
}

GraphCapture::~GraphCapture() {
  g::tls_capture = nullptr;
  g::open_captures.fetch_sub(1, std::memory_order_relaxed);
  g::Capture& c = *capture_;
  g::GraphImpl& graph = *c.graph;
  std::lock_guard lock(graph.replay_mutex);
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
  for (auto& [storage, weak] : c.external) graph.external.push_back(std::move(weak));
  graph.captured = true;
}

bool is_capturing() { return g::active() != nullptr; }

}  // namespace kiln
