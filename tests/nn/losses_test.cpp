// Loss values against float64 references computed here, and against values printed by
// PyTorch 1.13.1 (marked where used).

#include <gtest/gtest.h>

#include <kiln/kiln.h>
#include <kiln/nn.h>
#include <algorithm>
#include <cmath>
#include <limits>

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

// The values below were printed by PyTorch 1.13.1 (Debian's python3-torch, by hand) for
// the same inputs; `near` compares within 1e-12 relative, NaN with NaN and inf exactly.
::testing::AssertionResult near(const kiln::Tensor& t, const std::vector<double>& expected,
                                double rtol = 1e-12) {
  const std::vector<double> got = t.to(kiln::float64).to_vector<double>();
  if (got.size() != expected.size())
    return ::testing::AssertionFailure() << got.size() << " values, expected " << expected.size();
  for (size_t i = 0; i < got.size(); ++i) {
    const double e = expected[i], g = got[i];
    const bool ok = std::isnan(e)   ? std::isnan(g)
                    : std::isinf(e) ? g == e
                                    : std::abs(g - e) <= rtol * std::max(1.0, std::abs(e));
    if (!ok) return ::testing::AssertionFailure() << "element " << i << ": " << g << " vs " << e;
  }
  return ::testing::AssertionSuccess();
}

TEST(Losses, BceWithLogitsGradientsAreSigmoidMinusTargetAndMinusX) {
  const double inf = std::numeric_limits<double>::infinity();
  auto x = kiln::from_vector<double>({0, 0, inf, -1.5, 2.5, 30}).requires_grad_();
  auto t = kiln::from_vector<double>({0.3, 1, 0.3, 0, 0.25, 0.7}).requires_grad_();
  auto loss = F::binary_cross_entropy_with_logits(x, t, Reduction::None);
  // PyTorch: F.binary_cross_entropy_with_logits(x, t, reduction='none').backward(g).
  EXPECT_TRUE(near(loss, {0.6931471805599453, 0.6931471805599453, inf, 0.20141327798275246,
                          1.9538897342925496, 9.000000000000096}));
  loss.backward(kiln::from_vector<double>({1, 2, 3, 4, 5, 6}));
  // At x = 0 the gradient is (0.5 − t)·g (Kiln gave −t·g); at x = +inf the loss is inf,
  // not NaN, and the gradients are (1 − t)·g and −inf.
  EXPECT_TRUE(near(
      x.grad(),
      {0.2, -1.0, 2.0999999999999996, 0.7297020952254254, 3.3707090998937828, 1.7999999999994394},
      1e-10));
  EXPECT_TRUE(near(t.grad(), {-0.0, -0.0, -inf, 6.0, -12.5, -180.0}));

  auto xm = kiln::from_vector<double>({0, inf, -1.5}).requires_grad_();
  auto tm = kiln::from_vector<double>({0.3, 0.3, 0}).requires_grad_();
  auto mean = F::binary_cross_entropy_with_logits(xm, tm);
  EXPECT_TRUE(near(mean, {inf}));
  mean.backward();
  EXPECT_TRUE(near(xm.grad(), {0.06666666666666667, 0.2333333333333333, 0.060808507935452116}));
  EXPECT_TRUE(near(tm.grad(), {-0.0, -inf, 0.5}));
}

