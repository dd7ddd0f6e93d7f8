// The backward engine: a dependency-counted walk of the tape in reverse creation
// order (backward, autograd::grad), with hooks and queued callbacks. The tape is
// recorded by record.cpp.

#include <algorithm>
#include <exception>
#include <queue>
#include <unordered_map>

#include "autograd/record.h"
#include "dispatch/autocast.h"
#include "kiln/error.h"
#include "kiln/ops.h"
#include "runtime/profiler_hooks.h"

namespace kiln {

namespace ag = detail::autograd_impl;
using autograd::Edge;
using autograd::Node;

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

}  // namespace kiln
