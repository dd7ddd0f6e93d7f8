#pragma once
// nanoGPT's GPT in Kiln: token and position embeddings, pre-norm blocks of causal
// self-attention (F::scaled_dot_product_attention) and a GELU MLP, a final LayerNorm,
// and an output layer tied to the token embedding. Parameter names are nanoGPT's
// (transformer.h.0.attn.c_attn.weight is here h.0.attn.c_attn.weight).
//
// forward() with a KVCache appends the new positions' keys and values to it, so that
// generation costs one position per new token instead of a pass over the whole context.

#include <kiln/kiln.h>
#include <kiln/nn.h>

#include <cstdint>
#include <memory>
#include <vector>

namespace kiln::gpt {

struct Config {
  int64_t vocab_size = 0;
  int64_t block_size = 64;  ///< the longest context
  int64_t n_layer = 4, n_head = 4, n_embd = 128;
  double dropout = 0.0;
};

/// Keys and values of the positions seen so far, per layer ([B, heads, T, head_dim]).
struct KVCache {
  std::vector<Tensor> keys, values;
  int64_t length = 0;  ///< positions cached
};

class CausalSelfAttention : public nn::Module {
 public:
  explicit CausalSelfAttention(const Config& c);
  using nn::Module::forward;
  /// x [B, T, C]; with `cache` (layer `layer` of it) the keys and values of earlier
  /// positions take part and this call's are appended.
  Tensor forward(const Tensor& x, KVCache* cache, size_t layer);
  std::shared_ptr<nn::Linear> c_attn, c_proj;
  std::shared_ptr<nn::Dropout> resid_dropout;

 private:
  Config config_;
};

class Block : public nn::Module {
 public:
  explicit Block(const Config& c);
  using nn::Module::forward;
  Tensor forward(const Tensor& x, KVCache* cache, size_t layer);
  std::shared_ptr<nn::LayerNorm> ln_1, ln_2;
  std::shared_ptr<CausalSelfAttention> attn;
  std::shared_ptr<nn::Linear> c_fc, c_proj;
  std::shared_ptr<nn::Dropout> dropout;
};

class GPT : public nn::Module {
 public:
  explicit GPT(const Config& c);
  /// Logits [B, T, vocab] for token ids [B, T] (int64). With `cache`, the ids are the
  /// positions after the cached ones.
  Tensor forward(const Tensor& idx, KVCache* cache);
  Tensor forward(const Tensor& idx) override { return forward(idx, nullptr); }
  std::shared_ptr<Module> clone() const override;
  const Config& config() const { return config_; }
  /// nanoGPT's optimizer groups: `options` (its weight decay) for the matrices, the
  /// same without weight decay for biases and norms' weights (the 1-D parameters).
  std::vector<optim::ParamGroup> param_groups(const optim::AdamWOptions& options);

  std::shared_ptr<nn::Embedding> wte, wpe;
  std::shared_ptr<nn::Dropout> drop;
  std::shared_ptr<nn::ModuleList> h;
  std::shared_ptr<nn::LayerNorm> ln_f;
  std::shared_ptr<nn::Linear> lm_head;

 private:
  Config config_;
};

/// Continues each row of `idx` [B, T] by `new_tokens` sampled tokens (kiln::sample_logits
/// with temperature, top_k, top_p), running the prompt once and then one position per
/// token through a KVCache; returns [B, T + new_tokens]. The context is cropped to
/// the last block_size positions (the cache is rebuilt when it would overflow).
Tensor generate(GPT& model, const Tensor& idx, int64_t new_tokens, double temperature = 1.0,
                int64_t top_k = 0, double top_p = 1.0);

}  // namespace kiln::gpt