TEST(Losses, SoftmaxAndCrossEntropyOnRowsHoldingInfinities) {
  const double inf = std::numeric_limits<double>::infinity(), nan = std::nan("");
  // PyTorch 1.13: a row holding +inf, or only -inf, is NaN throughout (exp(x − max));
  // a -inf beside finite values is an ordinary 0. Kiln gave [0, NaN, 0] for the first.
  const std::vector<double> rows = {1, inf, 2, 1, -inf, 2, -inf, -inf, -inf, 0.5, 1, -1};
  auto x = kiln::from_vector<double>(rows, {4, 3}).requires_grad_();
  auto g = kiln::from_vector<double>({0.3, -0.7, 1.1}).expand({4, 3}).contiguous();
  auto y = F::softmax(x, 1);
  EXPECT_TRUE(near(y, {nan, nan, nan, 0.26894142136999516, 0.0, 0.7310585786300049, nan, nan, nan,
                       0.3482074278837349, 0.5740969929676946, 0.0776955791485706}));
  y.backward(g);
  EXPECT_TRUE(
      near(x.grad(), {nan, nan, nan, -0.15728954659318553, -0.0, 0.15728954659318553, nan, nan, nan,
                      0.17826149505845879, -0.28019347431800773, 0.10193197925954893}));
  auto x2 = kiln::from_vector<double>(rows, {4, 3}).requires_grad_();
  auto ly = F::log_softmax(x2, 1);
  EXPECT_TRUE(near(ly, {nan, nan, nan, -1.3132616875182228, -inf, -0.31326168751822286, nan, nan,
                        nan, -1.0549569196419906, -0.5549569196419906, -2.554956919641991}));
  ly.backward(g);
  EXPECT_TRUE(
      near(x2.grad(), {nan, nan, nan, 0.11174100504100337, -0.7, 0.5882589949589966, nan, nan, nan,
                       0.056254800481385515, -1.1018678950773864, 1.0456130945960007}));
  // The same along dim 0 (lines across an inner dim).
  EXPECT_TRUE(near(F::softmax(x.detach().t().contiguous(), 0).t(), y.to_vector<double>()));
  auto x3 = kiln::from_vector<double>(rows, {4, 3}).requires_grad_();
  auto ce = F::cross_entropy(x3, kiln::from_vector<int64_t>({0, 2, 1, 1}), Reduction::None);
  EXPECT_TRUE(near(ce, {nan, 0.31326168751822286, nan, 0.5549569196419906}));
  ce.sum().backward();
  EXPECT_TRUE(
      near(x3.grad(), {nan, nan, nan, 0.2689414213699951, 0.0, -0.2689414213699951, nan, nan, nan,
                       0.3482074278837349, -0.42590300703230544, 0.07769557914857057}));
}

