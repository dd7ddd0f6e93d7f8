#pragma once
/// @file transformer.h
/// nn::MultiheadAttention and the transformer layers, with PyTorch's arguments,
/// parameter names ("self_attn.in_proj_weight", "linear1.weight", ...) and
/// initialization, on F::scaled_dot_product_attention.
///
/// Masks follow PyTorch's modules (not F::scaled_dot_product_attention, whose boolean
/// mask says where attention may go): a boolean `attn_mask` or `key_padding_mask` is
/// true where attention is *not* allowed; a floating one is added to the scores.
///
/// @code
///   auto layer = std::make_shared<kiln::nn::TransformerEncoderLayer>(
///       kiln::nn::TransformerEncoderLayerOptions(128, 4).batch_first(true).norm_first(true));
///   kiln::nn::TransformerEncoder encoder(layer, 6);
///   kiln::Tensor y = encoder.forward(kiln::randn({8, 64, 128}), {}, {}, /*is_causal=*/true);
/// @endcode

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <utility>

#include "kiln/nn/containers.h"
#include "kiln/nn/module.h"
#include "kiln/nn/modules.h"

namespace kiln::nn {

struct MultiheadAttentionOptions {
  MultiheadAttentionOptions(int64_t embed_dim, int64_t num_heads)
      : embed_dim_(embed_dim), num_heads_(num_heads) {}
  MultiheadAttentionOptions& dropout(double p) {
    dropout_ = p;
    return *this;
  }
  MultiheadAttentionOptions& bias(bool b) {
    bias_ = b;
    return *this;
  }
  MultiheadAttentionOptions& batch_first(bool b) {
    batch_first_ = b;
    return *this;
  }
  /// The key and value feature sizes, when they are not embed_dim.
  MultiheadAttentionOptions& kdim(int64_t d) {
    kdim_ = d;
    return *this;
  }
  MultiheadAttentionOptions& vdim(int64_t d) {
    vdim_ = d;
    return *this;
  }
  int64_t embed_dim() const { return embed_dim_; }
  int64_t num_heads() const { return num_heads_; }
  double dropout() const { return dropout_; }
  bool bias() const { return bias_; }
  bool batch_first() const { return batch_first_; }
  int64_t kdim() const { return kdim_.value_or(embed_dim_); }
  int64_t vdim() const { return vdim_.value_or(embed_dim_); }

 private:
  int64_t embed_dim_, num_heads_;
  double dropout_ = 0.0;
  bool bias_ = true, batch_first_ = false;
  std::optional<int64_t> kdim_, vdim_;
};

/// Attention over num_heads heads of embed_dim / num_heads features, with input and
/// output projections. Inputs are [L, N, E] ([N, L, E] with batch_first) or unbatched
/// [L, E]; key and value [S, N, kdim] and [S, N, vdim].
///
/// Parameters as PyTorch names them: in_proj_weight [3E, E] and in_proj_bias [3E]
/// (q_proj_weight, k_proj_weight, v_proj_weight instead of in_proj_weight when kdim or
/// vdim differ from E), out_proj.weight and out_proj.bias.
class MultiheadAttention : public Module {
 public:
  MultiheadAttention(int64_t embed_dim, int64_t num_heads, double dropout = 0.0, bool bias = true,
                     bool batch_first = false);
  explicit MultiheadAttention(const MultiheadAttentionOptions& options);

  /// (output, weights), as PyTorch's forward. key_padding_mask: [N, S] ([S] unbatched).
  /// attn_mask: [L, S] or [N·num_heads, L, S]. is_causal: query i attends keys j ≤ i
  /// (PyTorch's hint that attn_mask is causal: used only when attn_mask is not given).
  /// weights ([N, L, S] averaged over the heads, else [N, num_heads, L, S]) only with
  /// need_weights, which computes the [L, S] probabilities; without it the output
  /// comes from the fused op.
  std::pair<Tensor, Tensor> forward(const Tensor& query, const Tensor& key, const Tensor& value,
                                    const Tensor& key_padding_mask = {}, bool need_weights = true,
                                    const Tensor& attn_mask = {}, bool average_attn_weights = true,
                                    bool is_causal = false);
  /// Self-attention of x, the output only.
  Tensor forward(const Tensor& x) override;
  std::shared_ptr<Module> clone() const override;
  const MultiheadAttentionOptions& options() const { return options_; }

  Tensor in_proj_weight, in_proj_bias, q_proj_weight, k_proj_weight, v_proj_weight;
  std::shared_ptr<Linear> out_proj;

 protected:
  std::vector<TensorField> tensor_fields() override;

