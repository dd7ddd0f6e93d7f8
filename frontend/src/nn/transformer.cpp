// nn::MultiheadAttention and the transformer layers, as PyTorch's, on
// F::scaled_dot_product_attention.

#include "kiln/nn/transformer.h"

#include <cmath>
#include <initializer_list>
#include <string>
#include <vector>

#include "kiln/error.h"
#include "kiln/nn/init.h"
#include "kiln/ops.h"
#include "nn/attention.h"

namespace kiln::nn {

namespace F = functional;

namespace {

// A module mask as an additive one of `dtype`: a boolean one is true where attention
// is not allowed (PyTorch's modules' convention), a floating one is added as it is.
Tensor module_mask(const Tensor& mask, DType dtype, const char* what) {
  KILN_CHECK(mask.dtype() == DType::Bool || is_floating(mask.dtype()), "MultiheadAttention: ", what,
             " must be bool or floating-point, got ", mask.dtype());
  return attention::additive_mask(mask, true, dtype);
}

}  // namespace

// -- MultiheadAttention -----------------------------------------------------------------

MultiheadAttention::MultiheadAttention(int64_t embed_dim, int64_t num_heads, double dropout,
                                       bool bias, bool batch_first)
    : MultiheadAttention(MultiheadAttentionOptions(embed_dim, num_heads)
                             .dropout(dropout)
                             .bias(bias)
                             .batch_first(batch_first)) {}

MultiheadAttention::MultiheadAttention(const MultiheadAttentionOptions& options)
    : Module("MultiheadAttention"), options_(options) {
  const int64_t e = options.embed_dim(), h = options.num_heads();
  KILN_CHECK(e > 0 && h > 0 && e % h == 0, "MultiheadAttention: embed_dim (", e,
             ") must be a positive multiple of num_heads (", h, ")");
  KILN_CHECK(options.kdim() > 0 && options.vdim() > 0,
             "MultiheadAttention: kdim and vdim must be "
             "positive, got ",
             options.kdim(), " and ", options.vdim());
  KILN_CHECK(options.dropout() >= 0 && options.dropout() <= 1,
             "MultiheadAttention: dropout must be in [0, 1], got ", options.dropout());
  // PyTorch's _reset_parameters: Xavier-uniform projections, zero biases.
  if (options.kdim() == e && options.vdim() == e) {
    in_proj_weight = register_parameter("in_proj_weight", empty({3 * e, e}));
    init::xavier_uniform_(in_proj_weight);
  } else {
    q_proj_weight = register_parameter("q_proj_weight", empty({e, e}));
    k_proj_weight = register_parameter("k_proj_weight", empty({e, options.kdim()}));
    v_proj_weight = register_parameter("v_proj_weight", empty({e, options.vdim()}));
    for (Tensor* w : {&q_proj_weight, &k_proj_weight, &v_proj_weight}) init::xavier_uniform_(*w);
  }
  if (options.bias()) in_proj_bias = register_parameter("in_proj_bias", zeros({3 * e}));
  out_proj = register_module<Linear>("out_proj", e, e, options.bias());
  if (options.bias()) init::zeros_(out_proj->bias);
}

std::vector<Module::TensorField> MultiheadAttention::tensor_fields() {
  return {{"in_proj_weight", &in_proj_weight},
          {"q_proj_weight", &q_proj_weight},
          {"k_proj_weight", &k_proj_weight},
          {"v_proj_weight", &v_proj_weight},
          {"in_proj_bias", &in_proj_bias}};
}

std::shared_ptr<Module> MultiheadAttention::clone() const {
  return copy_state_into(std::make_shared<MultiheadAttention>(options_));
}

Tensor MultiheadAttention::forward(const Tensor& x) { return forward(x, x, x, {}, false).first; }

std::pair<Tensor, Tensor> MultiheadAttention::forward(const Tensor& query, const Tensor& key,
                                                      const Tensor& value,
                                                      const Tensor& key_padding_mask,
                                                      bool need_weights, const Tensor& attn_mask,
                                                      bool average_attn_weights, bool is_causal) {
  const int64_t e = options_.embed_dim(), heads = options_.num_heads(), head_dim = e / heads;
  const bool batched = query.dim() == 3;
  KILN_CHECK((query.dim() == 3 || query.dim() == 2) && key.dim() == query.dim() &&
                 value.dim() == query.dim(),
             "MultiheadAttention: query, key and value must all be 3-D ([L, N, E], or [N, L, E] "
             "with batch_first) or all 2-D (unbatched), got ",
             query.shape(), ", ", key.shape(), " and ", value.shape());
  // Everything as [N, L, features].
  auto batch_major = [&](const Tensor& t) {
    if (!batched) return t.unsqueeze(0);
    return options_.batch_first() ? t : t.transpose(0, 1);
  };
  const Tensor q = batch_major(query), k = batch_major(key), v = batch_major(value);
  const int64_t n = q.size(0), l = q.size(1), s = k.size(1);
  KILN_CHECK(q.size(2) == e && k.size(2) == options_.kdim() && v.size(2) == options_.vdim(),
             "MultiheadAttention: expected query, key and value features ", e, ", ",
             options_.kdim(), " and ", options_.vdim(), ", got shapes ", query.shape(), ", ",
             key.shape(), " and ", value.shape());
  KILN_CHECK(k.size(0) == n && v.size(0) == n && v.size(1) == s,
             "MultiheadAttention: query, key and value disagree on the batch size or key and "
             "value on the sequence length: ",
             query.shape(), ", ", key.shape(), ", ", value.shape());

  // Input projections: one GEMM for self-attention with the packed weight.
  Tensor qp, kp, vp;
  const std::vector<Tensor> b =
      in_proj_bias.defined() ? in_proj_bias.chunk(3) : std::vector<Tensor>(3);
  if (in_proj_weight.defined() && query.impl() == key.impl() && key.impl() == value.impl()) {
    const std::vector<Tensor> qkv = F::linear(q, in_proj_weight, in_proj_bias).chunk(3, -1);
    qp = qkv[0], kp = qkv[1], vp = qkv[2];
  } else {
    const std::vector<Tensor> w =
        in_proj_weight.defined() ? in_proj_weight.chunk(3)
                                 : std::vector<Tensor>{q_proj_weight, k_proj_weight, v_proj_weight};
    qp = F::linear(q, w[0], b[0]);
    kp = F::linear(k, w[1], b[1]);
    vp = F::linear(v, w[2], b[2]);
  }
  auto split_heads = [&](const Tensor& t) {
    return t.reshape({n, t.size(1), heads, head_dim}).transpose(1, 2);
  };
  const Tensor qh = split_heads(qp), kh = split_heads(kp), vh = split_heads(vp);

  // One additive mask broadcastable to [N, heads, L, S].
  const DType dtype = qh.dtype();
  Tensor mask;
  if (attn_mask.defined()) {
    const bool per_head = attn_mask.dim() == 3 && attn_mask.size(0) == n * heads &&
                          attn_mask.size(1) == l && attn_mask.size(2) == s;
    const bool shared = attn_mask.dim() == 2 && attn_mask.size(0) == l && attn_mask.size(1) == s;
    KILN_CHECK(per_head || shared, "MultiheadAttention: attn_mask must be [L, S] = [", l, ", ", s,
               "] or [N·num_heads, L, S] = [", n * heads, ", ", l, ", ", s, "], got ",
               attn_mask.shape());
    mask = module_mask(attn_mask, dtype, "attn_mask");
    if (per_head) mask = mask.reshape({n, heads, l, s});
  }
  if (key_padding_mask.defined()) {
    const bool padding_ok = batched
                                ? key_padding_mask.dim() == 2 && key_padding_mask.size(0) == n &&
                                      key_padding_mask.size(1) == s
                                : key_padding_mask.dim() == 1 && key_padding_mask.size(0) == s;
    KILN_CHECK(padding_ok, "MultiheadAttention: key_padding_mask must be [N, S] = [", n, ", ", s,
               "] ([S] unbatched), got ", key_padding_mask.shape());
    const Tensor padding =
        module_mask(key_padding_mask, dtype, "key_padding_mask").reshape({n, 1, 1, s});
    mask = mask.defined() ? mask + padding : padding;
  }
  // is_causal is PyTorch's hint that attn_mask is causal: alone, it is the mask.
  bool causal = is_causal && !attn_mask.defined();
  if (causal && mask.defined()) {
    mask = mask + attention::causal_mask(l, s, dtype, q.device());
    causal = false;
  }

  const double p = is_training() ? options_.dropout() : 0.0;
  Tensor out, weights;
  if (need_weights) {
    weights = attention::weights(qh, kh, mask, causal, 1.0 / std::sqrt(double(head_dim)));
    if (p > 0) weights = F::dropout(weights, p, true);
    out = matmul(weights, vh);
    if (average_attn_weights) weights = weights.mean({1});
    if (!batched) weights = weights.squeeze(0);
  } else {
    out = F::scaled_dot_product_attention(qh, kh, vh, mask, p, causal);
  }
  out = out_proj->forward(out.transpose(1, 2).reshape({n, l, e}));
  if (!batched) return {out.squeeze(0), weights};
  return {options_.batch_first() ? out : out.transpose(0, 1), weights};
}

// -- the layers -----------------------------------------------------------------------

namespace {

MultiheadAttentionOptions attention_options(const TransformerLayerOptions& o) {
  return MultiheadAttentionOptions(o.d_model(), o.nhead())
      .dropout(o.dropout())
      .bias(o.bias())
      .batch_first(o.batch_first());
}

void check_layer_options(const TransformerLayerOptions& o, const char* layer) {
  KILN_CHECK(o.activation() == "relu" || o.activation() == "gelu", layer,
             ": activation must be \"relu\" or \"gelu\", got \"", o.activation(), "\"");
  KILN_CHECK(o.dim_feedforward() > 0, layer, ": dim_feedforward must be positive, got ",
             o.dim_feedforward());
}

LayerNormOptions norm_options(const TransformerLayerOptions& o) {
  return LayerNormOptions({o.d_model()}).eps(o.layer_norm_eps());
}

// PyTorch's bias=False drops the norms' biases too (unregistered at the next listing).
void drop_bias_unless(bool bias, std::initializer_list<LayerNorm*> norms) {
  if (!bias)
    for (LayerNorm* norm : norms) norm->bias = Tensor();
}

// linear2(dropout(activation(linear1(x)))): the feed-forward block both layers share.
Tensor feed_forward(const Tensor& x, Linear& linear1, Dropout& dropout, Linear& linear2,
                    const std::string& activation) {
  Tensor h = linear1.forward(x);
  h = activation == "gelu" ? h.gelu() : h.relu();
  return linear2.forward(dropout.forward(h));
}

}  // namespace

TransformerEncoderLayer::TransformerEncoderLayer(const TransformerLayerOptions& o)
    : Module("TransformerEncoderLayer"), options_(o) {
  check_layer_options(o, "TransformerEncoderLayer");
  self_attn = register_module<MultiheadAttention>("self_attn", attention_options(o));
  linear1 = register_module<Linear>("linear1", o.d_model(), o.dim_feedforward(), o.bias());
  dropout = register_module<Dropout>("dropout", o.dropout());
  linear2 = register_module<Linear>("linear2", o.dim_feedforward(), o.d_model(), o.bias());
  norm1 = register_module<LayerNorm>("norm1", norm_options(o));
  norm2 = register_module<LayerNorm>("norm2", norm_options(o));
  drop_bias_unless(o.bias(), {norm1.get(), norm2.get()});
  dropout1 = register_module<Dropout>("dropout1", o.dropout());
  dropout2 = register_module<Dropout>("dropout2", o.dropout());
}

Tensor TransformerEncoderLayer::forward(const Tensor& src, const Tensor& src_mask,
                                        const Tensor& src_key_padding_mask, bool is_causal) {
  auto attention = [&](const Tensor& x) {
    return dropout1->forward(
        self_attn->forward(x, x, x, src_key_padding_mask, false, src_mask, true, is_causal).first);
  };
  auto ff = [&](const Tensor& x) {
    return dropout2->forward(feed_forward(x, *linear1, *dropout, *linear2, options_.activation()));
  };
  Tensor x = src;
  if (options_.norm_first()) {
    x = x + attention(norm1->forward(x));
    return x + ff(norm2->forward(x));
  }
  x = norm1->forward(x + attention(x));
  return norm2->forward(x + ff(x));
}

std::shared_ptr<Module> TransformerEncoderLayer::clone() const {
  return copy_state_into(std::make_shared<TransformerEncoderLayer>(options_));
}

TransformerDecoderLayer::TransformerDecoderLayer(const TransformerLayerOptions& o)
    : Module("TransformerDecoderLayer"), options_(o) {
  check_layer_options(o, "TransformerDecoderLayer");
  self_attn = register_module<MultiheadAttention>("self_attn", attention_options(o));
  multihead_attn = register_module<MultiheadAttention>("multihead_attn", attention_options(o));
  linear1 = register_module<Linear>("linear1", o.d_model(), o.dim_feedforward(), o.bias());
  dropout = register_module<Dropout>("dropout", o.dropout());
  linear2 = register_module<Linear>("linear2", o.dim_feedforward(), o.d_model(), o.bias());
  norm1 = register_module<LayerNorm>("norm1", norm_options(o));
  norm2 = register_module<LayerNorm>("norm2", norm_options(o));
  norm3 = register_module<LayerNorm>("norm3", norm_options(o));
  drop_bias_unless(o.bias(), {norm1.get(), norm2.get(), norm3.get()});
  dropout1 = register_module<Dropout>("dropout1", o.dropout());
  dropout2 = register_module<Dropout>("dropout2", o.dropout());
  dropout3 = register_module<Dropout>("dropout3", o.dropout());
}

Tensor TransformerDecoderLayer::forward(const Tensor& tgt, const Tensor& memory,
                                        const Tensor& tgt_mask, const Tensor& memory_mask,
                                        const Tensor& tgt_key_padding_mask,
                                        const Tensor& memory_key_padding_mask, bool tgt_is_causal,
                                        bool memory_is_causal) {
  auto self_block = [&](const Tensor& x) {
    return dropout1->forward(
        self_attn->forward(x, x, x, tgt_key_padding_mask, false, tgt_mask, true, tgt_is_causal)
            .first);
  };
  auto memory_block = [&](const Tensor& x) {
    return dropout2->forward(multihead_attn
                                 ->forward(x, memory, memory, memory_key_padding_mask, false,
                                           memory_mask, true, memory_is_causal)
                                 .first);
  };
  auto ff = [&](const Tensor& x) {
    return dropout3->forward(feed_forward(x, *linear1, *dropout, *linear2, options_.activation()));
  };
  Tensor x = tgt;
  if (options_.norm_first()) {
    x = x + self_block(norm1->forward(x));
    x = x + memory_block(norm2->forward(x));
    return x + ff(norm3->forward(x));
  }
  x = norm1->forward(x + self_block(x));
  x = norm2->forward(x + memory_block(x));
  return norm3->forward(x + ff(x));
}

std::shared_ptr<Module> TransformerDecoderLayer::clone() const {
  return copy_state_into(std::make_shared<TransformerDecoderLayer>(options_));
}

TransformerEncoder::TransformerEncoder(const std::shared_ptr<TransformerEncoderLayer>& layer,
                                       int64_t num_layers, std::shared_ptr<LayerNorm> final_norm)
    : Module("TransformerEncoder") {
  KILN_CHECK(layer != nullptr, "TransformerEncoder: the layer is null");
  KILN_CHECK(num_layers >= 1, "TransformerEncoder: num_layers must be at least 1, got ",
             num_layers);
  layers = register_module<ModuleList>("layers");
  for (int64_t i = 0; i < num_layers; ++i) layers->push_back(layer->clone());
  if (final_norm) norm = register_module("norm", std::move(final_norm));
}

Tensor TransformerEncoder::forward(const Tensor& src, const Tensor& mask,
                                   const Tensor& src_key_padding_mask, bool is_causal) {
  Tensor x = src;
  for (const auto& layer : *layers)
    x = layer->as<TransformerEncoderLayer>()->forward(x, mask, src_key_padding_mask, is_causal);
  return norm ? norm->forward(x) : x;
}

std::shared_ptr<Module> TransformerEncoder::clone() const {
  auto first = std::dynamic_pointer_cast<TransformerEncoderLayer>((*layers)[0]);
  auto copy = std::make_shared<TransformerEncoder>(
      first, static_cast<int64_t>(layers->size()),
      norm ? std::dynamic_pointer_cast<LayerNorm>(norm->clone()) : nullptr);
  return copy_state_into(copy);
}

}  // namespace kiln::nn
