// Loss functions: nll_loss is a catalogue op pair; the rest compose differentiable
// ops, so their gradients come from autograd.

#include "amp/autocast.h"
#include "autograd/record.h"
#include "kiln/nn/functional.h"
#include "kiln/ops.h"
#include "ops/common.h"

namespace kiln::nn::functional {

using detail::OpId;
namespace ag = detail::autograd_impl;

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

void check_classes(const Tensor& logp, const Tensor& target, const char* op) {
  detail::check_same_device(op, {&logp, &target});
  KILN_CHECK(logp.dim() == 2, op, ": expected input [N, C], got shape ", logp.shape());
  KILN_CHECK(target.dim() == 1 && target.size(0) == logp.size(0), op, ": expected target [",
             logp.size(0), "] for input ", logp.shape(), ", got shape ", target.shape());
  KILN_CHECK(target.dtype() == DType::Int64 || target.dtype() == DType::Int32, op,
             ": target must hold class indices (int64), got ", target.dtype());
  KILN_CHECK(is_floating(logp.dtype()), op, ": expected a floating-point input, got ",
             logp.dtype());
}

// Per-sample -logp[i, target[i]] (0 where ignored).
Tensor nll_per_sample(const Tensor& logp, const Tensor& target, int64_t ignore_index) {
  Tensor lc = logp.contiguous();
  Tensor t = target.to(DType::Int64).contiguous();
  Tensor loss = detail::empty_on(logp, {logp.size(0)}, logp.dtype());
  detail::dispatch(detail::attrs::nll_loss{.ignore_index = ignore_index},
                   {lc.impl().get(), t.impl().get()}, {loss.impl().get()});
  if (ag::needs_grad({&logp}))
    ag::record("NllLossBackward", loss, {&logp}, {t},
               [ignore_index, c = logp.size(1)](const std::vector<Tensor>& s,
                                                const Tensor& g) -> std::vector<Tensor> {
                 Tensor gc = g.contiguous();
                 Tensor dx = detail::empty_on(g, {g.size(0), c}, g.dtype());
                 detail::dispatch(detail::attrs::nll_loss_backward{.ignore_index = ignore_index},
                                  {gc.impl().get(), s[0].impl().get()}, {dx.impl().get()});
                 return {dx};
               });
  return loss;
}

// Mean over the samples whose target is not ignore_index.
Tensor reduce_classes(const Tensor& loss, const Tensor& target, Reduction reduction,
                      int64_t ignore_index) {
  if (reduction != Reduction::Mean) return reduce(loss, reduction);
  Tensor counted = (target != ignore_index).sum().to(loss.dtype());
  return loss.sum() / counted;
}

}  // namespace

Tensor mse_loss(const Tensor& input, const Tensor& target, Reduction reduction) {
  check_pair(input, target, "mse_loss");
  Tensor d = input - target;
  return reduce(d * d, reduction);
}

Tensor l1_loss(const Tensor& input, const Tensor& target, Reduction reduction) {
  check_pair(input, target, "l1_loss");
  return reduce((input - target).abs(), reduction);
}

Tensor nll_loss(const Tensor& logp, const Tensor& target, Reduction reduction,
                int64_t ignore_index) {
  if (detail::autocast_on) {
    Tensor lc = logp;
    if (detail::autocast_inputs(OpId::nll_loss, {&lc}))
      return nll_loss(lc, target, reduction, ignore_index);
  }
  check_classes(logp, target, "nll_loss");
  return reduce_classes(nll_per_sample(logp, target, ignore_index), target, reduction,
                        ignore_index);
}

Tensor cross_entropy(const Tensor& logits, const Tensor& target, Reduction reduction,
                     int64_t ignore_index, double label_smoothing) {
  check_classes(logits, target, "cross_entropy");
  KILN_CHECK(label_smoothing >= 0 && label_smoothing <= 1,
             "cross_entropy: label_smoothing must be in [0, 1], got ", label_smoothing);
  Tensor logp = log_softmax(logits, 1);
  Tensor loss = nll_per_sample(logp, target, ignore_index);
  if (label_smoothing > 0) {
    Tensor smooth = where(target != ignore_index, -logp.mean({1}), 0.0);
    loss = loss * (1.0 - label_smoothing) + smooth * label_smoothing;
  }
  return reduce_classes(loss, target, reduction, ignore_index);
}

Tensor binary_cross_entropy_with_logits(const Tensor& logits, const Tensor& target,
                                        Reduction reduction) {
  check_pair(logits, target, "binary_cross_entropy_with_logits");
  // max(x, 0) - x*t + log(1 + exp(-|x|)): never overflows.
  Tensor loss = logits.relu() - logits * target + log(exp(-logits.abs()) + 1.0);
  return reduce(loss, reduction);
}

}  // namespace kiln::nn::functional
