// batch_norm, layer_norm, softmax, log_softmax, dropout, linear, embedding.

#include "autograd/record.h"
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

Tensor linear(const Tensor& x, const Tensor& weight, const Tensor& bias) {
  detail::impl_of(x, "linear");
  KILN_CHECK(weight.defined() && weight.dim() == 2, "linear: expected a 2-D weight [out, in], got ",
             weight.defined() ? detail::shape_str(weight.shape()) : std::string("undefined"));
  KILN_CHECK(x.dim() >= 1 && x.size(-1) == weight.size(1), "linear: input of shape ", x.shape(),
             " does not match weight ", weight.shape(), " (", x.dim() ? x.size(-1) : 0,
             " != ", weight.size(1), ")");
  if (bias.defined() && bias.dim() != 1) {
    // Anything but a [out] bias keeps the plain composition (and its broadcasting).
    Tensor y = matmul(x, weight.t());
    return y + bias;
  }
  // One node for the whole layer rather than matmul's, the transpose view's and the
  // add's: the weight gradient comes out as g^T·x, already [out, in] and contiguous
  // (matmul's node would produce the transposed view's gradient, [in, out], which
  // then has to be copied into place), and the bias gradient is one reduction.
  const bool record = ag::needs_grad({&x, &weight, &bias});
  Tensor y;
  {
    NoGradGuard no_grad;
    y = matmul(x, weight.t());
    if (bias.defined()) {
      // y is fresh: add in place when the result type allows, saving a tensor.
      if (promote_types(y.dtype(), bias.dtype()) == y.dtype())
        y.add_(bias);
      else
        y = y + bias;
    }
  }
  if (!record) return y;
  const bool gx = ag::requires_grad(x), gw = ag::requires_grad(weight),
             gb = ag::requires_grad(bias);
  const int64_t in = weight.size(1), out = weight.size(0);
  int64_t rows = 1;  // x as [rows, in], y as [rows, out]
  for (int64_t d = 0; d + 1 < x.dim(); ++d) rows *= x.size(d);
  ag::record("LinearBackward", y, {&x, &weight, &bias}, {gw ? x : Tensor(), gx ? weight : Tensor()},
             [=, x_shape = x.shape().vec(),
              b_shape = bias.defined() ? bias.shape().vec() : std::vector<int64_t>{}](
                 const Saved& s, const Tensor& g) -> Grads {
               Tensor g2 = g.reshape({rows, out});
               Grads grads(3);
               if (gx) grads[0] = matmul(g2, s[1]).reshape(x_shape);
               if (gw) grads[1] = matmul(g2.t(), s[0].reshape({rows, in}));
               if (gb) grads[2] = ag::sum_to(g, b_shape);
               return grads;
             });
  return y;
}

Tensor batch_norm(const Tensor& x, const Tensor& running_mean, const Tensor& running_var,
                  const Tensor& weight, const Tensor& bias, bool training, double momentum,
                  double eps) {
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
  Tensor rm = running_mean.defined() ? running_mean : filled_like_channel(x, c, 0.0);
  Tensor rv = running_var.defined() ? running_var : filled_like_channel(x, c, 1.0);
  KILN_CHECK(rm.is_contiguous() && rv.is_contiguous(),
             "batch_norm: running statistics must be "
             "contiguous");
  Tensor y = empty_like(xc);
  Tensor mean = detail::empty_on(x, {c}, x.dtype()), invstd = detail::empty_on(x, {c}, x.dtype());
  detail::dispatch(
      OpId::batch_norm, {xc.impl().get(), wc.impl().get(), bc.impl().get()},
      {y.impl().get(), mean.impl().get(), invstd.impl().get(), rm.impl().get(), rv.impl().get()},
      {detail::float_attr("momentum", momentum), detail::float_attr("eps", eps)});
  bump_version(rm);
  bump_version(rv);
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
  detail::dispatch(OpId::layer_norm, {xc.impl().get(), w.impl().get(), b.impl().get()},
                   {y.impl().get(), mean.impl().get(), invstd.impl().get()},
                   {detail::int_attr("normalized_ndim", k), detail::float_attr("eps", eps)});
  if (ag::needs_grad({&x, &weight, &bias})) {
    bool gw = ag::requires_grad(weight), gb = ag::requires_grad(bias);
    ag::record("LayerNormBackward", y, {&x, &weight, &bias}, {xc, w, mean, invstd},
               [gw, gb, k](const Saved& s, const Tensor& g) -> Grads {
                 Tensor gc = g.contiguous();
                 Tensor dx = empty_like(s[0]), dw = empty_like(s[1]), db = empty_like(s[1]);
                 detail::dispatch(OpId::layer_norm_backward,
                                  {gc.impl().get(), s[0].impl().get(), s[1].impl().get(),
                                   s[2].impl().get(), s[3].impl().get()},
                                  {dx.impl().get(), dw.impl().get(), db.impl().get()},
                                  {detail::int_attr("normalized_ndim", k)});
                 return {dx, gw ? dw : Tensor(), gb ? db : Tensor()};
               });
  }
  return y;
}

