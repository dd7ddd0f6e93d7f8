// Gradchecks (float64 finite differences, see kiln::gradcheck) for every training
// op of the catalogue, through kiln::nn::functional.

#include <gtest/gtest.h>

#include <kiln/kiln.h>
#include <kiln/nn.h>

namespace {

namespace F = kiln::nn::functional;
using kiln::Tensor;
using Inputs = std::vector<Tensor>;

Tensor input(std::vector<int64_t> shape, uint64_t seed = 1, double lo = -1, double hi = 1) {
  kiln::manual_seed(seed);
  return kiln::uniform(shape, lo, hi, kiln::float64).requires_grad_();
}

#define EXPECT_GRADCHECK(fn, ...)                      \
  do {                                                 \
    auto r = kiln::gradcheck(fn, Inputs{__VA_ARGS__}); \
    EXPECT_TRUE(r.ok) << r.message;                    \
  } while (0)

TEST(FunctionalGradcheck, Linear) {
  EXPECT_GRADCHECK([](const Inputs& v) { return F::linear(v[0], v[1], v[2]); }, input({3, 4}),
                   input({5, 4}, 2), input({5}, 3));
  // linear has its own backward node: 1-D and 3-D inputs, no bias, a transposed input.
  EXPECT_GRADCHECK([](const Inputs& v) { return F::linear(v[0], v[1], v[2]); }, input({4}),
                   input({5, 4}, 2), input({5}, 3));
  EXPECT_GRADCHECK([](const Inputs& v) { return F::linear(v[0], v[1], v[2]); }, input({2, 3, 4}),
                   input({5, 4}, 2), input({5}, 3));
  EXPECT_GRADCHECK([](const Inputs& v) { return F::linear(v[0], v[1]); }, input({3, 4}),
                   input({5, 4}, 2));
  EXPECT_GRADCHECK([](const Inputs& v) { return F::linear(v[0].t(), v[1], v[2]); }, input({4, 3}),
                   input({5, 4}, 2), input({5}, 3));
}

TEST(FunctionalGradcheck, LinearPartialRequiresGrad) {
  // Only the weight, or only the bias, requires grad: the others get none.
  auto x = kiln::from_vector<double>({1, 2, 3, 4, 5, 6}, {2, 3});
  auto w = input({2, 3}, 2);
  auto b = kiln::from_vector<double>({0.5, -0.5});
  F::linear(x, w, b).sum().backward();
  EXPECT_FALSE(x.grad().defined());
  EXPECT_FALSE(b.grad().defined());
  // d sum(x w^T) / dw[o][i] = sum over rows of x[r][i].
  EXPECT_EQ(w.grad().to_vector<double>(), (std::vector<double>{5, 7, 9, 5, 7, 9}));
  auto b2 = kiln::from_vector<double>({0.5, -0.5}).requires_grad_();
  auto w2 = kiln::from_vector<double>({1, 0, 0, 0, 1, 0}, {2, 3});
  auto y = F::linear(x, w2, b2);
  EXPECT_EQ(y.to_vector<double>(), (std::vector<double>{1.5, 1.5, 4.5, 4.5}));
  y.sum().backward();
  EXPECT_EQ(b2.grad().to_vector<double>(), (std::vector<double>{2, 2}));
}

TEST(FunctionalGradcheck, LeafGradientsNeverShareStorage) {
  // a + b hands the same gradient tensor to both leaves; .grad() may adopt a
  // gradient only when nothing else holds it, so the two must stay independent.
  auto a = kiln::ones({3}, kiln::float64).requires_grad_();
  auto b = kiln::ones({3}, kiln::float64).requires_grad_();
  (a + b).sum().backward();
  (a * 2).sum().backward();  // accumulates into a.grad() in place
  EXPECT_EQ(a.grad().to_vector<double>(), (std::vector<double>{3, 3, 3}));
  EXPECT_EQ(b.grad().to_vector<double>(), (std::vector<double>{1, 1, 1}));
  // A gradient the caller passes in and keeps is copied, not taken.
  auto c = kiln::zeros({2}, kiln::float64).requires_grad_();
  auto g = kiln::from_vector<double>({1, 2});
  c.backward(g);
  c.backward(g);
  EXPECT_EQ(g.to_vector<double>(), (std::vector<double>{1, 2}));
  EXPECT_EQ(c.grad().to_vector<double>(), (std::vector<double>{2, 4}));
}

TEST(FunctionalGradcheck, Conv2d) {
  EXPECT_GRADCHECK([](const Inputs& v) { return F::conv2d(v[0], v[1], v[2], 1, 1); },
                   input({2, 3, 5, 5}), input({4, 3, 3, 3}, 2), input({4}, 3));
  EXPECT_GRADCHECK(
      [](const Inputs& v) {
        return F::conv2d(v[0], v[1], {}, {2, 1}, {0, 1}, {1, 2});
      },
      input({1, 2, 6, 7}), input({3, 2, 2, 3}, 2));
  EXPECT_GRADCHECK([](const Inputs& v) { return F::conv2d(v[0], v[1], {}, 1, 0, 1, 2); },
                   input({2, 4, 4, 4}), input({6, 2, 3, 3}, 2));  // groups
}

TEST(FunctionalGradcheck, Pooling) {
  // Distinct values keep max pooling away from ties.
  auto distinct = [] {
    std::vector<double> v(2 * 2 * 5 * 5);
    for (size_t i = 0; i < v.size(); ++i) v[i] = static_cast<double>((i * 37) % v.size()) * 0.1;
    return kiln::from_vector<double>(v, {2, 2, 5, 5}).requires_grad_();
  };
  EXPECT_GRADCHECK([](const Inputs& v) { return F::max_pool2d(v[0], 2); }, distinct());
  EXPECT_GRADCHECK([](const Inputs& v) { return F::max_pool2d(v[0], 3, 2, 1, 1, true); },
                   distinct());
  EXPECT_GRADCHECK([](const Inputs& v) { return F::avg_pool2d(v[0], 2); }, input({2, 2, 5, 5}));
  EXPECT_GRADCHECK([](const Inputs& v) { return F::avg_pool2d(v[0], 3, 2, 1, true, false); },
                   input({2, 2, 5, 5}));
  EXPECT_GRADCHECK(
      [](const Inputs& v) {
        return F::adaptive_avg_pool2d(v[0], {2, 3});
      },
      input({2, 2, 5, 7}));
}

TEST(FunctionalGradcheck, BatchNormTraining) {
  auto rm = kiln::zeros({3}, kiln::float64), rv = kiln::ones({3}, kiln::float64);
  EXPECT_GRADCHECK([&](const Inputs& v) { return F::batch_norm(v[0], rm, rv, v[1], v[2], true); },
                   input({4, 3, 2, 2}), input({3}, 2, 0.5, 1.5), input({3}, 3));
  EXPECT_GRADCHECK([](const Inputs& v) { return F::batch_norm(v[0], {}, {}, {}, {}, true); },
                   input({5, 3}));
}

TEST(FunctionalGradcheck, BatchNormEval) {
  auto rm = kiln::from_vector<double>({0.1, -0.2, 0.3});
  auto rv = kiln::from_vector<double>({0.5, 1.5, 2.0});
  EXPECT_GRADCHECK([&](const Inputs& v) { return F::batch_norm(v[0], rm, rv, v[1], v[2], false); },
                   input({4, 3, 2}), input({3}, 2), input({3}, 3));
}

TEST(FunctionalGradcheck, LayerNorm) {
  EXPECT_GRADCHECK([](const Inputs& v) { return F::layer_norm(v[0], {4}, v[1], v[2]); },
                   input({3, 4}), input({4}, 2), input({4}, 3));
  EXPECT_GRADCHECK([](const Inputs& v) { return F::layer_norm(v[0], {2, 3}); }, input({2, 2, 3}));
}

TEST(FunctionalGradcheck, SoftmaxFamily) {
  EXPECT_GRADCHECK([](const Inputs& v) { return F::softmax(v[0], 1); }, input({3, 5}));
  EXPECT_GRADCHECK([](const Inputs& v) { return F::log_softmax(v[0], 0); }, input({3, 5}));
  EXPECT_GRADCHECK([](const Inputs& v) { return F::softmax(v[0], -1); }, input({2, 3, 4}));
}

TEST(FunctionalGradcheck, DropoutWithAFixedMask) {
  // Reseeding inside the function makes every evaluation draw the same mask.
  EXPECT_GRADCHECK(
      [](const Inputs& v) {
        kiln::manual_seed(7);
        return F::dropout(v[0], 0.4, true);
      },
      input({4, 5}));
}

TEST(FunctionalGradcheck, Embedding) {
  auto idx = kiln::from_vector<int64_t>({1, 3, 1, 0, 2, 3}, {2, 3});
  EXPECT_GRADCHECK([idx](const Inputs& v) { return F::embedding(idx, v[0]); }, input({4, 3}));
}

TEST(FunctionalGradcheck, Losses) {
  auto target = kiln::from_vector<int64_t>({2, 0, 1, 2});
  auto with_ignored = kiln::from_vector<int64_t>({2, -100, 1, 2});
  EXPECT_GRADCHECK([target](const Inputs& v) { return F::cross_entropy(v[0], target); },
                   input({4, 3}));
  EXPECT_GRADCHECK(
      [with_ignored](const Inputs& v) {
        return F::cross_entropy(v[0], with_ignored, kiln::nn::Reduction::Mean, -100, 0.1);
      },
      input({4, 3}));
  EXPECT_GRADCHECK(
      [target](const Inputs& v) {
        return F::nll_loss(F::log_softmax(v[0], 1), target, kiln::nn::Reduction::Sum);
      },
      input({4, 3}));
  EXPECT_GRADCHECK([](const Inputs& v) { return F::mse_loss(v[0], v[1]); }, input({3, 2}),
                   input({3, 2}, 2));
  EXPECT_GRADCHECK(
      [](const Inputs& v) { return F::l1_loss(v[0], v[1], kiln::nn::Reduction::None); },
      input({3, 2}), input({3, 2}, 2) + 3.0);
  EXPECT_GRADCHECK([](const Inputs& v) { return F::binary_cross_entropy_with_logits(v[0], v[1]); },
                   input({3, 2}, 1, -4, 4), input({3, 2}, 2, 0, 1));
  // [N, C, d] logits with class weights (the weight's gradient too), and broadcasting.
  auto spatial = kiln::from_vector<int64_t>({1, 2, 0, -100, 2, 2}, {2, 3});
  EXPECT_GRADCHECK(
      [spatial](const Inputs& v) {
        return F::cross_entropy(v[0], spatial, kiln::nn::Reduction::Mean, -100, 0.1, v[1]);
      },
      input({2, 3, 3}), input({3}, 2, 0.5, 2));
  EXPECT_GRADCHECK([](const Inputs& v) { return F::mse_loss(v[0], v[1]); }, input({2, 3}),
                   input({3}, 2));
}

}  // namespace
