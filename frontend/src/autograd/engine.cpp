// The autograd tape: grad mode, recording helpers, leaf accumulation, and the
// backward engine (a dependency-counted walk in reverse creation order).

#include <cxxabi.h>

#include <algorithm>
#include <atomic>
#include <cstdlib>
#include <exception>
#include <queue>
#include <unordered_map>

#include "amp/autocast.h"
#include "autograd/record.h"
#include "kiln/ops.h"
#include "ops/common.h"
#include "profiler/profiler_hooks.h"

namespace kiln {

namespace ag = detail::autograd_impl;
using autograd::Edge;
using autograd::Node;

bool is_grad_enabled() { return ag::grad_enabled; }
void set_grad_enabled(bool enabled) { ag::grad_enabled = enabled; }

namespace detail::autograd_impl {

namespace {

AutogradMeta& meta_of(const Tensor& t) {
  auto& impl = *t.impl();
  if (!impl.autograd) impl.autograd = std::make_unique<AutogradMeta>();
  return *impl.autograd;
}

// Adds gradients into a leaf's .grad(): the first one is copied (it may be shared
// with other consumers), later ones are added in place.
class AccumulateGrad final : public Node {
 public:
  explicit AccumulateGrad(std::shared_ptr<TensorImpl> leaf) : leaf_(std::move(leaf)) {}
  std::vector<Tensor> apply(std::vector<Tensor>&& grads) override {
    Tensor g = std::move(grads[0]);
    if (!g.defined()) return {};
    AutogradMeta& meta = *leaf_->autograd;
    Tensor leaf(leaf_);
    KILN_CHECK(g.shape() == leaf.shape(), "backward: the gradient for a leaf of shape ",
               leaf.shape(), " has shape ", g.shape());
    if (g.device() != leaf.device()) g = g.to(leaf.device());
    if (!meta.grad.defined()) {
      // A gradient nobody else holds (no other handle, no other view of its
      // storage) becomes .grad() as it is, as PyTorch does, instead of being copied:
      // for a large weight that copy was a whole extra pass per step.
      const auto& impl = *g.impl();
      const bool sole_owner = g.impl().use_count() == 1 && impl.storage.use_count() == 1 &&
                              !impl.autograd && impl.dtype == leaf_->dtype && impl.is_contiguous();
      meta.grad = sole_owner ? std::move(g) : g.to(leaf_->dtype).clone();
    } else {
      meta.grad.add_(g);
    }
    // By index, on a copy of each hook: a hook may register another (which can move
    // the vector), and re-reading the leaf's state each time guards against a hook
    // that resets it.
    for (size_t i = 0; leaf_->autograd && i < leaf_->autograd->post_accumulate_grad_hooks.size();
         ++i) {
      auto hook = leaf_->autograd->post_accumulate_grad_hooks[i];
      hook(leaf);
    }
    return {};
  }
  std::string name() const override { return "AccumulateGrad"; }

