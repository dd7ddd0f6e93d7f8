// Learning-rate schedules against their closed forms.

#include <gtest/gtest.h>

#include <kiln/kiln.h>
#include <kiln/optim.h>
#include <cmath>
#include <functional>
#include <numbers>
#include <string>

#include "support/kiln_test.h"

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

const auto error_of = test::kiln_error_message;

// Settings that would make a rate negative or not finite are refused, naming the
// setting and its value (issue 28).
TEST(Schedulers, SettingsThatMakeBadRatesAreRefused) {
  Fixture f;
  const double nan = std::nan(""), inf = HUGE_VAL;
  const std::vector<std::pair<std::function<void()>, std::string>> cases = {
      {[&] { optim::StepLR s(f.opt, 2, -0.5); },
       "StepLR: gamma must be finite and non-negative, got -0.5"},
      {[&] { optim::StepLR s(f.opt, 2, nan); }, "gamma must be finite and non-negative, got nan"},
      {[&] { optim::CosineAnnealingLR s(f.opt, 10, -0.01); },
       "CosineAnnealingLR: eta_min must be finite and non-negative, got -0.01"},
      {[&] { optim::CosineAnnealingLR s(f.opt, 10, inf); }, "non-negative, got inf"},
      {[&] { optim::OneCycleLR s(f.opt, inf, 100); }, "a finite max_lr > 0, got 100, 0.3 and inf"},
      {[&] { optim::OneCycleLR s(f.opt, 1.0, 100, 0.3, 0.0); },
       "OneCycleLR: div_factor and final_div_factor must be finite and positive, got 0 and 10000"},
      {[&] { optim::OneCycleLR s(f.opt, 1.0, 100, 0.3, 25, nan); },
       "must be finite and positive, got 25 and nan"},
  };
  for (const auto& [make, expected] : cases) {
    const std::string message = error_of(make);
    EXPECT_NE(message.find(expected), std::string::npos) << message;
  }
  EXPECT_EQ(f.lr(), 0.1);
}

TEST(Schedulers, StateDictResumesTheScheduleExactly) {
  Fixture a;
  optim::CosineAnnealingLR first(a.opt, 10, 0.01);
  for (int i = 0; i < 4; ++i) first.step();
  const nn::StateDict saved = first.state_dict();
  ASSERT_EQ(saved.size(), 2u);
  EXPECT_EQ(saved[0].first, "last_step");
  EXPECT_EQ(saved[0].second.item<int64_t>(), 4);
  EXPECT_EQ(saved[1].second.to_vector<double>(), std::vector<double>{0.1});

  // A fresh optimizer (another base rate) and schedule, restored: the same rates follow.
  Fixture b;
  b.opt.param_groups()[0].options->lr(0.7);
  optim::CosineAnnealingLR second(b.opt, 10, 0.01);
  second.load_state_dict(saved);
  EXPECT_EQ(b.lr(), a.lr());
  for (int i = 0; i < 3; ++i) {
    first.step();
    second.step();
    EXPECT_EQ(b.lr(), a.lr()) << "step " << i;
  }
}

TEST(Schedulers, LoadStateDictRefusesBadEntriesAndChangesNothing) {
  Fixture f;
  optim::StepLR s(f.opt, 2, 0.5);
  s.step();
  const double before = f.lr();
  auto dict = [](Tensor step, Tensor lrs) {
    return nn::StateDict{{"last_step", std::move(step)}, {"base_lrs", std::move(lrs)}};
  };
  const Tensor ok_step = scalar_tensor(3, DType::Int64), ok_lrs = from_vector<double>({0.1});
  const std::vector<std::pair<nn::StateDict, std::string>> cases = {
      {dict(scalar_tensor(-1, DType::Int64), ok_lrs), "whole number in [0, 9e15], got -1"},
      {dict(scalar_tensor(2.5), ok_lrs), "got 2.5"},
      {dict(zeros({}, complex64), ok_lrs), "key 'last_step': expected real numbers, got complex64"},
      {dict(full({1}, 3.0), ok_lrs), "key 'last_step': expected a 0-d tensor, got shape [1]"},
      {dict(ok_step, from_vector<double>({-1.0})), "finite and non-negative, got -1"},
      {dict(ok_step, from_vector<double>({std::nan("")})), "finite and non-negative, got nan"},
      {dict(ok_step, from_vector<double>({0.1, 0.2})), "2 base rates for an optimizer with 1"},
      {{{"last_step", ok_step}}, "lacks 'base_lrs'"},
      {{{"last_step", ok_step}, {"base_lrs", ok_lrs}, {"gamma", ok_lrs}}, "unknown key 'gamma'"},
  };
  for (const auto& c : cases) {
    const auto& d = c.first;  // not a binding: clang 14 cannot capture one
    const auto& expected = c.second;
    const std::string message = error_of([&] { s.load_state_dict(d); });
    EXPECT_NE(message.find(expected), std::string::npos) << message;
    EXPECT_EQ(s.last_step(), 1);
    EXPECT_EQ(f.lr(), before);
  }
}

TEST(Schedulers, OptimizerLoadStateDictRefusesABadLearningRate) {
  Fixture f;
  for (double bad : {-1.0, std::nan(""), HUGE_VAL}) {
    nn::StateDict d = {{"param_groups.0.lr", scalar_tensor(bad, DType::Float64)}};
    const std::string message = error_of([&] { f.opt.load_state_dict(d); });
    EXPECT_NE(message.find("key 'param_groups.0.lr': a learning rate must be finite and "
                           "non-negative"),
              std::string::npos)
        << message;
    EXPECT_EQ(f.lr(), 0.1);
  }
}

}  // namespace
