// Loss values against float64 references computed here (tolerance 1e-9 relative).

#include <gtest/gtest.h>

#include <kiln/kiln.h>
#include <kiln/nn.h>
#include <cmath>

namespace {

namespace F = kiln::nn::functional;
using kiln::nn::Reduction;

TEST(Losses, CrossEntropyMatchesTheFormula) {
  std::vector<double> logits = {1.0, 2.0, 0.5, -1.0, 0.0, 3.0};
  std::vector<int64_t> target = {1, 2};
  double expected = 0;
  for (int i = 0; i < 2; ++i) {
    double m = 0;
    for (int c = 0; c < 3; ++c) m += std::exp(logits[i * 3 + c]);
    expected += -(logits[i * 3 + target[i]] - std::log(m));
  }
  expected /= 2;
  auto x = kiln::from_vector<double>(logits, {2, 3});
  auto t = kiln::from_vector<int64_t>(target);
  EXPECT_NEAR(F::cross_entropy(x, t).item<double>(), expected, 1e-12);
  EXPECT_NEAR(F::cross_entropy(x, t, Reduction::Sum).item<double>(), expected * 2, 1e-12);
  EXPECT_EQ(F::cross_entropy(x, t, Reduction::None).shape().vec(), (std::vector<int64_t>{2}));
}

TEST(Losses, IgnoreIndexAndLabelSmoothing) {
  auto x = kiln::from_vector<double>({1.0, 2.0, 0.5, -1.0, 0.0, 3.0}, {2, 3});
  auto t = kiln::from_vector<int64_t>({1, -100});
  // Only sample 0 counts, and the mean divides by 1.
  double lse0 = std::log(std::exp(1.0) + std::exp(2.0) + std::exp(0.5));
  double nll0 = lse0 - 2.0;
  EXPECT_NEAR(F::cross_entropy(x, t).item<double>(), nll0, 1e-12);
  double smooth0 = (3 * lse0 - (1.0 + 2.0 + 0.5)) / 3;
  EXPECT_NEAR(F::cross_entropy(x, t, Reduction::Mean, -100, 0.2).item<double>(),
              0.8 * nll0 + 0.2 * smooth0, 1e-12);
}

TEST(Losses, NllRejectsATargetOutOfRange) {
  auto x = kiln::zeros({2, 3}, kiln::float64);
  auto t = kiln::from_vector<int64_t>({0, 3});
  EXPECT_THROW(F::nll_loss(x, t), kiln::Error);
  auto wrong_rank = kiln::from_vector<int64_t>({0, 1, 2, 0}, {2, 2});
  EXPECT_THROW(F::nll_loss(x, wrong_rank), kiln::Error);
  EXPECT_THROW(F::cross_entropy(x, kiln::zeros({2})), kiln::Error);  // float target
}

TEST(Losses, ElementwiseLosses) {
  auto a = kiln::from_vector<double>({1, 2, 3});
  auto b = kiln::from_vector<double>({2, 2, 5});
  EXPECT_NEAR(F::mse_loss(a, b).item<double>(), 5.0 / 3, 1e-12);
  EXPECT_NEAR(F::l1_loss(a, b, Reduction::Sum).item<double>(), 3.0, 1e-12);
  auto logits = kiln::from_vector<double>({0.0, 50.0, -50.0});
  auto target = kiln::from_vector<double>({1.0, 1.0, 0.0});
  // log(2) for the first, ~0 for the confident correct ones: no overflow at ±50.
  EXPECT_NEAR(F::binary_cross_entropy_with_logits(logits, target, Reduction::Sum).item<double>(),
              std::log(2.0), 1e-12);
  EXPECT_THROW(F::mse_loss(a, kiln::zeros({2}, kiln::float64)), kiln::Error);
}

}  // namespace

namespace {

// The loss modules are their functional counterparts with the options bound.
TEST(LossModules, EqualTheFunctions) {
  namespace F = kiln::nn::functional;
  using kiln::nn::Reduction;
  auto logits = kiln::from_vector<float>({0.5f, -1.0f, 2.0f, 0.1f, 0.2f, -0.3f}, {2, 3});
  auto classes = kiln::from_vector<int64_t>({2, 0}, {2});
  auto target = kiln::from_vector<float>({0.0f, 1.0f, 0.5f, 0.2f, 0.9f, 0.0f}, {2, 3});
  auto same = [](const kiln::Tensor& a, const kiln::Tensor& b) {
    return a.to_vector<float>() == b.to_vector<float>();
  };
  kiln::nn::CrossEntropyLoss ce(kiln::nn::CrossEntropyLossOptions().label_smoothing(0.1));
  EXPECT_TRUE(
      same(ce(logits, classes), F::cross_entropy(logits, classes, Reduction::Mean, -100, 0.1)));
  kiln::nn::NLLLoss nll(kiln::nn::NLLLossOptions().reduction(Reduction::Sum));
  auto logp = F::log_softmax(logits, 1);
  EXPECT_TRUE(same(nll(logp, classes), F::nll_loss(logp, classes, Reduction::Sum)));
  kiln::nn::MSELoss mse(kiln::nn::LossOptions().reduction(Reduction::None));
  EXPECT_TRUE(same(mse(logits, target), F::mse_loss(logits, target, Reduction::None)));
  kiln::nn::L1Loss l1;
  EXPECT_TRUE(same(l1(logits, target), F::l1_loss(logits, target)));
  kiln::nn::BCEWithLogitsLoss bce;
  EXPECT_TRUE(same(bce(logits, target), F::binary_cross_entropy_with_logits(logits, target)));
  EXPECT_TRUE(ce.parameters().empty());
  EXPECT_EQ(ce.type_name(), "CrossEntropyLoss");
  auto copy = ce.clone();
  EXPECT_TRUE(
      same(dynamic_cast<kiln::nn::CrossEntropyLoss&>(*copy)(logits, classes), ce(logits, classes)));
}

}  // namespace