TEST(Losses, CrossEntropyAndNllOverExtraDimsWithClassWeights) {
  // logits [N=2, C=3, d=2], targets [2, 2] with one ignored, class weights.
  const std::vector<double> v = {1, 2, 0.5, -1, 0, 3, 0.2, -0.4, 1.1, 2, 1, -2};
  auto t = kiln::from_vector<int64_t>({1, 2, 0, -100}, {2, 2});
  auto w = kiln::from_vector<double>({0.5, 2, 1.5});
  auto run = [&](Reduction r, double smoothing = 0) {
    auto x = kiln::from_vector<double>(v, {2, 3, 2}).requires_grad_();
    auto loss = F::cross_entropy(x, t, r, -100, smoothing, w);
    return std::make_pair(x, loss);
  };
  {
    auto [x, loss] = run(Reduction::None);
    EXPECT_EQ(loss.shape().vec(), (std::vector<int64_t>{2, 2}));
    EXPECT_TRUE(near(loss, {2.360539341283469, 0.4898439619012057, 0.8689282318356117, 0.0}));
    loss.backward(kiln::from_vector<double>({1, 2, 3, 4}, {2, 2}));
    EXPECT_TRUE(near(
        x.grad(), {1.012960782111308, 0.7961637863167258, -1.3856082285630031, 0.039638660861368254,
                   0.3726474464516951, -0.835802447178094, -1.2361544422553452, 0.0,
                   0.6489553546936935, 0.0, 0.587199087561652, 0.0}));
  }
  {
    // Mean: sum(w[t]·loss) / sum(w[t]) over the targets not ignored.
    auto [x, loss] = run(Reduction::Mean);
    EXPECT_TRUE(near(loss, {0.9298278837550716}));
    loss.backward();
    EXPECT_TRUE(near(x.grad(), {0.253240195527827, 0.09952047328959072, -0.3464020571407508,
                                0.004954832607671032, 0.09316186161292378, -0.10447530589726176,
                                -0.10301287018794544, 0.0, 0.05407961289114112, 0.0,
                                0.048933257296804325, 0.0}));
  }
  EXPECT_TRUE(near(run(Reduction::Sum).second, {3.7193115350202866}));
  {
    auto [x, loss] = run(Reduction::Mean, 0.2);
    EXPECT_TRUE(near(loss, {1.0601748920427525}));
    loss.backward();
    EXPECT_TRUE(near(x.grad(), {0.22802418249263856, 0.0889755738831554, -0.2899752533313674,
                                -0.02848860811694388, 0.06195107083872887, -0.0604869657662115,
                                -0.07901716025059392, 0.0, 0.038772817188188154, 0.0,
                                0.04024434306240576, 0.0}));
  }
  auto x = kiln::from_vector<double>(v, {2, 3, 2});
  EXPECT_TRUE(near(F::cross_entropy(x, t, Reduction::None, -100, 0.2),
                   {1.1802696706417346, 0.6598959746008037, 1.6245231303378902, 0.0}));
  EXPECT_TRUE(near(F::cross_entropy(x, t), {1.0815629251934762}));
  auto logp = F::log_softmax(x, 1);
  EXPECT_TRUE(near(F::nll_loss(logp, t, Reduction::Mean, -100, w), {0.9298278837550716}));
  // Unbatched: logits [C], target [] gives a 0-d loss.
  auto one = F::cross_entropy(kiln::from_vector<double>({1, 2, 0.5}),
                              kiln::from_vector<int64_t>({2}).reshape(std::vector<int64_t>{}),
                              Reduction::None);
  EXPECT_EQ(one.dim(), 0);
  EXPECT_TRUE(near(one, {1.964368784107945}));
  // The loss module takes the weight too.
  kiln::nn::CrossEntropyLoss module(kiln::nn::CrossEntropyLossOptions().weight(w));
  EXPECT_TRUE(near(module(x, t), {0.9298278837550716}));
  EXPECT_TRUE(
      near(module.clone()->as<kiln::nn::CrossEntropyLoss>()->forward(x, t), {0.9298278837550716}));
  // Shapes that do not pair up name both.
  EXPECT_THROW(F::cross_entropy(x, kiln::from_vector<int64_t>({0, 1, 2}, {1, 3})), kiln::Error);
  EXPECT_THROW(F::nll_loss(logp, t, Reduction::Mean, -100, kiln::ones({2}, kiln::float64)),
               kiln::Error);
}

TEST(Losses, MseAndL1BroadcastAsPyTorch) {
  auto a = kiln::from_vector<double>({1, 2, 3, 4, 5, 6}, {2, 3}).requires_grad_();
  auto b = kiln::from_vector<double>({1.5, 0, -1}).requires_grad_();
  auto loss = F::mse_loss(a, b);
  EXPECT_TRUE(near(loss, {16.75}));  // PyTorch broadcasts (with a warning)
  loss.backward();
  EXPECT_TRUE(near(a.grad(), {-0.16666666666666666, 0.6666666666666666, 1.3333333333333333,
                              0.8333333333333333, 1.6666666666666665, 2.333333333333333}));
  EXPECT_TRUE(near(b.grad(), {-0.6666666666666666, -2.333333333333333, -3.666666666666666}));
  auto c = kiln::from_vector<double>({1, 2, 3});
  auto d = kiln::from_vector<double>({1, 2}, {2, 1});
  EXPECT_EQ(F::mse_loss(c, d, Reduction::None).shape().vec(), (std::vector<int64_t>{2, 3}));
  EXPECT_TRUE(near(F::mse_loss(c, d), {1.1666666666666667}));
  EXPECT_TRUE(near(F::l1_loss(a.detach(), b.detach()), {3.5}));
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
