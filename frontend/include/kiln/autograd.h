#pragma once
/// @file autograd.h
/// Reverse-mode automatic differentiation on a dynamic tape, as in PyTorch.
///
/// @code
///   auto w = kiln::randn({3, 2}).requires_grad_();
///   auto loss = kiln::matmul(x, w).relu().sum();
///   loss.backward();                 // w.grad() now holds dloss/dw
///   {
///     kiln::NoGradGuard no_grad;     // optimizer steps are not recorded
///     w.sub_(w.grad() * 0.1);
///   }
/// @endcode
///
/// Every differentiable op records a Node holding what its backward needs; the
/// output's grad_fn points at it. backward() runs the nodes in reverse topological
/// order on the tensors' own device, sums the gradients of tensors used more than
/// once, reduces gradients of broadcast operands back to their shapes, and
/// accumulates into the .grad() of leaf tensors that require grad. Without
/// retain_graph the saved tensors are freed, and a second backward() through the
/// same graph throws. In-place ops (add_, copy_, ...) on tensors that require grad
/// are refused while recording; a tensor saved for backward and modified in place
/// afterwards makes backward() throw naming the node.

#include <functional>
#include <memory>
#include <string>
#include <tuple>
#include <type_traits>
#include <typeinfo>
#include <vector>

#include "kiln/tensor.h"

namespace kiln {

/// True unless a NoGradGuard is active on this thread.
bool is_grad_enabled();
void set_grad_enabled(bool enabled);

/// Disables recording on this thread for its lifetime (like torch::NoGradGuard).
class NoGradGuard {
 public:
  NoGradGuard() : previous_(is_grad_enabled()) { set_grad_enabled(false); }
  ~NoGradGuard() { set_grad_enabled(previous_); }
  NoGradGuard(const NoGradGuard&) = delete;
  NoGradGuard& operator=(const NoGradGuard&) = delete;

 private:
  bool previous_;
};

/// Runs backward from several roots at once. `grad_outputs` (one per output, or
/// empty when every output is a scalar) seeds the pass.
void backward(const std::vector<Tensor>& outputs, const std::vector<Tensor>& grad_outputs = {},
              bool retain_graph = false);

namespace autograd {

class Node;

/// The gradients of `outputs` with respect to `inputs` (torch.autograd.grad), one per
/// input, without touching any tensor's .grad(): leaves' gradients are returned, not
/// accumulated, and no hook runs. Only the part of the graph between the outputs and
/// the inputs is evaluated. `inputs` may be leaves or intermediate results; each must
/// require grad. `grad_outputs` as for backward(). An input the outputs do not depend
/// on is an error, unless `allow_unused` (its gradient is then undefined).
///
/// @code
///   auto x = kiln::randn({3}).requires_grad_();
///   auto y = (x * x).sum();
///   auto dx = kiln::autograd::grad({y}, {x})[0];   // 2 * x; x.grad() stays undefined
/// @endcode
///
/// Kiln records no graph while computing gradients, so there are no gradients of
/// gradients (double backward): `create_graph = true` throws kiln::Error.
std::vector<Tensor> grad(const std::vector<Tensor>& outputs, const std::vector<Tensor>& inputs,
                         const std::vector<Tensor>& grad_outputs = {}, bool retain_graph = false,
                         bool create_graph = false, bool allow_unused = false);

/// Where a gradient goes: input `input_nr` of `node`. An invalid edge (null node)
/// means the input does not need a gradient.
struct Edge {
  std::shared_ptr<Node> node;
  uint32_t input_nr = 0;
  bool valid() const { return node != nullptr; }
};

/// One recorded operation. apply() receives one gradient per forward output
/// (undefined when that output received none) and returns one per next edge
/// (undefined for "no gradient").
class Node {
 public:
  virtual ~Node() = default;
  virtual std::vector<Tensor> apply(std::vector<Tensor>&& grads) = 0;
  /// "MulBackward", "AccumulateGrad", ...
  virtual std::string name() const = 0;
  /// Frees what the node saved for backward (after a backward without retain_graph).
  virtual void release_saved() {}

