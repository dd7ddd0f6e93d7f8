// Learning-rate schedules against their closed forms.

#include <gtest/gtest.h>

#include <kiln/kiln.h>
#include <kiln/optim.h>
#include <cmath>
#include <numbers>

namespace {

using namespace kiln;

struct Fixture {
  Tensor p = from_vector<double>({1.0}).requires_grad_();
  optim::SGD opt{std::vector<Tensor>{p}, optim::SGDOptions(0.1)};
  double lr() { return opt.param_groups()[0].options->lr(); }
};

TEST(Schedulers, StepLR) {
  Fixture f;
  optim::StepLR s(f.opt, 2, 0.5);
  std::vector<double> seen;
  for (int i = 0; i < 5; ++i) {
    s.step();
    seen.push_back(f.lr());
  }
  std::vector<double> expected = {0.1, 0.05, 0.05, 0.025, 0.025};
  for (size_t i = 0; i < seen.size(); ++i) EXPECT_NEAR(seen[i], expected[i], 1e-15);
}

TEST(Schedulers, CosineAnnealing) {
  Fixture f;
  optim::CosineAnnealingLR s(f.opt, 10, 0.001);
  for (int t = 1; t <= 10; ++t) {
    s.step();
    double expected = 0.001 + (0.1 - 0.001) * (1 + std::cos(std::numbers::pi * t / 10)) / 2;
    EXPECT_NEAR(f.lr(), expected, 1e-15);
  }
  EXPECT_NEAR(f.lr(), 0.001, 1e-15);
}

TEST(Schedulers, LinearWarmup) {
  Fixture f;
  optim::LinearLR s(f.opt, 0.25, 1.0, 4);
  EXPECT_NEAR(f.lr(), 0.025, 1e-15);
  for (int i = 0; i < 4; ++i) s.step();
  EXPECT_NEAR(f.lr(), 0.1, 1e-15);
  s.step();
  EXPECT_NEAR(f.lr(), 0.1, 1e-15);
}

TEST(Schedulers, OneCycle) {
  Fixture f;
  optim::OneCycleLR s(f.opt, 1.0, 100, 0.3, 25, 1e4);
  EXPECT_NEAR(f.lr(), 1.0 / 25, 1e-12);
  double peak = 0;
  for (int i = 1; i < 100; ++i) {
    s.step();
    peak = std::max(peak, f.lr());
  }
  EXPECT_NEAR(peak, 1.0, 1e-12);
  EXPECT_NEAR(f.lr(), 1.0 / 25 / 1e4, 1e-12);
}

TEST(Schedulers, SetStepRestoresTheRate) {
  Fixture a, b;
  optim::CosineAnnealingLR sa(a.opt, 10), sb(b.opt, 10);
  for (int i = 0; i < 3; ++i) sa.step();
  sb.set_step(3);
  EXPECT_DOUBLE_EQ(a.lr(), b.lr());
}

TEST(Schedulers, BadArguments) {
  Fixture f;
  EXPECT_THROW(optim::StepLR(f.opt, 0), Error);
  EXPECT_THROW(optim::CosineAnnealingLR(f.opt, 0), Error);
  EXPECT_THROW(optim::OneCycleLR(f.opt, 1.0, 1), Error);
}

}  // namespace
