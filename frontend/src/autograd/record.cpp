// Recording the autograd tape as ops run: grad mode, each tensor's autograd state,
// the nodes' edges, leaf accumulation (AccumulateGrad), saved tensors and their
// version checks. The engine that walks the tape is engine.cpp.

#include <atomic>

#include "autograd/record.h"
#include "kiln/error.h"
#include "kiln/ops.h"

namespace kiln {

using autograd::Edge;
using autograd::Node;

bool is_grad_enabled() { return detail::autograd_impl::grad_enabled; }
void set_grad_enabled(bool enabled) { detail::autograd_impl::grad_enabled = enabled; }

namespace detail::autograd_impl {

AutogradMeta& meta_of(const Tensor& t) {
  auto& impl = *t.impl();
  if (!impl.autograd) impl.autograd = std::make_unique<AutogradMeta>();
  return *impl.autograd;
}

namespace {

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

}  // namespace kiln