 private:
  std::shared_ptr<TensorImpl> leaf_;
};

std::shared_ptr<Node> grad_accumulator(const Tensor& leaf) {
  AutogradMeta& meta = meta_of(leaf);
  if (auto existing = meta.grad_accumulator.lock()) return existing;
  auto node = std::make_shared<AccumulateGrad>(leaf.impl());
  node->sequence_nr = next_sequence_nr();
  meta.grad_accumulator = node;
  return node;
}

}  // namespace

uint64_t next_sequence_nr() {
  static std::atomic<uint64_t> counter{0};
  return counter.fetch_add(1, std::memory_order_relaxed);
}

SavedTensor save(const Tensor& t) {
  if (!t.defined()) return {};
  return {t.detach(), t.impl()->storage->version};
}

Edge gradient_edge(const Tensor& t) {
  if (!requires_grad(t)) return {};
  const AutogradMeta& meta = *t.impl()->autograd;
  if (meta.grad_fn) return {meta.grad_fn, meta.output_nr};
  return {grad_accumulator(t), 0};
}

namespace {
void connect(Tensor& out, const std::shared_ptr<Node>& node) {
  node->sequence_nr = next_sequence_nr();
  AutogradMeta& meta = meta_of(out);
  meta.requires_grad = true;
  meta.grad_fn = node;
  meta.output_nr = 0;
}
}  // namespace

void attach(Tensor& out, const std::shared_ptr<Node>& node,
            std::initializer_list<const Tensor*> inputs) {
  node->next_edges.reserve(inputs.size());
  for (const Tensor* t : inputs) node->next_edges.push_back(gradient_edge(*t));
  connect(out, node);
}

void attach(Tensor& out, const std::shared_ptr<Node>& node, const std::vector<Tensor>& inputs) {
  node->next_edges.reserve(inputs.size());
  for (const Tensor& t : inputs) node->next_edges.push_back(gradient_edge(t));
  connect(out, node);
}

std::vector<Tensor> unpack(const std::vector<SavedTensor>& saved, bool released,
                           const std::string& node_name) {
  KILN_CHECK(!released, "backward: trying to run ", node_name,
             " a second time, but its saved tensors were freed by the first backward(); "
             "pass retain_graph=true to the first call");
  std::vector<Tensor> out;
  out.reserve(saved.size());
  for (const SavedTensor& s : saved) {
    if (s.tensor.defined())
      KILN_CHECK(s.tensor.impl()->storage->version == s.version, "backward: a tensor of shape ",
                 s.tensor.shape(), " saved by ", node_name,
                 " was modified by an in-place operation after it was saved (version ", s.version,
                 " -> ", s.tensor.impl()->storage->version, ")");
    out.push_back(s.tensor);
  }
  return out;
}

Tensor sum_to(const Tensor& grad, IntArrayRef shape) {
  if (grad.shape() == shape) return grad;
  int64_t lead = grad.dim() - static_cast<int64_t>(shape.size());
  std::vector<int64_t> dims;
  for (int64_t i = 0; i < grad.dim(); ++i)
    if (i < lead || (shape[i - lead] == 1 && grad.size(i) != 1)) dims.push_back(i);
  Tensor r = dims.empty() ? grad : grad.sum(dims, /*keepdim=*/true);
  return r.reshape(shape);
}

void check_inplace(const Tensor& self, const char* op, const Tensor* other) {
  if (grad_enabled) {
    KILN_CHECK(!requires_grad(self), op,
               ": in-place operation on a tensor that requires grad "
               "(shape ",
               self.shape(),
               "); use the out-of-place op, or do it inside a "
               "kiln::NoGradGuard (as optimizer steps do)");
    KILN_CHECK(!other || !requires_grad(*other), op,
               ": in-place operation whose operand "
               "requires grad would not be recorded; use the out-of-place op");
  }
  self.impl()->storage->version++;
}

}  // namespace detail::autograd_impl

// -- Tensor's autograd methods ---------------------------------------------------------

bool Tensor::requires_grad() const { return ag::requires_grad(*this); }

Tensor& Tensor::requires_grad_(bool requires_grad) {
  const auto& impl = detail::impl_of(*this, "requires_grad_");
  KILN_CHECK(is_leaf(),
             "requires_grad_: only leaf tensors can change requires_grad; use "
             "detach() to get a leaf");
  KILN_CHECK(!requires_grad || is_floating(impl.dtype) || is_complex(impl.dtype),
             "requires_grad_: only floating-point and complex tensors can require gradients, "
             "got ",
             impl.dtype);
  ag::meta_of(*this).requires_grad = requires_grad;
  return *this;
}

Tensor Tensor::grad() const {
  const auto& impl = detail::impl_of(*this, "grad");
  return impl.autograd ? impl.autograd->grad : Tensor();
}

void Tensor::set_grad(const Tensor& grad) {
  detail::impl_of(*this, "set_grad");
  if (grad.defined())
    KILN_CHECK(grad.shape() == shape() && grad.dtype() == dtype() && grad.device() == device(),
               "set_grad: the gradient must match the tensor's shape, dtype and device (", shape(),
               " ", dtype(), " on ", device(), "), got ", grad.shape(), " ", grad.dtype(), " on ",
               grad.device());
  ag::meta_of(*this).grad = grad;
}

bool Tensor::is_leaf() const {
  const auto& impl = detail::impl_of(*this, "is_leaf");
  return !impl.autograd || !impl.autograd->grad_fn;
}

void Tensor::retain_grad() const {
  KILN_CHECK(requires_grad(), "retain_grad: the tensor does not require grad");
  if (is_leaf()) return;  // leaves keep their gradient anyway
  auto& meta = *impl()->autograd;
  if (meta.retains_grad) return;
  meta.retains_grad = true;
  std::weak_ptr<detail::TensorImpl> weak = impl();
  uint32_t output_nr = meta.output_nr;
  meta.grad_fn->pre_hooks.push_back([weak, output_nr](const std::vector<Tensor>& grads) {
    auto target = weak.lock();
    if (!target || !grads[output_nr].defined()) return;
    Tensor& g = target->autograd->grad;
    g = g.defined() ? g + grads[output_nr] : grads[output_nr].clone();
  });
}

std::shared_ptr<autograd::Node> Tensor::grad_fn() const {
  const auto& impl = detail::impl_of(*this, "grad_fn");
  return impl.autograd ? impl.autograd->grad_fn : nullptr;
}

Tensor Tensor::detach() const {
  const auto& impl = detail::impl_of(*this, "detach");
  auto out = std::make_shared<detail::TensorImpl>();
  out->storage = impl.storage;
  out->shape = impl.shape;
  out->strides = impl.strides;
  out->offset = impl.offset;
  out->numel = impl.numel;
  out->dtype = impl.dtype;
  return Tensor(std::move(out));
}

void Tensor::backward(const Tensor& gradient, bool retain_graph) const {
  kiln::backward({*this},
                 gradient.defined() ? std::vector<Tensor>{gradient} : std::vector<Tensor>{},
                 retain_graph);
}

// -- the engine ------------------------------------------------------------------------

namespace {
// The callbacks queued during the backward pass this thread is running, or null.
thread_local std::vector<std::function<void()>>* queued_callbacks = nullptr;
}  // namespace

namespace autograd {

void register_post_accumulate_grad_hook(const Tensor& leaf,
                                        std::function<void(const Tensor&)> hook) {
  kiln::detail::impl_of(leaf, "register_post_accumulate_grad_hook");
  KILN_CHECK(leaf.requires_grad() && !leaf.impl()->autograd->grad_fn,
             "register_post_accumulate_grad_hook: expected a leaf tensor that requires grad "
             "(shape ",
             leaf.shape(), ")");
  leaf.impl()->autograd->post_accumulate_grad_hooks.push_back(std::move(hook));
}

void queue_callback(std::function<void()> callback) {
  KILN_CHECK(queued_callbacks != nullptr,
             "queue_callback: no backward pass is running on this "
             "thread");
  queued_callbacks->push_back(std::move(callback));
}

}  // namespace autograd

namespace {

// One pass of the engine. backward() runs every node reachable from the outputs and
// accumulates into leaves. autograd::grad() passes `inputs`: then only the nodes on a
// path to an input run, no AccumulateGrad runs, no hook runs, and the gradient
// reaching each input is returned instead.
std::vector<Tensor> run_backward(const char* what, const std::vector<Tensor>& outputs,
                                 const std::vector<Tensor>& grad_outputs, bool retain_graph,
                                 const std::vector<Tensor>* inputs, bool allow_unused) {
  KILN_CHECK(grad_outputs.empty() || grad_outputs.size() == outputs.size(), what, ": got ",
             grad_outputs.size(), " gradients for ", outputs.size(), " outputs");
  NoGradGuard no_grad;
  detail::AutocastSuspend no_autocast;  // gradients run in the forward's dtypes
  detail::PhaseScope phase(profiler::Phase::Backward);
  // Callbacks queued by hooks of this pass run at its end; a nested backward (from a
  // hook or a custom Function) keeps its own list.
  std::vector<std::function<void()>> callbacks;
  struct CallbackScope {
    std::vector<std::function<void()>>* saved;
    explicit CallbackScope(std::vector<std::function<void()>>* mine) : saved(queued_callbacks) {
      queued_callbacks = mine;
    }
    ~CallbackScope() { queued_callbacks = saved; }
  } callback_scope(&callbacks);

  struct Task {
    std::vector<Tensor> grads;
    int dependencies = 0;
    bool needed = true;  // on a path to an input (always, for backward())
    bool runs = true;    // applied; for grad(), only if it leads on to another input
  };
  std::unordered_map<Node*, Task> tasks;
  std::vector<std::pair<Edge, Tensor>> roots;
  for (size_t i = 0; i < outputs.size(); ++i) {
    const Tensor& out = outputs[i];
    detail::impl_of(out, what);
    KILN_CHECK(out.requires_grad(), what, ": output ", i, " (shape ", out.shape(),
               ") does not require grad and has no grad_fn; did an input call "
               "requires_grad_()?");
    Tensor g;
    if (!grad_outputs.empty() && grad_outputs[i].defined()) {
      g = grad_outputs[i];
      KILN_CHECK(g.shape() == out.shape(), what, ": the gradient has shape ", g.shape(),
                 " but the output has shape ", out.shape());
    } else {
      KILN_CHECK(out.numel() == 1, what,
                 ": a gradient can be created implicitly only for a "
                 "single-element output, but output ",
                 i, " has shape ", out.shape(), "; pass the gradient (e.g. ones_like(output))");
      g = ones_like(out);
    }
    roots.emplace_back(ag::gradient_edge(out), g.device() == out.device() ? g : g.to(out.device()));
  }

  // Every reachable node, in discovery order.
  std::vector<Node*> reachable, stack;
  for (auto& [edge, g] : roots) {
    if (tasks.try_emplace(edge.node.get()).second) stack.push_back(edge.node.get());
  }
  while (!stack.empty()) {
    Node* node = stack.back();
    stack.pop_back();
    reachable.push_back(node);
    for (const Edge& e : node->next_edges)
      if (e.valid() && tasks.try_emplace(e.node.get()).second) stack.push_back(e.node.get());
  }

  // autograd::grad(): where each input's gradient arrives, and which nodes lead there.
  std::unordered_map<Node*, std::vector<std::pair<size_t, uint32_t>>> captures;
  std::vector<Tensor> captured;
  if (inputs) {
    captured.resize(inputs->size());
    for (size_t i = 0; i < inputs->size(); ++i) {
      const Tensor& in = (*inputs)[i];
      detail::impl_of(in, what);
      KILN_CHECK(in.requires_grad(), what, ": input ", i, " (shape ", in.shape(),
                 ") does not require grad");
      Edge e = ag::gradient_edge(in);
      captures[e.node.get()].emplace_back(i, e.input_nr);
    }
    // A node is needed if it is an input's node or leads to one. Nodes are created
    // before the nodes that use their outputs, so in ascending sequence_nr every
    // node's successors (next_edges) come first.
    std::vector<Node*> order = reachable;
    std::sort(order.begin(), order.end(),
              [](Node* a, Node* b) { return a->sequence_nr < b->sequence_nr; });
    for (Node* node : order) {
      Task& task = tasks[node];
      task.runs = false;  // a leaf's accumulator never runs
      for (const Edge& e : node->next_edges) task.runs |= e.valid() && tasks[e.node.get()].needed;
      task.needed = task.runs || captures.contains(node);
    }
  }
  for (Node* node : reachable) {
    if (!tasks[node].needed) continue;
    for (const Edge& e : node->next_edges)
      if (e.valid() && tasks[e.node.get()].needed) tasks[e.node.get()].dependencies++;
  }

  auto add_grad = [&](const Edge& edge, Tensor g) {
    Task& task = tasks[edge.node.get()];
    if (task.grads.size() < edge.node->num_outputs) task.grads.resize(edge.node->num_outputs);
    Tensor& slot = task.grads[edge.input_nr];
    slot = slot.defined() ? slot + g : std::move(g);
  };
  for (auto& [edge, g] : roots)
    if (tasks[edge.node.get()].needed) add_grad(edge, g);

  // Ready nodes run newest first, which keeps memory low (a node's gradient is
  // consumed soon after it is produced) and matches PyTorch's order.
  auto later = [](Node* a, Node* b) { return a->sequence_nr < b->sequence_nr; };
  std::priority_queue<Node*, std::vector<Node*>, decltype(later)> ready(later);
  for (auto& [node, task] : tasks)
    if (task.needed && task.dependencies == 0) ready.push(node);

  while (!ready.empty()) {
    Node* node = ready.top();
    ready.pop();
    Task& task = tasks[node];
    std::vector<Tensor> grads = std::move(task.grads);
    grads.resize(node->num_outputs);
    if (inputs) {
      if (auto it = captures.find(node); it != captures.end())
        for (auto [input, slot] : it->second) captured[input] = grads[slot];
      if (!task.runs) continue;
    } else {
      for (auto& hook : node->pre_hooks) hook(grads);
    }
    std::vector<Tensor> input_grads = node->apply(std::move(grads));
    if (!retain_graph) node->release_saved();
    KILN_CHECK(input_grads.size() == node->next_edges.size() || node->next_edges.empty(), what,
               ": ", node->name(), " returned ", input_grads.size(), " gradients for ",
               node->next_edges.size(), " inputs");
    for (size_t i = 0; i < node->next_edges.size(); ++i) {
      const Edge& e = node->next_edges[i];
      if (!e.valid() || !tasks[e.node.get()].needed) continue;
      if (input_grads[i].defined()) add_grad(e, std::move(input_grads[i]));
      if (--tasks[e.node.get()].dependencies == 0) ready.push(e.node.get());
    }
  }
  // Every callback runs even if an earlier one throws (a reducer must always get to
  // clean up); the first exception is rethrown afterwards. A callback may queue more.
  std::exception_ptr first_error;
  for (size_t i = 0; i < callbacks.size(); ++i) {
    auto callback = std::move(callbacks[i]);
    try {
      callback();
    } catch (...) {
      if (!first_error) first_error = std::current_exception();
    }
  }
  if (first_error) std::rethrow_exception(first_error);

  for (size_t i = 0; i < captured.size(); ++i) {
    const Tensor& in = (*inputs)[i];
    if (!captured[i].defined()) {
      KILN_CHECK(allow_unused, what, ": input ", i, " (shape ", in.shape(),
                 ") was not used to compute the outputs; pass allow_unused = true to get an "
                 "undefined gradient for it");
      continue;
    }
    if (captured[i].device() != in.device()) captured[i] = captured[i].to(in.device());
  }
  return captured;
}

}  // namespace

void backward(const std::vector<Tensor>& outputs, const std::vector<Tensor>& grad_outputs,
              bool retain_graph) {
  run_backward("backward", outputs, grad_outputs, retain_graph, nullptr, false);
}

std::vector<Tensor> autograd::grad(const std::vector<Tensor>& outputs,
                                   const std::vector<Tensor>& inputs,
                                   const std::vector<Tensor>& grad_outputs, bool retain_graph,
                                   bool create_graph, bool allow_unused) {
  KILN_CHECK(!create_graph,
             "autograd::grad: create_graph (double backward) is not supported: "
             "Kiln records no graph while it computes gradients");
  KILN_CHECK(!inputs.empty(), "autograd::grad: no inputs to differentiate with respect to");
  return run_backward("autograd::grad", outputs, grad_outputs, retain_graph, &inputs, allow_unused);
}

// -- user-defined functions ----------------------------------------------------------

namespace autograd {

struct ContextAccess {
  static void release(AutogradContext& c) {
    c.saved_.clear();
    c.released_ = true;
  }
  static void set_name(AutogradContext& c, std::string n) { c.name_ = std::move(n); }
};

void AutogradContext::save_for_backward(std::vector<Tensor> tensors) {
  saved_.clear();
  versions_.clear();
  for (const Tensor& t : tensors) {
    auto s = ag::save(t);
    saved_.push_back(s.tensor);
    versions_.push_back(s.version);
  }
}

std::vector<Tensor> AutogradContext::saved() const {
  std::vector<ag::SavedTensor> s;
  for (size_t i = 0; i < saved_.size(); ++i) s.push_back({saved_[i], versions_[i]});
  return ag::unpack(s, released_, name_);
}

namespace {
class FunctionNode final : public Node {
 public:
  using Backward = std::function<std::vector<Tensor>(AutogradContext&, std::vector<Tensor>)>;
  FunctionNode(std::string name, std::shared_ptr<AutogradContext> ctx, Backward backward,
               std::vector<IntArrayRef> shapes)
      : name_(std::move(name)), ctx_(std::move(ctx)), backward_(std::move(backward)) {
    for (auto s : shapes) shapes_.push_back(s.vec());
  }
  std::vector<Tensor> apply(std::vector<Tensor>&& grads) override {
    std::vector<Tensor> out = backward_(*ctx_, std::move(grads));
    KILN_CHECK(out.size() == next_edges.size(), name_, "::backward returned ", out.size(),
               " gradients, but forward took ", next_edges.size(), " tensor arguments");
    for (size_t i = 0; i < out.size(); ++i)
      if (out[i].defined())
        KILN_CHECK(out[i].shape() == IntArrayRef(shapes_[i]), name_,
                   "::backward returned a "
                   "gradient of shape ",
                   out[i].shape(), " for argument ", i, " of shape ", IntArrayRef(shapes_[i]));
    return out;
  }
  std::string name() const override { return name_; }
  void release_saved() override { ContextAccess::release(*ctx_); }