  std::vector<Edge> next_edges;
  /// Called with the incoming gradients just before apply() (retain_grad uses it).
  std::vector<std::function<void(const std::vector<Tensor>&)>> pre_hooks;
  uint32_t num_outputs = 1;
  /// Creation order: later nodes run first when both are ready.
  uint64_t sequence_nr = 0;
  bool released = false;
};

/// Calls `hook(leaf)` each time a backward pass has accumulated a gradient into
/// `leaf.grad()` (torch's register_post_accumulate_grad_hook): once per backward
/// pass that reaches the leaf, after all its incoming gradients were summed. What
/// DistributedDataParallel uses to start reducing gradients while backward still
/// runs. `leaf` must be a leaf tensor that requires grad; hooks stay for the life of
/// the tensor.
void register_post_accumulate_grad_hook(const Tensor& leaf,
                                        std::function<void(const Tensor&)> hook);

/// Runs `callback` on this thread when the backward pass it is running finishes
/// (torch's queue_callback), after every node; callbacks run in the order queued and
/// may throw (backward() then throws). Throws kiln::Error outside a backward pass.
void queue_callback(std::function<void()> callback);

/// State shared by forward and backward of a user-defined Function.
class AutogradContext {
 public:
  /// Tensors backward() will need (checked against in-place modification).
  void save_for_backward(std::vector<Tensor> tensors);
  /// The saved tensors; throws if they were freed or modified in place since.
  std::vector<Tensor> saved() const;
  /// PyTorch's C++ spelling of saved().
  std::vector<Tensor> get_saved_variables() const { return saved(); }
  /// Free-form values for backward.
  std::vector<double> values;

 private:
  friend struct ContextAccess;
  std::vector<Tensor> saved_;
  std::vector<uint64_t> versions_;
  bool released_ = false;
  std::string name_;
};

namespace detail {
/// A C++ type's readable name ("Cube", "my::Scale<float>"), as grad_fn()->name()
/// shows a custom Function.
std::string demangle(const std::type_info& type);
/// Connects `output` to a node that calls `backward(ctx, grads)` and feeds the
/// gradients to `inputs` (libkiln's part of Function::apply).
Tensor record_function(
    std::string name, std::shared_ptr<AutogradContext> ctx, const std::vector<Tensor>& inputs,
    Tensor output,
    std::function<std::vector<Tensor>(AutogradContext&, std::vector<Tensor>)> backward);
}  // namespace detail

/// A differentiable function written by the user (torch.autograd.Function):
///
/// @code
///   struct Cube : kiln::autograd::Function<Cube> {
///     static kiln::Tensor forward(kiln::autograd::AutogradContext& ctx, const kiln::Tensor& x) {
///       ctx.save_for_backward({x});
///       return x * x * x;
///     }
///     static std::vector<kiln::Tensor> backward(kiln::autograd::AutogradContext& ctx,
///                                               std::vector<kiln::Tensor> grads) {
///       auto x = ctx.saved()[0];
///       return {grads[0] * 3 * x * x};     // one gradient per Tensor argument
///     }
///   };
///   auto y = Cube::apply(x);
/// @endcode
///
/// forward() runs without recording; backward() returns one gradient per Tensor
/// argument of forward, in order (undefined for "none").
template <typename Derived>
struct Function {
  template <typename... Args>
  static Tensor apply(Args&&... args) {
    auto ctx = std::make_shared<AutogradContext>();
    std::vector<Tensor> inputs;
    (collect(inputs, args), ...);
    Tensor output;
    {
      NoGradGuard no_grad;
      output = Derived::forward(*ctx, std::forward<Args>(args)...);
    }
    return detail::record_function(detail::demangle(typeid(Derived)), std::move(ctx), inputs,
                                   std::move(output),
                                   [](AutogradContext& c, std::vector<Tensor> g) {
                                     return Derived::backward(c, std::move(g));
                                   });
  }

 private:
  template <typename T>
  static void collect(std::vector<Tensor>& inputs, const T& arg) {
    if constexpr (std::is_same_v<std::decay_t<T>, Tensor>) inputs.push_back(arg);
  }
};

}  // namespace autograd

/// The outcome of gradcheck: whether analytic and numerical gradients agree, and
/// if not, where and by how much.
struct GradcheckResult {
  bool ok = false;
  double max_abs_error = 0;
  std::string message;
};

/// Compares the gradients backward() computes for `fn` with central finite
/// differences, in float64: inputs are converted to float64 (those that require
/// grad keep requiring it), the output is projected onto a fixed random tensor, and
/// every element of every input that requires grad is perturbed by ±eps (complex inputs,
/// in complex128: the real and the imaginary part of each, one at a time; a complex output
/// is projected through its real and imaginary parts). Passes
/// when |analytic − numerical| <= atol + rtol·|numerical| everywhere.
GradcheckResult gradcheck(const std::function<Tensor(const std::vector<Tensor>&)>& fn,
                          const std::vector<Tensor>& inputs, double eps = 1e-6, double atol = 1e-5,
                          double rtol = 1e-3);

}  // namespace kiln
