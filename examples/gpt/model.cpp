// nanoGPT's GPT (model.h).
#include "model.h"

#include <algorithm>
#include <cmath>
#include <utility>

namespace kiln::gpt {

namespace F = nn::functional;

CausalSelfAttention::CausalSelfAttention(const Config& c)
    : nn::Module("CausalSelfAttention"), config_(c) {
  KILN_CHECK(c.n_embd % c.n_head == 0, "GPT: n_embd (", c.n_embd,
             ") must be a multiple of n_head (", c.n_head, ")");
  c_attn = register_module<nn::Linear>("c_attn", c.n_embd, 3 * c.n_embd);
  c_proj = register_module<nn::Linear>("c_proj", c.n_embd, c.n_embd);
  resid_dropout = register_module<nn::Dropout>("resid_dropout", c.dropout);
}

Tensor CausalSelfAttention::forward(const Tensor& x, KVCache* cache, size_t layer) {
  const int64_t b = x.size(0), t = x.size(1), c = x.size(2), heads = config_.n_head;
  const std::vector<Tensor> qkv = c_attn->forward(x).chunk(3, 2);
  auto split_heads = [&](const Tensor& y) {
    return y.reshape({b, t, heads, c / heads}).transpose(1, 2);
  };
  const Tensor q = split_heads(qkv[0]);
  Tensor k = split_heads(qkv[1]), v = split_heads(qkv[2]);
  bool causal = true;
  if (cache != nullptr) {
    if (cache->keys.size() <= layer) {
      cache->keys.resize(layer + 1);
      cache->values.resize(layer + 1);
    }
    if (cache->keys[layer].defined()) {
      // One new position attends every cached one: no mask.
      KILN_CHECK(t == 1, "GPT: with a filled KVCache, feed one position at a time");
      k = cat({cache->keys[layer], k}, 2);
      v = cat({cache->values[layer], v}, 2);
      causal = false;
    }
    cache->keys[layer] = k.detach();
    cache->values[layer] = v.detach();
  }
  const double p = is_training() ? config_.dropout : 0.0;
  const Tensor y = F::scaled_dot_product_attention(q, k, v, {}, p, causal);
  return resid_dropout->forward(c_proj->forward(y.transpose(1, 2).reshape({b, t, c})));
}

Block::Block(const Config& c) : nn::Module("Block") {
  ln_1 = register_module<nn::LayerNorm>("ln_1", std::vector<int64_t>{c.n_embd});
  attn = register_module<CausalSelfAttention>("attn", c);
  ln_2 = register_module<nn::LayerNorm>("ln_2", std::vector<int64_t>{c.n_embd});
  c_fc = register_module<nn::Linear>("c_fc", c.n_embd, 4 * c.n_embd);
  c_proj = register_module<nn::Linear>("c_proj", 4 * c.n_embd, c.n_embd);
  dropout = register_module<nn::Dropout>("dropout", c.dropout);
}

Tensor Block::forward(const Tensor& x, KVCache* cache, size_t layer) {
  const Tensor h = x + attn->forward(ln_1->forward(x), cache, layer);
  return h + dropout->forward(c_proj->forward(c_fc->forward(ln_2->forward(h)).gelu()));
}

GPT::GPT(const Config& c) : nn::Module("GPT"), config_(c) {
  KILN_CHECK(c.vocab_size > 0 && c.block_size > 0 && c.n_layer > 0 && c.n_head > 0 && c.n_embd > 0,
             "GPT: every size must be positive");
  wte = register_module<nn::Embedding>("wte", c.vocab_size, c.n_embd);
  wpe = register_module<nn::Embedding>("wpe", c.block_size, c.n_embd);
  drop = register_module<nn::Dropout>("drop", c.dropout);
  h = register_module<nn::ModuleList>("h");
  for (int64_t i = 0; i < c.n_layer; ++i) h->push_back<Block>(c);
  ln_f = register_module<nn::LayerNorm>("ln_f", std::vector<int64_t>{c.n_embd});
  lm_head = register_module<nn::Linear>("lm_head", c.n_embd, c.vocab_size, /*bias=*/false);
  lm_head->weight = wte->weight;  // weight tying, as nanoGPT
  // nanoGPT's initialization: N(0, 0.02) weights, zero biases, and the residual
  // projections scaled by 1/sqrt(2·n_layer).
  apply([](nn::Module& m) {
    if (auto* linear = m.as<nn::Linear>()) {
      nn::init::normal_(linear->weight, 0.0, 0.02);
      if (linear->bias.defined()) nn::init::zeros_(linear->bias);
    } else if (auto* embedding = m.as<nn::Embedding>()) {
      nn::init::normal_(embedding->weight, 0.0, 0.02);
    }
  });
  const double residual_std = 0.02 / std::sqrt(2.0 * static_cast<double>(c.n_layer));
  for (auto& [name, p] : named_parameters())
    if (name.ends_with("c_proj.weight")) nn::init::normal_(p, 0.0, residual_std);
}

Tensor GPT::forward(const Tensor& idx, KVCache* cache) {
  KILN_CHECK(idx.dim() == 2 && idx.dtype() == DType::Int64,
             "GPT: expected int64 token ids [B, T], got ", idx.dtype(), " ", idx.shape());
  const int64_t t = idx.size(1), past = cache ? cache->length : 0;
  KILN_CHECK(past + t <= config_.block_size, "GPT: ", past + t, " positions exceed the block size ",
             config_.block_size);
  const Tensor pos = arange(past, past + t, 1, TensorOptions(DType::Int64).device(idx.device()));
  Tensor x = drop->forward(wte->forward(idx) + wpe->forward(pos));
  size_t layer = 0;
  for (const auto& block : *h) x = block->as<Block>()->forward(x, cache, layer++);
  if (cache) cache->length += t;
  return lm_head->forward(ln_f->forward(x));
}

std::shared_ptr<nn::Module> GPT::clone() const {
  return copy_state_into(std::make_shared<GPT>(config_));
}

std::vector<optim::ParamGroup> GPT::param_groups(const optim::AdamWOptions& options) {
  std::vector<Tensor> decay, no_decay;
  for (const Tensor& p : parameters()) (p.dim() >= 2 ? decay : no_decay).push_back(p);
  std::vector<optim::ParamGroup> groups(2);
  groups[0].params = std::move(decay);
  groups[0].options = options.clone();
  groups[1].params = std::move(no_decay);
  groups[1].options = optim::AdamWOptions(options).weight_decay(0).clone();
  return groups;
}

Tensor generate(GPT& model, const Tensor& idx, int64_t new_tokens, double temperature,
                int64_t top_k, double top_p) {
  NoGradGuard no_grad;
  const int64_t block = model.config().block_size;
  Tensor out = idx;
  KVCache cache;
  Tensor next_input = idx.size(1) > block ? idx.narrow(1, idx.size(1) - block, block) : idx;
  for (int64_t i = 0; i < new_tokens; ++i) {
    if (cache.length + next_input.size(1) > block) {
      // The window moves on: start again from the last block_size - 1 tokens (at
      // least the last one).
      cache = KVCache();
      const int64_t keep = std::max<int64_t>(block - 1, 1);
      next_input = out.narrow(1, out.size(1) - keep, keep);
    }
    const Tensor logits = model.forward(next_input, &cache);
    const Tensor last = logits.select(1, logits.size(1) - 1);
    next_input = sample_logits(last, temperature, top_k, top_p);
    out = cat({out, next_input}, 1);
  }
  return out;
}

}  // namespace kiln::gpt