 private:
  std::string name_;
  std::shared_ptr<AutogradContext> ctx_;
  Backward backward_;
  std::vector<std::vector<int64_t>> shapes_;
};
}  // namespace

std::string detail::demangle(const std::type_info& type) {
  int status = 0;
  std::unique_ptr<char, void (*)(void*)> name(
      abi::__cxa_demangle(type.name(), nullptr, nullptr, &status), std::free);
  return status == 0 && name ? name.get() : type.name();
}

Tensor detail::record_function(
    std::string name, std::shared_ptr<AutogradContext> ctx, const std::vector<Tensor>& inputs,
    Tensor output,
    std::function<std::vector<Tensor>(AutogradContext&, std::vector<Tensor>)> backward) {
  KILN_CHECK(output.defined(), name, "::forward returned an undefined tensor");
  bool needs = is_grad_enabled();
  if (needs) {
    needs = false;
    for (const Tensor& t : inputs) needs |= t.requires_grad();
  }
  ContextAccess::set_name(*ctx, name);
  if (!needs) return output;
  // The output of forward may alias an input; give it its own handle.
  Tensor out = output.detach();
  std::vector<IntArrayRef> shapes;
  for (const Tensor& t : inputs) shapes.push_back(t.shape());
  auto node = std::make_shared<FunctionNode>(name, std::move(ctx), std::move(backward), shapes);
  ag::attach(out, node, inputs);
  return out;
}

}  // namespace autograd

}  // namespace kiln
