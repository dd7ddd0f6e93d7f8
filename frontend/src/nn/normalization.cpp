// batch_norm and layer_norm, with their gradients.

#include "autograd/record.h"
#include "dispatch/autocast.h"
#include "kiln/autograd.h"
#include "kiln/nn/functional.h"
#include "kiln/ops.h"
#include "ops/common.h"

namespace kiln::nn::functional {

using detail::OpId;
namespace ag = detail::autograd_impl;
using Grads = std::vector<Tensor>;
using Saved = std::vector<Tensor>;

namespace {
Tensor filled_like_channel(const Tensor& x, int64_t c, double value) {
  return full({c}, value, TensorOptions(x.dtype()).device(x.device()));
}
void bump_version(const Tensor& t) { t.impl()->storage->version++; }
}  // namespace

Tensor batch_norm(const Tensor& x, const Tensor& running_mean, const Tensor& running_var,
                  const Tensor& weight, const Tensor& bias, bool training, double momentum,
                  double eps) {
  if (detail::autocast_on) {  // the running statistics are the module's (float32) buffers
    Tensor xc = x, wc = weight, bc = bias;
    if (detail::autocast_inputs(OpId::batch_norm, {&xc, &wc, &bc}))
      return batch_norm(xc, running_mean, running_var, wc, bc, training, momentum, eps);
  }
  detail::impl_of(x, "batch_norm");
  KILN_CHECK(x.dim() >= 2, "batch_norm: expected an input [N, C, *], got shape ", x.shape());
  KILN_CHECK(is_floating(x.dtype()), "batch_norm: expected a floating-point input, got ",
             x.dtype());
  int64_t c = x.size(1);
  for (const Tensor* t : {&running_mean, &running_var, &weight, &bias}) {
    if (!t->defined()) continue;
    detail::check_same_device("batch_norm", {&x, t});
    KILN_CHECK(t->dim() == 1 && t->size(0) == c,
               "batch_norm: expected per-channel tensors of shape [", c, "], got ", t->shape());
  }
  Tensor w = weight.defined() ? weight : filled_like_channel(x, c, 1.0);
  Tensor b = bias.defined() ? bias : filled_like_channel(x, c, 0.0);
  if (!training) {
    KILN_CHECK(running_mean.defined() && running_var.defined(),
               "batch_norm: eval mode needs running_mean and running_var");
    // y = (x - mean) * (w / sqrt(var + eps)) + b, per channel, from differentiable ops.
    std::vector<int64_t> shape(static_cast<size_t>(x.dim()), 1);
    shape[1] = c;
    Tensor scale = w * rsqrt(running_var + eps);
    return (x - running_mean.reshape(shape)) * scale.reshape(shape) + b.reshape(shape);
  }
  int64_t count = x.numel() / std::max<int64_t>(c, 1);
  KILN_CHECK(count > 1,
             "batch_norm: expected more than 1 value per channel when training, got "
             "input shape ",
             x.shape());
  Tensor xc = x.contiguous();
  Tensor wc = w.contiguous(), bc = b.contiguous();
  for (const Tensor* t : {&running_mean, &running_var})
    KILN_CHECK(!t->defined() || !t->impl()->has_internal_overlap(),
               "batch_norm: cannot update running statistics whose elements overlap (an "
               "expanded view), got strides ",
               t->strides());
  // The kernel updates contiguous [C] statistics in place; a strided view (a slice of a
  // larger buffer) is updated through a contiguous copy, written back below, as PyTorch
  // updates the view itself.
  Tensor rm = !running_mean.defined()        ? filled_like_channel(x, c, 0.0)
              : running_mean.is_contiguous() ? running_mean
                                             : running_mean.contiguous();
  Tensor rv = !running_var.defined()        ? filled_like_channel(x, c, 1.0)
              : running_var.is_contiguous() ? running_var
                                            : running_var.contiguous();
  Tensor y = empty_like(xc);
  Tensor mean = detail::empty_on(x, {c}, x.dtype()), invstd = detail::empty_on(x, {c}, x.dtype());
  detail::dispatch(
      detail::attrs::batch_norm{.momentum = momentum, .eps = eps},
      {xc.impl().get(), wc.impl().get(), bc.impl().get()},
      {y.impl().get(), mean.impl().get(), invstd.impl().get(), rm.impl().get(), rv.impl().get()});
  for (auto [stat, work] : {std::pair{&running_mean, &rm}, std::pair{&running_var, &rv}}) {
    if (!stat->defined()) continue;
    if (stat->is_contiguous()) {
      bump_version(*work);
    } else {
      NoGradGuard no_grad;
      Tensor view = *stat;  // a handle on the same view: copy_ writes the caller's buffer
      view.copy_(*work);
    }
  }
  if (ag::needs_grad({&x, &weight, &bias})) {
    bool gw = ag::requires_grad(weight), gb = ag::requires_grad(bias);
    ag::record("BatchNormBackward", y, {&x, &weight, &bias}, {xc, wc, mean, invstd},
               [gw, gb](const Saved& s, const Tensor& g) -> Grads {
                 Tensor gc = g.contiguous();
                 Tensor dx = empty_like(s[0]), dw = empty_like(s[1]), db = empty_like(s[1]);
                 detail::dispatch(OpId::batch_norm_backward,
                                  {gc.impl().get(), s[0].impl().get(), s[1].impl().get(),
                                   s[2].impl().get(), s[3].impl().get()},
                                  {dx.impl().get(), dw.impl().get(), db.impl().get()});
                 return {dx, gw ? dw : Tensor(), gb ? db : Tensor()};
               });
  }
  return y;
}

Tensor layer_norm(const Tensor& x, IntArrayRef normalized_shape, const Tensor& weight,
                  const Tensor& bias, double eps) {
  if (detail::autocast_on) {
    Tensor xc = x, wc = weight, bc = bias;
    if (detail::autocast_inputs(OpId::layer_norm, {&xc, &wc, &bc}))
      return layer_norm(xc, normalized_shape, wc, bc, eps);
  }
  detail::impl_of(x, "layer_norm");
  int64_t k = static_cast<int64_t>(normalized_shape.size());
  KILN_CHECK(k >= 1 && x.dim() >= k, "layer_norm: normalized_shape ", normalized_shape,
             " does not fit input shape ", x.shape());
  for (int64_t i = 0; i < k; ++i)
    KILN_CHECK(x.size(x.dim() - k + i) == normalized_shape[i], "layer_norm: normalized_shape ",
               normalized_shape, " does not match the trailing dims of input shape ", x.shape());
  int64_t d = 1;
  for (int64_t s : normalized_shape) d *= s;
  int64_t m = d ? x.numel() / d : 0;
  auto opts = TensorOptions(x.dtype()).device(x.device());
  for (const Tensor* t : {&weight, &bias})
    if (t->defined())
      KILN_CHECK(t->shape() == normalized_shape, "layer_norm: weight/bias must have shape ",
                 normalized_shape, ", got ", t->shape());
  Tensor w = weight.defined() ? weight.contiguous() : ones(normalized_shape, opts);
  Tensor b = bias.defined() ? bias.contiguous() : zeros(normalized_shape, opts);
  Tensor xc = x.contiguous();
  Tensor y = empty_like(xc);
  Tensor mean = detail::empty_on(x, {m}, x.dtype()), invstd = detail::empty_on(x, {m}, x.dtype());
  detail::dispatch(detail::attrs::layer_norm{.normalized_ndim = k, .eps = eps},
                   {xc.impl().get(), w.impl().get(), b.impl().get()},
                   {y.impl().get(), mean.impl().get(), invstd.impl().get()});
  if (ag::needs_grad({&x, &weight, &bias})) {
    bool gw = ag::requires_grad(weight), gb = ag::requires_grad(bias);
    ag::record("LayerNormBackward", y, {&x, &weight, &bias}, {xc, w, mean, invstd},
               [gw, gb, k](const Saved& s, const Tensor& g) -> Grads {
                 Tensor gc = g.contiguous();
                 Tensor dx = empty_like(s[0]), dw = empty_like(s[1]), db = empty_like(s[1]);
                 detail::dispatch(detail::attrs::layer_norm_backward{.normalized_ndim = k},
                                  {gc.impl().get(), s[0].impl().get(), s[1].impl().get(),
                                   s[2].impl().get(), s[3].impl().get()},
                                  {dx.impl().get(), dw.impl().get(), db.impl().get()});
                 return {dx, gw ? dw : Tensor(), gb ? db : Tensor()};
               });
  }
  return y;
}

}  // namespace kiln::nn::functional
