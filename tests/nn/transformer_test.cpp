// nn::MultiheadAttention and the transformer layers against PyTorch 1.13 (float64,
// tests/nn/transformer_reference.h): parameter names, outputs, attention weights and
// gradients, with every kind of mask; then what PyTorch users rely on beyond numbers.

#include <gtest/gtest.h>

#include <kiln/kiln.h>
#include <kiln/nn.h>

#include <cmath>
#include <functional>
#include <string>
#include <vector>

#include "transformer_reference.h"

namespace {

using namespace kiln;
namespace F = kiln::nn::functional;

// The reference's values: parameter i, element j = 0.5·sin(0.7·i + 0.31·j + 0.1).
std::vector<std::string> fill_parameters(nn::Module& m) {
  m.to(DType::Float64);
  std::vector<std::string> names;
  NoGradGuard no_grad;
  int i = 0;
  for (auto& [name, p] : m.named_parameters()) {
    std::vector<double> values(static_cast<size_t>(p.numel()));
    for (size_t j = 0; j < values.size(); ++j)
      values[j] = 0.5 * std::sin(0.7 * i + 0.31 * static_cast<double>(j) + 0.1);
    p.copy_(from_vector<double>(values, p.shape()));
    names.push_back(name);
    ++i;
  }
  return names;
}

// Element j = sin(0.5·j + c).
Tensor input(IntArrayRef shape, double c) {
  int64_t n = 1;
  for (int64_t s : shape) n *= s;
  std::vector<double> values(static_cast<size_t>(n));
  for (size_t j = 0; j < values.size(); ++j) values[j] = std::sin(0.5 * static_cast<double>(j) + c);
  return from_vector<double>(values, shape);
}

Tensor bools(std::vector<int64_t> values, std::vector<int64_t> shape) {
  return from_vector<int64_t>(values, shape).to(DType::Bool);
}

void expect_values(const Tensor& t, const std::vector<double>& expected, double tol,
                   const std::string& what) {
  const std::vector<double> got = t.contiguous().to_vector<double>();
  ASSERT_EQ(got.size(), expected.size()) << what;
  for (size_t i = 0; i < got.size(); ++i)
    ASSERT_NEAR(got[i], expected[i], tol) << what << " element " << i;
}

// Names, output, weights and gradients as PyTorch's.
void expect_reference(const TransformerReference& ref, nn::Module& m,
                      const std::vector<std::string>& names, const Tensor& out,
                      const Tensor& weights = {}) {
  EXPECT_EQ(names, ref.names);
  std::vector<double> shape(out.shape().begin(), out.shape().end());
  EXPECT_EQ(shape, ref.shape);
  expect_values(out, ref.out, 1e-12, "output");
  if (!ref.weights.empty()) expect_values(weights, ref.weights, 1e-12, "attention weights");
  (out * input(out.shape(), 3.0)).sum().backward();
  size_t i = 0;
  for (const auto& [name, p] : m.named_parameters()) {
    ASSERT_LT(i, ref.grads.size());
    ASSERT_TRUE(p.grad().defined()) << name;
    const auto [sum, squares] = ref.grads[i++];
    EXPECT_NEAR(p.grad().sum().item<double>(), sum, 1e-10 * (1 + std::abs(sum))) << name;
    EXPECT_NEAR((p.grad() * p.grad()).sum().item<double>(), squares, 1e-10 * (1 + squares)) << name;
  }
}

TEST(MultiheadAttention, CrossAttentionWithBothMasksAsPyTorch) {
  nn::MultiheadAttention m(8, 2);
  const auto names = fill_parameters(m);
  m.eval();
  const Tensor padding = bools({0, 0, 0, 1, 0, 0, 1, 1}, {2, 4});
  const auto [out, weights] = m.forward(input({3, 2, 8}, 0.1), input({4, 2, 8}, 0.2),
                                        input({4, 2, 8}, 0.3), padding, true, input({3, 4}, 0.4));
  EXPECT_EQ(weights.shape(), (std::vector<int64_t>{2, 3, 4}));
  expect_reference(k_mha, m, names, out, weights);
  // Without the weights the output comes from the fused op: the same numbers.
  const Tensor fused = m.forward(input({3, 2, 8}, 0.1), input({4, 2, 8}, 0.2),
                                 input({4, 2, 8}, 0.3), padding, false, input({3, 4}, 0.4))
                           .first;
  expect_values(fused, k_mha.out, 1e-12, "output without weights");
}

TEST(MultiheadAttention, KeyAndValueSizesBatchFirstPerHeadMaskAsPyTorch) {
  nn::MultiheadAttention m(nn::MultiheadAttentionOptions(8, 2).kdim(5).vdim(6).batch_first(true));
  EXPECT_FALSE(m.in_proj_weight.defined());
  const auto names = fill_parameters(m);
  m.eval();
  // Head 1 of batch 0 may not attend key 2 from query 0; head 0 of batch 1, key 0.
  std::vector<int64_t> masked(48, 0);
  masked[1 * 12 + 0 * 4 + 2] = 1;
  for (size_t i = 0; i < 3; ++i) masked[2 * 12 + i * 4] = 1;
  const Tensor mask = bools(masked, {4, 3, 4});
  const auto [out, weights] = m.forward(input({2, 3, 8}, 0.5), input({2, 4, 5}, 0.6),
                                        input({2, 4, 6}, 0.7), {}, true, mask, false);
  EXPECT_EQ(weights.shape(), (std::vector<int64_t>{2, 2, 3, 4}));
  expect_reference(k_mha_kv, m, names, out, weights);
}

TEST(TransformerEncoderLayer, PreNormGeluBatchFirstCausalAsPyTorch) {
  nn::TransformerEncoderLayer m(nn::TransformerEncoderLayerOptions(8, 2)
                                    .dim_feedforward(16)
                                    .activation("gelu")
                                    .batch_first(true)
                                    .norm_first(true));
  const auto names = fill_parameters(m);
  m.eval();
  const Tensor causal = ones({5, 5}, TensorOptions(DType::Bool)).triu(1);
  const Tensor out = m.forward(input({2, 5, 8}, 0.8), causal);
  expect_reference(k_encoder_layer, m, names, out);
  // is_causal alone is the same mask.
  const Tensor hinted = m.forward(input({2, 5, 8}, 0.8), {}, {}, true);
  expect_values(hinted, k_encoder_layer.out, 1e-12, "is_causal");
}

TEST(TransformerDecoderLayer, PostNormReluAsPyTorch) {
  nn::TransformerDecoderLayer m(nn::TransformerDecoderLayerOptions(8, 2).dim_feedforward(16));
  const auto names = fill_parameters(m);
  m.eval();
  const Tensor out = m.forward(input({3, 2, 8}, 0.9), input({4, 2, 8}, 1.0),
                               ones({3, 3}, TensorOptions(DType::Bool)).triu(1), {}, {},
                               bools({0, 0, 0, 1, 0, 0, 0, 0}, {2, 4}));
  expect_reference(k_decoder_layer, m, names, out);
}

TEST(TransformerEncoder, LayersAndFinalNormAsPyTorch) {
  auto layer = std::make_shared<nn::TransformerEncoderLayer>(
      nn::TransformerEncoderLayerOptions(8, 2).dim_feedforward(16));
  nn::TransformerEncoder m(layer, 2, std::make_shared<nn::LayerNorm>(std::vector<int64_t>{8}));
  const auto names = fill_parameters(m);
  m.eval();
  const Tensor out =
      m.forward(input({5, 2, 8}, 1.1), {}, bools({0, 0, 0, 0, 0, 0, 0, 0, 1, 1}, {2, 5}));
  expect_reference(k_encoder, m, names, out);
}

// PyTorch's deep copies: every layer starts with the prototype's weights, and each is
// a tensor of its own.
TEST(TransformerEncoder, LayersAreIndependentCopies) {
  auto layer = std::make_shared<nn::TransformerEncoderLayer>(8, 2);
  nn::TransformerEncoder m(layer, 3);
  ASSERT_EQ(m.layers->size(), 3u);
  const auto params = m.named_parameters();
  EXPECT_EQ(params.size(), 3 * layer->named_parameters().size());
  auto first = (*m.layers)[0]->as<nn::TransformerEncoderLayer>();
  auto third = (*m.layers)[2]->as<nn::TransformerEncoderLayer>();
  EXPECT_NE(first->linear1->weight.impl(), third->linear1->weight.impl());
  EXPECT_EQ((first->linear1->weight - third->linear1->weight).abs().max().item<float>(), 0.0f);
  auto copy = m.clone();
  EXPECT_EQ(copy->named_parameters().size(), params.size());
}

TEST(MultiheadAttention, TrainsAndDropsOnlyInTraining) {
  manual_seed(3);
  nn::MultiheadAttention m(16, 4, /*dropout=*/0.5, true, /*batch_first=*/true);
  const Tensor x = randn({2, 7, 16});
  m.eval();
  const Tensor a = m.forward(x), b = m.forward(x);
  EXPECT_EQ((a - b).abs().max().item<float>(), 0.0f);
  m.train();
  EXPECT_GT((m.forward(x) - a).abs().max().item<float>(), 1e-3f);
  // Unbatched input: [L, E] in, [L, E] out, weights [L, S].
  m.eval();
  const auto [out, weights] = m.forward(x[0], x[0], x[0]);
  EXPECT_EQ(out.shape(), (std::vector<int64_t>{7, 16}));
  EXPECT_EQ(weights.shape(), (std::vector<int64_t>{7, 7}));
  EXPECT_LE((out - a[0]).abs().max().item<float>(), 1e-5f);
}

TEST(MultiheadAttention, BadInputIsAClearError) {
  auto expect_error = [](const std::function<void()>& f, const std::string& needle) {
    try {
      f();
      ADD_FAILURE() << "no error; expected one mentioning '" << needle << "'";
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find(needle), std::string::npos) << e.what();
    }
  };
  expect_error([] { nn::MultiheadAttention(10, 3); }, "multiple of num_heads");
  expect_error(
      [] { nn::TransformerEncoderLayer(nn::TransformerLayerOptions(8, 2).activation("tanh")); },
      "activation");
  nn::MultiheadAttention m(8, 2);
  const Tensor x = randn({3, 2, 8});
  expect_error([&] { m.forward(randn({3, 2, 6})); }, "features");
  expect_error(
      [&] {
        m.forward(x, x, x, ones({2, 5}, TensorOptions(DType::Bool)));
      },
      "key_padding_mask");
  expect_error([&] { m.forward(x, x, x, {}, false, ones({3, 4})); }, "attn_mask");
  expect_error([&] { m.forward(x, randn({3, 8}), x); }, "must all be 3-D");
}

}  // namespace
