// scaled_dot_product_attention: the fused catalogue op where the device's plugin has
// it, else the same computation composed of matmul, softmax and dropout.
//
// Both run on [B, H, L, E] operands: the batch dims broadcast (stride 0) and fold into
// two, and a boolean mask becomes an additive one, so the fused kernel sees one shape
// and the composed version draws its dropout from the same [B, H, L, S] positions of
// the generator's stream (the two agree, dropout included).
#include <cmath>
#include <limits>
#include <utility>

#include "nn/attention.h"

#include "autograd/record.h"
#include "dispatch/autocast.h"
#include "kiln/autograd.h"
#include "kiln/nn/functional.h"
#include "kiln/ops.h"
#include "ops/common.h"
#include "runtime/graph_capture.h"
#include "runtime/registry.h"

namespace kiln::nn::functional {

using detail::OpId;
namespace ag = detail::autograd_impl;
using Grads = std::vector<Tensor>;
using Saved = std::vector<Tensor>;

namespace {

thread_local AttentionBackend attention_backend = AttentionBackend::Auto;

constexpr const char* kName = "scaled_dot_product_attention";

/// The operands as [B, H, rows, cols]: `t` broadcast to `batch` + [rows, cols], the
/// batch dims folded into two (a view, for every broadcast the callers make).
Tensor as_4d(const Tensor& t, IntArrayRef batch, int64_t rows, int64_t cols) {
  std::vector<int64_t> full(batch.begin(), batch.end());
  full.push_back(rows);
  full.push_back(cols);
  const Tensor e = t.expand(full);
  int64_t b = 1;
  for (size_t i = 0; i + 1 < batch.size(); ++i) b *= batch[i];
  const int64_t h = batch.size() == 0 ? 1 : batch[batch.size() - 1];
  return e.reshape({b, h, rows, cols});
}

// Whether the device of `q` runs both attention ops natively.
bool has_fused_kernels(const Tensor& q) {
  detail::DeviceContext* dev = q.impl()->device();
  auto native = [dev](OpId op) {
    return dev->kernel(op).state.load(std::memory_order_acquire) ==
           detail::KernelSlot::State::Native;
  };
  return native(OpId::scaled_dot_product_attention) &&
         native(OpId::scaled_dot_product_attention_backward);
}

Tensor composed(const Tensor& q, const Tensor& k, const Tensor& v, const Tensor& mask, bool causal,
                double scale, double dropout_p) {
  Tensor probs = attention::weights(q, k, mask, causal, scale);
  if (dropout_p > 0) probs = dropout(probs, dropout_p, true);
  return matmul(probs, v);
}

Tensor fused(const Tensor& q, const Tensor& k, const Tensor& v, const Tensor& mask, bool causal,
             double scale, double dropout_p) {
  const int64_t b = q.size(0), h = q.size(1), l = q.size(2), s = k.size(2);
  const Tensor m =
      mask.defined() ? mask : detail::scalar_on(q, 0.0, q.dtype()).expand({b, h, l, s});
  Tensor out = detail::empty_on(q, {b, h, l, v.size(3)}, q.dtype());
  Tensor lse =
      detail::empty_on(q, {b, h, l}, q.dtype() == DType::Float64 ? DType::Float64 : DType::Float32);
  GeneratorState random;
  if (dropout_p > 0) random = detail::reserve_random(b * h * l * s);
  const detail::attrs::scaled_dot_product_attention attrs{
      .scale = scale,
      .is_causal = causal ? 1 : 0,
      .dropout_p = dropout_p,
      .dropout_seed = static_cast<int64_t>(random.seed),
      .dropout_offset = static_cast<int64_t>(random.offset)};
  detail::dispatch(attrs, {q.impl().get(), k.impl().get(), v.impl().get(), m.impl().get()},
                   {out.impl().get(), lse.impl().get()});
  if (ag::needs_grad({&q, &k, &v}))
    ag::record("ScaledDotProductAttentionBackward", out, {&q, &k, &v}, {q, k, v, m, out, lse},
               [attrs](const Saved& t, const Tensor& grad) -> Grads {
                 // The gradient arrives in the dtype its consumer computed in (float32
                 // after an autocast matmul of a bfloat16 output): the op wants out's.
                 const Tensor g = grad.to(t[4].dtype());
                 Tensor dq = detail::empty_on(t[0], t[0].shape(), t[0].dtype()),
                        dk = detail::empty_on(t[1], t[1].shape(), t[1].dtype()),
                        dv = detail::empty_on(t[2], t[2].shape(), t[2].dtype());
                 detail::dispatch(
                     detail::attrs::scaled_dot_product_attention_backward{
                         .scale = attrs.scale,
                         .is_causal = attrs.is_causal,
                         .dropout_p = attrs.dropout_p,
                         .dropout_seed = attrs.dropout_seed,
                         .dropout_offset = attrs.dropout_offset},
                     {g.impl().get(), t[0].impl().get(), t[1].impl().get(), t[2].impl().get(),
                      t[3].impl().get(), t[4].impl().get(), t[5].impl().get()},
                     {dq.impl().get(), dk.impl().get(), dv.impl().get()});
                 return {dq, dk, dv};
               });
  return out;
}

void check_operands(const Tensor& q, const Tensor& k, const Tensor& v, const Tensor& mask,
                    double dropout_p, bool is_causal) {
  for (const Tensor* t : {&q, &k, &v}) detail::impl_of(*t, kName);
  detail::check_same_device(kName, {&q, &k, &v});
  if (mask.defined()) detail::check_same_device(kName, {&q, &mask});
  KILN_CHECK(is_floating(q.dtype()), kName, ": expected floating-point q, k, v, got ", q.dtype());
  KILN_CHECK(k.dtype() == q.dtype() && v.dtype() == q.dtype(), kName,
             ": q, k and v must have one dtype, got ", q.dtype(), ", ", k.dtype(), " and ",
             v.dtype());
  KILN_CHECK(q.dim() >= 2 && k.dim() >= 2 && v.dim() >= 2, kName,
             ": q, k and v must be [..., L, E], [..., S, E] and [..., S, Ev], got ", q.shape(),
             ", ", k.shape(), " and ", v.shape());
  KILN_CHECK(k.size(-1) == q.size(-1), kName, ": k's last dim must be q's (E = ", q.size(-1),
             "), got k ", k.shape());
  KILN_CHECK(v.size(-2) == k.size(-2), kName, ": v must have as many rows as k (S = ", k.size(-2),
             "), got v ", v.shape());
  // 1/√0 scores: PyTorch gives NaN; an empty head has nothing to attend with.
  KILN_CHECK(q.size(-1) > 0, kName, ": q and k need at least one feature, got E = 0");
  KILN_CHECK(dropout_p >= 0 && dropout_p <= 1, kName, ": dropout_p must be in [0, 1], got ",
             dropout_p);
  if (mask.defined()) {
    KILN_CHECK(!is_causal, kName,
               ": attn_mask and is_causal are both set; pass one (fold the causal mask into "
               "attn_mask)");
    KILN_CHECK(mask.dtype() == DType::Bool || mask.dtype() == q.dtype(), kName,
               ": attn_mask must be bool or q's dtype (", q.dtype(), "), got ", mask.dtype());
    KILN_CHECK(mask.dim() >= 1, kName, ": attn_mask must broadcast to [..., L, S], got shape ",
               mask.shape());
  }
}

}  // namespace

AttentionBackend set_attention_backend(AttentionBackend backend) {
  return std::exchange(attention_backend, backend);
}

Tensor scaled_dot_product_attention(const Tensor& q, const Tensor& k, const Tensor& v,
                                    const Tensor& attn_mask, double dropout_p, bool is_causal,
                                    std::optional<double> scale) {
  if (detail::autocast_on) {
    Tensor qc = q, kc = k, vc = v, mc = attn_mask;
    if (detail::autocast_inputs(OpId::scaled_dot_product_attention, {&qc, &kc, &vc, &mc}))
      return scaled_dot_product_attention(qc, kc, vc, mc, dropout_p, is_causal, scale);
  }
  check_operands(q, k, v, attn_mask, dropout_p, is_causal);
  const int64_t l = q.size(-2), s = k.size(-2), e = q.size(-1), ev = v.size(-1);
  auto batch_of = [](const Tensor& t, int64_t kept) {
    return IntArrayRef(t.shape().data(), static_cast<size_t>(t.dim() - kept));
  };
  detail::SmallDims batch = detail::broadcast_shapes(batch_of(q, 2), batch_of(k, 2), kName);
  batch = detail::broadcast_shapes(batch, batch_of(v, 2), kName);
  Tensor mask;
  if (attn_mask.defined()) {
    const int64_t mask_dims = std::min<int64_t>(attn_mask.dim(), 2);
    batch = detail::broadcast_shapes(batch, batch_of(attn_mask, mask_dims), kName);
    const int64_t rows = attn_mask.dim() >= 2 ? attn_mask.size(-2) : 1, cols = attn_mask.size(-1);
    KILN_CHECK((rows == 1 || rows == l) && (cols == 1 || cols == s), kName, ": attn_mask of shape ",
               attn_mask.shape(), " does not broadcast to [L, S] = [", l, ", ", s, "]");
    // A boolean mask blocks where false.
    mask = as_4d(attention::additive_mask(attn_mask, false, q.dtype()), batch, l, s);
  }
  const double sc = scale.value_or(1.0 / std::sqrt(static_cast<double>(e)));
  const Tensor q4 = as_4d(q, batch, l, e), k4 = as_4d(k, batch, s, e), v4 = as_4d(v, batch, s, ev);
  // The composed version where the mask needs a gradient or dropout drops everything
  // (the kernel's contract excludes p = 1), and wherever the device has no kernel.
  // Under a graph capture with dropout too: a replay draws new dropout decisions by
  // patching kiln.dropout's seed, which the fused backward could not follow.
  const bool composed_only = ag::requires_grad(mask) || dropout_p >= 1 ||
                             (dropout_p > 0 && detail::graph::active() != nullptr);
  const bool use_fused =
      !composed_only && (attention_backend == AttentionBackend::Fused ||
                         (attention_backend == AttentionBackend::Auto && has_fused_kernels(q)));
  Tensor out = use_fused ? fused(q4, k4, v4, mask, is_causal, sc, dropout_p)
                         : composed(q4, k4, v4, mask, is_causal, sc, dropout_p);
  std::vector<int64_t> shape(batch.begin(), batch.end());
  shape.push_back(l);
  shape.push_back(ev);
  return out.reshape(shape);
}

}  // namespace kiln::nn::functional

