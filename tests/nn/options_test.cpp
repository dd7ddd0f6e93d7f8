// Options structs: every option is set with name(value) (chainable) and read with
// name(); layers built from options behave as the positional spellings.
#include <gtest/gtest.h>

#include <kiln/kiln.h>

#include <type_traits>

namespace {

using kiln::Tensor;
namespace nn = kiln::nn;

double max_diff(const Tensor& a, const Tensor& b) {
  return (a.to(kiln::float64) - b.to(kiln::float64)).abs().max().item<double>();
}

TEST(Options, Conv2dOptionsReadBackWhatWasSet) {
  auto o = nn::Conv2dOptions().stride({2, 1}).padding(1).dilation(2).groups(2).bias(false);
  EXPECT_EQ(o.stride().h, 2);
  EXPECT_EQ(o.stride().w, 1);
  EXPECT_EQ(o.padding().h, 1);
  EXPECT_EQ(o.dilation().w, 2);
  EXPECT_EQ(o.groups(), 2);
  EXPECT_FALSE(o.bias());
  nn::Conv2d conv(4, 6, 3, o);
  EXPECT_EQ(conv.weight.shape().vec(), (std::vector<int64_t>{6, 2, 3, 3}));
  EXPECT_FALSE(conv.bias.defined());
  // H: (9 + 2 - 2*2 - 1) / 2 + 1 = 4; W: (9 + 2 - 4 - 1) / 1 + 1 = 7
  EXPECT_EQ(conv(kiln::randn({1, 4, 9, 9})).shape().vec(), (std::vector<int64_t>{1, 6, 4, 7}));
}

TEST(Options, PoolingFromOptionsMatchesThePositionalSpelling) {
  kiln::manual_seed(1);
  auto x = kiln::randn({2, 3, 9, 9});
  nn::MaxPool2d max_positional(3, 2, 1, 1, true);
  nn::MaxPool2d max_options(nn::MaxPool2dOptions(3).stride(2).padding(1).ceil_mode(true));
  EXPECT_EQ(max_diff(max_positional(x), max_options(x)), 0.0);
  EXPECT_EQ(max_options(x).shape().vec(), (std::vector<int64_t>{2, 3, 5, 5}));
  nn::AvgPool2d avg_positional(3, 1, 1, false, false);
  nn::AvgPool2d avg_options(nn::AvgPool2dOptions(3).stride(1).padding(1).count_include_pad(false));
  EXPECT_EQ(max_diff(avg_positional(x), avg_options(x)), 0.0);
  EXPECT_EQ(nn::MaxPool2dOptions(4).stride(), std::nullopt) << "stride defaults to the kernel";
}

TEST(Options, NormsFromOptionsMatchThePositionalSpelling) {
  kiln::manual_seed(2);
  auto x = kiln::randn({4, 3, 5, 5}) * 3 + 1;
  nn::BatchNorm2d bn_positional(3, 1e-3, 0.2, false);
  nn::BatchNorm2d bn_options(nn::BatchNormOptions(3).eps(1e-3).momentum(0.2).affine(false));
  EXPECT_FALSE(bn_options.weight.defined());
  EXPECT_LT(max_diff(bn_positional(x), bn_options(x)), 1e-6);
  EXPECT_LT(max_diff(bn_positional.running_mean, bn_options.running_mean), 1e-6);
  auto ln_x = kiln::randn({2, 8});
  nn::LayerNorm ln_positional({8}, 1e-3, false);
  nn::LayerNorm ln_options(nn::LayerNormOptions({8}).eps(1e-3).elementwise_affine(false));
  EXPECT_LT(max_diff(ln_positional(ln_x), ln_options(ln_x)), 1e-6);
  nn::BatchNorm1d bn1(nn::BatchNormOptions(8).track_running_stats(false));
  EXPECT_FALSE(bn1.running_mean.defined());
}

TEST(Options, OptimizerOptionsChainAndReadBack) {
  auto sgd = kiln::optim::SGDOptions(0.1).lr(0.2).momentum(0.9).nesterov(true);
  static_assert(
      std::is_same_v<decltype(kiln::optim::SGDOptions(0.1).lr(0.2)), kiln::optim::SGDOptions&>,
      "lr(v) on a derived options struct returns that struct, so chains go on");
  EXPECT_DOUBLE_EQ(sgd.lr(), 0.2);
  EXPECT_DOUBLE_EQ(sgd.momentum(), 0.9);
  EXPECT_TRUE(sgd.nesterov());
  auto adamw = kiln::optim::AdamWOptions().lr(0.01).betas({0.8, 0.9});
  EXPECT_DOUBLE_EQ(adamw.weight_decay(), 0.01) << "AdamW's default, as PyTorch";
  EXPECT_DOUBLE_EQ(adamw.betas().first, 0.8);
  auto rms = kiln::optim::RMSpropOptions().alpha(0.9).centered(true);
  EXPECT_DOUBLE_EQ(rms.alpha(), 0.9);
  EXPECT_TRUE(rms.centered());
  EXPECT_DOUBLE_EQ(rms.lr(), 1e-2);
}

TEST(Options, TheLearningRateSetByTheSetterIsTheOneUsed) {
  auto p = kiln::from_vector<double>({1.0}, {1}).requires_grad_();
  kiln::optim::SGD sgd({p}, kiln::optim::SGDOptions(1.0).lr(0.25));
  (p * 2).sum().backward();  // gradient 2
  sgd.step();
  EXPECT_DOUBLE_EQ(p.item<double>(), 1.0 - 0.25 * 2);
  EXPECT_DOUBLE_EQ(sgd.param_groups()[0].options->lr(), 0.25);
}

}  // namespace