 private:
  MultiheadAttentionOptions options_;
};

struct TransformerLayerOptions {
  TransformerLayerOptions(int64_t d_model, int64_t nhead) : d_model_(d_model), nhead_(nhead) {}
  TransformerLayerOptions& dim_feedforward(int64_t d) {
    dim_feedforward_ = d;
    return *this;
  }
  TransformerLayerOptions& dropout(double p) {
    dropout_ = p;
    return *this;
  }
  /// "relu" or "gelu".
  TransformerLayerOptions& activation(std::string a) {
    activation_ = std::move(a);
    return *this;
  }
  TransformerLayerOptions& layer_norm_eps(double eps) {
    layer_norm_eps_ = eps;
    return *this;
  }
  TransformerLayerOptions& batch_first(bool b) {
    batch_first_ = b;
    return *this;
  }
  /// Pre-norm (GPT's) instead of post-norm (the original transformer's).
  TransformerLayerOptions& norm_first(bool b) {
    norm_first_ = b;
    return *this;
  }
  TransformerLayerOptions& bias(bool b) {
    bias_ = b;
    return *this;
  }
  int64_t d_model() const { return d_model_; }
  int64_t nhead() const { return nhead_; }
  int64_t dim_feedforward() const { return dim_feedforward_; }
  double dropout() const { return dropout_; }
  const std::string& activation() const { return activation_; }
  double layer_norm_eps() const { return layer_norm_eps_; }
  bool batch_first() const { return batch_first_; }
  bool norm_first() const { return norm_first_; }
  bool bias() const { return bias_; }

 private:
  int64_t d_model_, nhead_, dim_feedforward_ = 2048;
  double dropout_ = 0.1;
  std::string activation_ = "relu";
  double layer_norm_eps_ = 1e-5;
  bool batch_first_ = false, norm_first_ = false, bias_ = true;
};
using TransformerEncoderLayerOptions = TransformerLayerOptions;
using TransformerDecoderLayerOptions = TransformerLayerOptions;

/// Self-attention and a feed-forward block, each with dropout, a residual and a
/// LayerNorm (PyTorch's submodules: self_attn, linear1, dropout, linear2, norm1, norm2,
/// dropout1, dropout2).
class TransformerEncoderLayer : public Module {
 public:
  explicit TransformerEncoderLayer(const TransformerLayerOptions& options);
  TransformerEncoderLayer(int64_t d_model, int64_t nhead)
      : TransformerEncoderLayer(TransformerLayerOptions(d_model, nhead)) {}
  Tensor forward(const Tensor& src, const Tensor& src_mask, const Tensor& src_key_padding_mask = {},
                 bool is_causal = false);
  Tensor forward(const Tensor& src) override { return forward(src, {}); }
  std::shared_ptr<Module> clone() const override;
  const TransformerLayerOptions& options() const { return options_; }

  std::shared_ptr<MultiheadAttention> self_attn;
  std::shared_ptr<Linear> linear1, linear2;
  std::shared_ptr<LayerNorm> norm1, norm2;
  std::shared_ptr<Dropout> dropout, dropout1, dropout2;

 private:
  TransformerLayerOptions options_;
};

/// Self-attention over the target, attention over the encoder's output (memory) and a
/// feed-forward block (submodules self_attn, multihead_attn, linear1, dropout,
/// linear2, norm1–3, dropout1–3).
class TransformerDecoderLayer : public Module {
 public:
  explicit TransformerDecoderLayer(const TransformerLayerOptions& options);
  TransformerDecoderLayer(int64_t d_model, int64_t nhead)
      : TransformerDecoderLayer(TransformerLayerOptions(d_model, nhead)) {}
  Tensor forward(const Tensor& tgt, const Tensor& memory, const Tensor& tgt_mask = {},
                 const Tensor& memory_mask = {}, const Tensor& tgt_key_padding_mask = {},
                 const Tensor& memory_key_padding_mask = {}, bool tgt_is_causal = false,
                 bool memory_is_causal = false);
  using Module::forward;
  std::shared_ptr<Module> clone() const override;
  const TransformerLayerOptions& options() const { return options_; }

  std::shared_ptr<MultiheadAttention> self_attn, multihead_attn;
  std::shared_ptr<Linear> linear1, linear2;
  std::shared_ptr<LayerNorm> norm1, norm2, norm3;
  std::shared_ptr<Dropout> dropout, dropout1, dropout2, dropout3;

 private:
  TransformerLayerOptions options_;
};

/// num_layers copies of `layer` (each starting with its weights, as PyTorch's deep
/// copies), registered as "layers.0", ..., and an optional final norm ("norm").
class TransformerEncoder : public Module {
 public:
  TransformerEncoder(const std::shared_ptr<TransformerEncoderLayer>& layer, int64_t num_layers,
                     std::shared_ptr<LayerNorm> norm = nullptr);
  Tensor forward(const Tensor& src, const Tensor& mask, const Tensor& src_key_padding_mask = {},
                 bool is_causal = false);
  Tensor forward(const Tensor& src) override { return forward(src, {}); }
  std::shared_ptr<Module> clone() const override;

  std::shared_ptr<ModuleList> layers;
  std::shared_ptr<LayerNorm> norm;
};

}  // namespace kiln::nn