namespace kiln::nn::attention {

namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();

// True above the diagonal of [l, s].
Tensor causal_blocked(int64_t l, int64_t s, const Device& device) {
  const auto index = TensorOptions(DType::Int64).device(device);
  return arange(s, index).unsqueeze(0) > arange(l, index).unsqueeze(1);
}

}  // namespace

Tensor additive_mask(const Tensor& mask, bool blocked, DType dtype) {
  if (mask.dtype() != DType::Bool) return mask.dtype() == dtype ? mask : mask.to(dtype);
  const auto options = TensorOptions(dtype).device(mask.device());
  const Tensor inf = full({}, -kInf, options), zero = zeros({}, options);
  return blocked ? where(mask, inf, zero) : where(mask, zero, inf);
}

Tensor causal_mask(int64_t l, int64_t s, DType dtype, const Device& device) {
  return zeros({l, s}, TensorOptions(dtype).device(device))
      .masked_fill(causal_blocked(l, s, device), -kInf);
}

Tensor weights(const Tensor& q, const Tensor& k, const Tensor& mask, bool causal, double scale) {
  Tensor scores = matmul(q, k.transpose(-2, -1)) * scale;
  if (mask.defined()) scores = scores + mask;
  if (causal)
    scores = scores.masked_fill(causal_blocked(q.size(-2), k.size(-2), q.device()), -kInf);
  return functional::softmax(scores, -1);
}

}  // namespace kiln::nn::attention
