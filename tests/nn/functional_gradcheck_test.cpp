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
}

TEST(FunctionalGradcheck, Conv2d) {
  EXPECT_GRADCHECK([](const Inputs& v) { return F::conv2d(v[0], v[1], v[2], 1, 1); },
                   input({2, 3, 5, 5}), input({4, 3, 3, 3}, 2), input({4}, 3));
  EXPECT_GRADCHECK([](const Inputs& v) { return F::conv2d(v[0], v[1], {}, {2, 1}, {0, 1}, {1, 2}); },
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
  EXPECT_GRADCHECK([](const Inputs& v) { return F::max_pool2d(v[0], 3, 2, 1, 1, true); }, distinct());
  EXPECT_GRADCHECK([](const Inputs& v) { return F::avg_pool2d(v[0], 2); }, input({2, 2, 5, 5}));
  EXPECT_GRADCHECK([](const Inputs& v) { return F::avg_pool2d(v[0], 3, 2, 1, true, false); },
                   input({2, 2, 5, 5}));
  EXPECT_GRADCHECK([](const Inputs& v) { return F::adaptive_avg_pool2d(v[0], {2, 3}); },
                   input({2, 2, 5, 7}));
}

TEST(FunctionalGradcheck, BatchNormTraining) {
  auto rm = kiln::zeros({3}, kiln::float64), rv = kiln::ones({3}, kiln::float64);
  EXPECT_GRADCHECK(
      [&](const Inputs& v) { return F::batch_norm(v[0], rm, rv, v[1], v[2], true); },
      input({4, 3, 2, 2}), input({3}, 2, 0.5, 1.5), input({3}, 3));
  EXPECT_GRADCHECK([](const Inputs& v) { return F::batch_norm(v[0], {}, {}, {}, {}, true); },
                   input({5, 3}));
}

TEST(FunctionalGradcheck, BatchNormEval) {
  auto rm = kiln::from_vector<double>({0.1, -0.2, 0.3});
  auto rv = kiln::from_vector<double>({0.5, 1.5, 2.0});
  EXPECT_GRADCHECK(
      [&](const Inputs& v) { return F::batch_norm(v[0], rm, rv, v[1], v[2], false); },
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
}

}  // namespace
