// Loss functions: nll_loss is a catalogue op pair; binary_cross_entropy_with_logits
// records its own gradient (PyTorch's); the rest compose differentiable ops, so their
// gradients come from autograd.

#include <atomic>

#include "autograd/record.h"
#include "dispatch/autocast.h"
#include "kiln/autograd.h"
#include "kiln/nn/functional.h"
#include "kiln/ops.h"
#include "ops/common.h"
#include "runtime/log.h"

namespace kiln::nn::functional {

using detail::OpId;
namespace ag = detail::autograd_impl;
using Grads = std::vector<Tensor>;
using Saved = std::vector<Tensor>;

namespace {

Tensor reduce(const Tensor& loss, Reduction reduction) {
  switch (reduction) {
    case Reduction::None:
      return loss;
    case Reduction::Sum:
      return loss.sum();
    case Reduction::Mean:
      return loss.mean();
  }
  return loss;
}

void check_pair(const Tensor& input, const Tensor& target, const char* op) {
  detail::check_same_device(op, {&input, &target});
  KILN_CHECK(input.shape() == target.shape(), op, ": input shape ", input.shape(),
             " and target shape ", target.shape(), " differ");
  KILN_CHECK(is_floating(input.dtype()), op, ": expected a floating-point input, got ",
             input.dtype());
}

// As PyTorch's mse_loss and l1_loss: shapes that differ are broadcast, with a warning
// (logged once per op) since that is rarely what was meant.
void check_broadcast_pair(const Tensor& input, const Tensor& target, const char* op,
                          std::atomic<bool>& warned) {
  detail::check_same_device(op, {&input, &target});
  KILN_CHECK(is_floating(input.dtype()), op, ": expected a floating-point input, got ",
             input.dtype());
  if (input.shape() == target.shape()) return;
  detail::broadcast_shapes(input.shape(), target.shape(), op);  // throws if they cannot
  if (!warned.exchange(true))
    detail::log(KILN_LOG_WARNING, op,
                detail::concat("using a target size ", target.shape(),
                               " that is different to the input size ", input.shape(),
                               "; they are broadcast, which is likely not what was meant"));
}

// Class-index targets: input [N, C, d1, ...] (or unbatched [C]) and target [N, d1, ...]
// (or []) as rows [M, C] and targets [M]; `shape` is the target's (the per-element loss).
struct ClassRows {
  Tensor rows, target;
  std::vector<int64_t> shape;
  int64_t classes;
};

ClassRows class_rows(const Tensor& input, const Tensor& target, const char* op) {
  detail::impl_of(input, op);
  detail::impl_of(target, op);
  detail::check_same_device(op, {&input, &target});
  KILN_CHECK(is_floating(input.dtype()), op, ": expected a floating-point input, got ",
             input.dtype());
  KILN_CHECK(target.dtype() == DType::Int64 || target.dtype() == DType::Int32, op,
             ": target must hold class indices (int64), got ", target.dtype());
  KILN_CHECK(input.dim() >= 1, op, ": expected input [N, C, d1, ...] or [C], got shape ",
             input.shape());
  std::vector<int64_t> shape;  // the target's: the input's without the class dim
  if (input.dim() >= 2) {
    shape.push_back(input.size(0));
    for (int64_t d = 2; d < input.dim(); ++d) shape.push_back(input.size(d));
  }
  KILN_CHECK(target.shape().vec() == shape, op, ": expected target ", IntArrayRef(shape),
             " for input ", input.shape(), ", got shape ", target.shape());
  const int64_t classes = input.size(input.dim() == 1 ? 0 : 1);
  Tensor rows = input;
  if (input.dim() > 2) {  // [N, C, d...] -> [N, d..., C]
    std::vector<int64_t> order{0};
    for (int64_t d = 2; d < input.dim(); ++d) order.push_back(d);
    order.push_back(1);
    rows = input.permute(order);
  }
  return {rows.reshape({-1, classes}), target.reshape({-1}), shape, classes};
}

// Per-row -logp[i, target[i]] (0 where ignored).
Tensor nll_per_sample(const Tensor& logp, const Tensor& target, int64_t ignore_index) {
  Tensor lc = logp.contiguous();
  Tensor t = target.to(DType::Int64).contiguous();
  Tensor loss = detail::empty_on(logp, {logp.size(0)}, logp.dtype());
  detail::dispatch(detail::attrs::nll_loss{.ignore_index = ignore_index},
                   {lc.impl().get(), t.impl().get()}, {loss.impl().get()});
  if (ag::needs_grad({&logp}))
    ag::record("NllLossBackward", loss, {&logp}, {t},
               [ignore_index, c = logp.size(1)](const Saved& s, const Tensor& g) -> Grads {
                 Tensor gc = g.contiguous();
                 Tensor dx = detail::empty_on(g, {g.size(0), c}, g.dtype());
                 detail::dispatch(detail::attrs::nll_loss_backward{.ignore_index = ignore_index},
                                  {gc.impl().get(), s[0].impl().get()}, {dx.impl().get()});
                 return {dx};
               });
  return loss;
}

// The class weight [C] as a floating tensor of `like`'s dtype, checked.
Tensor checked_weight(const Tensor& weight, const Tensor& like, int64_t classes, const char* op) {
  detail::check_same_device(op, {&like, &weight});
  KILN_CHECK(weight.dim() == 1 && weight.size(0) == classes, op, ": expected a weight of shape [",
             classes, "] (one per class), got shape ", weight.shape());
  KILN_CHECK(is_floating(weight.dtype()), op, ": expected a floating-point weight, got ",
             weight.dtype());
  return weight.to(like.dtype());
}

// weight[target[i]] for every row, 0 where ignored.
Tensor target_weights(const Tensor& weight, const ClassRows& r, int64_t ignore_index) {
  Tensor counted = r.target != ignore_index;
  Tensor safe = where(counted, r.target.to(DType::Int64), 0);
  return where(counted, index_select(weight, 0, safe), 0.0);
}

// PyTorch's reductions of class losses: the mean divides by the number of targets
// that are not ignore_index or, with class weights, by the sum of their weights.
Tensor reduce_classes(const Tensor& loss, const ClassRows& r, const Tensor& weights,
                      Reduction reduction, int64_t ignore_index) {
  switch (reduction) {
    case Reduction::None:
      return loss.reshape(r.shape);
    case Reduction::Sum:
      return loss.sum();
    case Reduction::Mean:
      break;
  }
  Tensor total =
      weights.defined() ? weights.sum() : (r.target != ignore_index).sum().to(loss.dtype());
  return loss.sum() / total;
}

}  // namespace

Tensor mse_loss(const Tensor& input, const Tensor& target, Reduction reduction) {
  static std::atomic<bool> warned{false};
  check_broadcast_pair(input, target, "mse_loss", warned);
  Tensor d = input - target;
  return reduce(d * d, reduction);
}

Tensor l1_loss(const Tensor& input, const Tensor& target, Reduction reduction) {
  static std::atomic<bool> warned{false};
  check_broadcast_pair(input, target, "l1_loss", warned);
  return reduce((input - target).abs(), reduction);
}

Tensor nll_loss(const Tensor& logp, const Tensor& target, Reduction reduction, int64_t ignore_index,
                const Tensor& weight) {
  if (detail::autocast_on) {
    Tensor lc = logp;
    if (detail::autocast_inputs(OpId::nll_loss, {&lc}))
      return nll_loss(lc, target, reduction, ignore_index, weight);
  }
  const ClassRows r = class_rows(logp, target, "nll_loss");
  Tensor w = weight.defined() ? checked_weight(weight, logp, r.classes, "nll_loss") : Tensor();
  Tensor loss = nll_per_sample(r.rows, r.target, ignore_index);
  Tensor weights = w.defined() ? target_weights(w, r, ignore_index) : Tensor();
  if (weights.defined()) loss = loss * weights;
  return reduce_classes(loss, r, weights, reduction, ignore_index);
}

Tensor cross_entropy(const Tensor& logits, const Tensor& target, Reduction reduction,
                     int64_t ignore_index, double label_smoothing, const Tensor& weight) {
  KILN_CHECK(label_smoothing >= 0 && label_smoothing <= 1,
             "cross_entropy: label_smoothing must be in [0, 1], got ", label_smoothing);
  const ClassRows r = class_rows(logits, target, "cross_entropy");
  Tensor logp = log_softmax(r.rows, 1);
  Tensor w = weight.defined() ? checked_weight(weight, logp, r.classes, "cross_entropy") : Tensor();
  Tensor loss = nll_per_sample(logp, r.target, ignore_index);
  Tensor weights = w.defined() ? target_weights(w, r, ignore_index) : Tensor();
  if (weights.defined()) loss = loss * weights;
  if (label_smoothing > 0) {
    // PyTorch's smoothing term: −Σ_c w_c·logp_c / C (w = 1 without class weights).
    Tensor sum = w.defined() ? (logp * w.reshape({1, r.classes})).sum({1}) : logp.sum({1});
    Tensor smooth = where(r.target != ignore_index, -sum, 0.0) / static_cast<double>(r.classes);
    loss = loss * (1.0 - label_smoothing) + smooth * label_smoothing;
  }
  return reduce_classes(loss, r, weights, reduction, ignore_index);
}

Tensor binary_cross_entropy_with_logits(const Tensor& logits, const Tensor& target,
                                        Reduction reduction) {
  check_pair(logits, target, "binary_cross_entropy_with_logits");
  Tensor loss;
  {
    NoGradGuard no_grad;  // the node recorded below is the gradient
    // PyTorch's formula, (1 − t)·x + m + log(exp(−m) + exp(−x − m)) with m = max(−x, 0):
    // it never overflows, and x = +inf gives +inf (x = −inf gives NaN, as PyTorch).
    Tensor m = (-logits).relu();
    loss = (1.0 - target) * logits + m + log(exp(-m) + exp(-logits - m));
  }
  if (ag::needs_grad({&logits, &target})) {
    const bool gx = ag::requires_grad(logits), gt = ag::requires_grad(target);
    ag::record("BinaryCrossEntropyWithLogitsBackward", loss, {&logits, &target}, {logits, target},
               [gx, gt](const Saved& s, const Tensor& g) -> Grads {
                 // d/dx = sigmoid(x) − t (0.5 − t at x = 0); d/dt = −x, as PyTorch 1.13.
                 Grads grads(2);
                 if (gx) grads[0] = ((s[0].sigmoid() - s[1]) * g).to(s[0].dtype());
                 if (gt) grads[1] = (-s[0] * g).to(s[1].dtype());
                 return grads;
               });
  }
  return reduce(loss, reduction);
}

}  // namespace kiln::nn::functional