namespace {
Tensor softmax_impl(const Tensor& x, int64_t dim, bool log) {
  const char* name = log ? "log_softmax" : "softmax";
  detail::impl_of(x, name);
  KILN_CHECK(is_floating(x.dtype()), name, ": expected a floating-point input, got ", x.dtype());
  int64_t d = detail::wrap_dim(dim, x.dim(), name);
  Tensor xc = x.contiguous();
  Tensor y = empty_like(xc);
  if (x.numel() == 0) return y;
  if (x.dim() == 0) return log ? zeros_like(xc) : ones_like(xc);
  detail::dispatch(log ? OpId::log_softmax : OpId::softmax, {xc.impl().get()}, {y.impl().get()},
                   {detail::int_attr("dim", d)});
  if (ag::needs_grad({&x}))
    ag::record(log ? "LogSoftmaxBackward" : "SoftmaxBackward", y, {&x}, {y},
               [d, log](const Saved& s, const Tensor& g) -> Grads {
                 Tensor gc = g.contiguous();
                 Tensor dx = empty_like(s[0]);
                 detail::dispatch(log ? OpId::log_softmax_backward : OpId::softmax_backward,
                                  {gc.impl().get(), s[0].impl().get()}, {dx.impl().get()},
                                  {detail::int_attr("dim", d)});
                 return {dx};
               });
  return y;
}
}  // namespace

Tensor softmax(const Tensor& x, int64_t dim) { return softmax_impl(x, dim, false); }
Tensor log_softmax(const Tensor& x, int64_t dim) { return softmax_impl(x, dim, true); }

Tensor dropout(const Tensor& x, double p, bool training) {
  detail::impl_of(x, "dropout");
  KILN_CHECK(p >= 0 && p <= 1, "dropout: p must be in [0, 1], got ", p);
  if (!training || p == 0) return x;
  if (p == 1) return x * 0.0;
  KILN_CHECK(is_floating(x.dtype()), "dropout: expected a floating-point input, got ", x.dtype());
  Tensor xc = x.contiguous();
  Tensor y = empty_like(xc);
  Tensor mask = detail::empty_on(x, x.shape(), DType::UInt8);
  GeneratorState state = detail::reserve_random(x.numel());
  detail::dispatch(
      OpId::dropout, {xc.impl().get()}, {y.impl().get(), mask.impl().get()},
      {detail::float_attr("p", p), detail::int_attr("seed", static_cast<int64_t>(state.seed)),
       detail::int_attr("offset", static_cast<int64_t>(state.offset))});
  if (ag::needs_grad({&x}))
    ag::record("DropoutBackward", y, {&x}, {mask},
               [scale = 1.0 / (1.0 - p)](const Saved& s, const Tensor& g) -> Grads {
                 return {g * s[0].to(g.dtype()) * scale};
               });
  return y;
}

Tensor embedding(const Tensor& indices, const Tensor& weight) {
  detail::impl_of(indices, "embedding");
  detail::impl_of(weight, "embedding");
  KILN_CHECK(weight.dim() == 2, "embedding: expected a 2-D weight [num_embeddings, dim], got ",
             weight.shape());
  KILN_CHECK(indices.dtype() == DType::Int64 || indices.dtype() == DType::Int32,
             "embedding: indices must be int64 or int32, got ", indices.dtype());
  std::vector<int64_t> shape = indices.shape().vec();
  shape.push_back(weight.size(1));
  return index_select(weight, 0, indices.reshape({-1})).reshape(shape);
}

}  // namespace kiln::nn::functional
