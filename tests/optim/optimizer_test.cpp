// Optimizers against their update equations computed here in double precision
// (PyTorch's formulas, as documented in each header), over several steps.

#include <gtest/gtest.h>

#include <kiln/kiln.h>
#include <kiln/optim.h>
#include <cmath>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "support/kiln_test.h"

namespace {

using namespace kiln;

// A parameter p and a fixed gradient function g(step, i) = (i + 1) * 0.1 * (-1)^step + 0.05 p.
std::vector<double> grad_of(const std::vector<double>& p, int step) {
  std::vector<double> g(p.size());
  for (size_t i = 0; i < p.size(); ++i)
    g[i] = (static_cast<double>(i) + 1) * 0.1 * (step % 2 ? -1 : 1) + 0.05 * p[i];
  return g;
}

// Runs `steps` optimizer steps on a float64 parameter with grad_of gradients.
template <typename Opt>
std::vector<double> run(Opt& opt, Tensor& p, int steps) {
  for (int s = 0; s < steps; ++s) {
    auto g = grad_of(p.to_vector<double>(), s);
    p.set_grad(from_vector<double>(g));
    opt.step();
  }
  return p.to_vector<double>();
}

void expect_near(const std::vector<double>& a, const std::vector<double>& b) {
  ASSERT_EQ(a.size(), b.size());
  for (size_t i = 0; i < a.size(); ++i) EXPECT_NEAR(a[i], b[i], 1e-12) << "element " << i;
}

const std::vector<double> kStart = {0.5, -1.0, 2.0};

TEST(Optimizers, SgdWithMomentumDampeningWeightDecayNesterov) {
  for (bool nesterov : {false, true}) {
    double lr = 0.1, mom = 0.9, damp = nesterov ? 0.0 : 0.1, wd = 0.01;
    auto p = from_vector<double>(kStart).requires_grad_();
    optim::SGDOptions o(lr);
    o.momentum(mom).dampening(damp).weight_decay(wd).nesterov(nesterov);
    optim::SGD opt(std::vector<Tensor>{p}, o);
    auto got = run(opt, p, 4);

    std::vector<double> q = kStart, buf(3);
    for (int s = 0; s < 4; ++s) {
      auto g = grad_of(q, s);
      for (int i = 0; i < 3; ++i) {
        double d = g[i] + wd * q[i];
        buf[i] = s == 0 ? d : mom * buf[i] + (1 - damp) * d;
        double step = nesterov ? d + mom * buf[i] : buf[i];
        q[i] -= lr * step;
      }
    }
    expect_near(got, q);
  }
}

TEST(Optimizers, PlainSgd) {
  auto p = from_vector<double>(kStart).requires_grad_();
  optim::SGD opt(std::vector<Tensor>{p}, optim::SGDOptions(0.5));
  auto got = run(opt, p, 2);
  std::vector<double> q = kStart;
  for (int s = 0; s < 2; ++s) {
    auto g = grad_of(q, s);
    for (int i = 0; i < 3; ++i) q[i] -= 0.5 * g[i];
  }
  expect_near(got, q);
}

void check_adam(bool decoupled) {
  double lr = 0.01, b1 = 0.8, b2 = 0.95, eps = 1e-6, wd = 0.1;
  auto p = from_vector<double>(kStart).requires_grad_();
  std::vector<double> got;
  if (decoupled) {
    optim::AdamWOptions o(lr);
    o.betas({b1, b2}).eps(eps).weight_decay(wd);
    optim::AdamW opt(std::vector<Tensor>{p}, o);
    got = run(opt, p, 5);
  } else {
    optim::AdamOptions o(lr);
    o.betas({b1, b2}).eps(eps).weight_decay(wd);
    optim::Adam opt(std::vector<Tensor>{p}, o);
    got = run(opt, p, 5);
  }
  std::vector<double> q = kStart, m(3, 0), v(3, 0);
  for (int s = 0; s < 5; ++s) {
    auto g = grad_of(q, s);
    int t = s + 1;
    for (int i = 0; i < 3; ++i) {
      double d = g[i];
      if (decoupled)
        q[i] *= 1 - lr * wd;
      else
        d += wd * q[i];
      m[i] = b1 * m[i] + (1 - b1) * d;
      v[i] = b2 * v[i] + (1 - b2) * d * d;
      double denom = std::sqrt(v[i]) / std::sqrt(1 - std::pow(b2, t)) + eps;
      q[i] -= lr / (1 - std::pow(b1, t)) * m[i] / denom;
    }
  }
  expect_near(got, q);
}

TEST(Optimizers, Adam) { check_adam(false); }
TEST(Optimizers, AdamW) { check_adam(true); }

// A complex parameter steps as in PyTorch: as its real and imaginary parts, each with
// its own state, so it stays equal to a real parameter holding those parts (Adam and
// SGD with momentum accepted complex parameters and then failed at step(); RMSprop
// squared the complex gradient). Its state round-trips.
TEST(Optimizers, ComplexParametersStepAsTheirParts) {
  using Make = std::function<std::unique_ptr<optim::Optimizer>(const Tensor&)>;
  const std::vector<std::pair<const char*, Make>> kinds = {
      {"Adam",
       [](const Tensor& p) {
         optim::AdamOptions o(0.1);
         o.weight_decay(0.05);
         return std::make_unique<optim::Adam>(std::vector<Tensor>{p}, o);
       }},
      {"AdamW",
       [](const Tensor& p) {
         return std::make_unique<optim::AdamW>(std::vector<Tensor>{p}, optim::AdamWOptions(0.1));
       }},
      {"SGD",
       [](const Tensor& p) {
         optim::SGDOptions o(0.1);
         o.momentum(0.9).weight_decay(0.05);
         return std::make_unique<optim::SGD>(std::vector<Tensor>{p}, o);
       }},
      {"RMSprop",
       [](const Tensor& p) {
         optim::RMSpropOptions o(0.01);
         o.momentum(0.5).centered(true).weight_decay(0.05);
         return std::make_unique<optim::RMSprop>(std::vector<Tensor>{p}, o);
       }},
  };
  for (const auto& [name, make] : kinds) {
    SCOPED_TRACE(name);
    const Tensor start = from_vector<double>({0.5, -1.0, 2.0, 0.25}, {2, 2});
    Tensor z = view_as_complex(start.clone()).requires_grad_();
    Tensor r = start.clone().requires_grad_();
    auto oz = make(z), orr = make(r);
    for (int step = 0; step < 3; ++step) {
      const Tensor w = from_vector<double>({1.0 + step, -2.0, 0.5, 3.0 - step}, {2, 2});
      oz->zero_grad();
      orr->zero_grad();
      (view_as_real(z) * w).sum().backward();
      (r * w).sum().backward();
      oz->step();
      orr->step();
    }
    EXPECT_EQ(view_as_real(z).detach().to_vector<double>(), r.detach().to_vector<double>());
    EXPECT_NE(r.detach().to_vector<double>(), start.to_vector<double>());
    auto again = make(view_as_complex(start.clone()).requires_grad_());
    EXPECT_NO_THROW(again->load_state_dict(oz->state_dict()));
  }
}

TEST(Optimizers, RmspropCenteredWithMomentum) {
  double lr = 0.01, alpha = 0.9, eps = 1e-8, wd = 0.05, mom = 0.5;
  auto p = from_vector<double>(kStart).requires_grad_();
  optim::RMSpropOptions o(lr);
  o.alpha(alpha).eps(eps).weight_decay(wd).momentum(mom).centered(true);
  optim::RMSprop opt(std::vector<Tensor>{p}, o);
  auto got = run(opt, p, 3);
  std::vector<double> q = kStart, sq(3, 0), ga(3, 0), buf(3, 0);
  for (int s = 0; s < 3; ++s) {
    auto g = grad_of(q, s);
    for (int i = 0; i < 3; ++i) {
      double d = g[i] + wd * q[i];
      sq[i] = alpha * sq[i] + (1 - alpha) * d * d;
      ga[i] = alpha * ga[i] + (1 - alpha) * d;
      double avg = std::sqrt(sq[i] - ga[i] * ga[i]) + eps;
      buf[i] = mom * buf[i] + d / avg;
      q[i] -= lr * buf[i];
    }
  }
  expect_near(got, q);
}

TEST(Optimizers, ParamGroupsHaveTheirOwnOptions) {
  auto a = from_vector<double>({1.0}).requires_grad_();
  auto b = from_vector<double>({1.0}).requires_grad_();
  std::vector<optim::ParamGroup> groups(2);
  groups[0].params = {a};
  groups[1].params = {b};
  groups[1].options = std::make_unique<optim::SGDOptions>(1.0);
  optim::SGD opt(std::move(groups), optim::SGDOptions(0.1));
  a.set_grad(from_vector<double>({1.0}));
  b.set_grad(from_vector<double>({1.0}));
  opt.step();
  EXPECT_DOUBLE_EQ(a.item<double>(), 0.9);
  EXPECT_DOUBLE_EQ(b.item<double>(), 0.0);
}

TEST(Optimizers, StateDictRoundTripContinuesIdentically) {
  auto make = [] { return from_vector<double>(kStart).requires_grad_(); };
  auto p1 = make(), p2 = make();
  optim::Adam a1(std::vector<Tensor>{p1}, optim::AdamOptions(0.05));
  run(a1, p1, 3);
  // Copy the parameter and the optimizer state into a fresh pair.
  {
    NoGradGuard g;
    p2.copy_(p1);
  }
  optim::Adam a2(std::vector<Tensor>{p2}, optim::AdamOptions(0.05));
  a2.load_state_dict(a1.state_dict());
  for (int s = 3; s < 6; ++s) {
    auto g = grad_of(p1.to_vector<double>(), s);
    p1.set_grad(from_vector<double>(g));
    p2.set_grad(from_vector<double>(g));
    a1.step();
    a2.step();
  }
  EXPECT_EQ(p1.to_vector<double>(), p2.to_vector<double>());
}

TEST(Optimizers, BadInput) {
  EXPECT_THROW(optim::SGD(std::vector<Tensor>{}, optim::SGDOptions(0.1)), Error);  // no parameters
  auto p = from_vector<double>({1.0}).requires_grad_();
  EXPECT_THROW(optim::SGD(std::vector<Tensor>{p, p}, optim::SGDOptions(0.1)), Error);
  optim::AdamOptions bad;
  bad.betas({1.0, 0.9});
  EXPECT_THROW(optim::Adam(std::vector<Tensor>{p}, bad), Error);
  optim::Adam opt(std::vector<Tensor>{p});
  nn::StateDict wrong = {{"state.0.exp_avg", zeros({2}, float64)}};
  EXPECT_THROW(opt.load_state_dict(wrong), Error);
  EXPECT_THROW(opt.load_state_dict({{"nonsense", zeros({1})}}), Error);
  // Malformed indices are kiln::Errors too, not std::invalid_argument escaping.
  EXPECT_THROW(opt.load_state_dict({{"state.x.exp_avg", zeros({1})}}), Error);
  EXPECT_THROW(opt.load_state_dict({{"param_groups..lr", zeros({})}}), Error);
  const Tensor lr = scalar_tensor(0.1, DType::Float64);
  EXPECT_THROW(opt.load_state_dict({{"param_groups.00.lr", lr}}), Error);  // not as saved
  EXPECT_THROW(opt.load_state_dict({{"param_groups.0.lr", lr}, {"state.01.step", full({}, 1.0)}}),
               Error);
  EXPECT_THROW(opt.load_state_dict({{"param_groups.1.lr", lr}}), Error);  // one group only
  EXPECT_THROW(opt.load_state_dict({{"param_groups.0.lr", lr}, {"state.1.step", full({}, 1.0)}}),
               Error);  // one parameter only
  EXPECT_THROW(opt.load_state_dict({{"param_groups.0.lr", lr}, {"param_groups.0.lr", lr}}), Error);
  EXPECT_THROW(opt.load_state_dict({{"state.0.step", full({}, 1.0)}}), Error);  // no lr
  // A step count that is no count (a hostile checkpoint): refused, not converted.
  auto message = [&](const Tensor& step) {
    try {
      opt.load_state_dict({{"state.0.step", step}});
    } catch (const Error& e) {
      return std::string(e.what());
    }
    return std::string("(accepted)");
  };
  for (double step : {1e30, -1.0, 2.5, std::nan("")})
    EXPECT_NE(message(full({}, step)).find("step count"), std::string::npos) << step;
  // state_dict() writes 0-d counts and rates: a [1] or [1, 1] tensor is no such value.
  EXPECT_NE(message(zeros({2})).find("0-d tensor"), std::string::npos);
  EXPECT_NE(message(ones({1})).find("the step count must be a 0-d tensor, got shape [1]"),
            std::string::npos);
  EXPECT_KILN_ERROR(opt.load_state_dict({{"param_groups.0.lr", full({1, 1}, 0.1)}}),
                    "a learning rate must be a 0-d tensor, got shape [1, 1]");
  opt.load_state_dict(
      {{"param_groups.0.lr", lr}, {"state.0.step", full({}, 7.0)}});  // a whole float
}

TEST(Optimizers, LoadStateDictReplacesTheStateItDoesNotHold) {
  // An older checkpoint, saved before any step, into an optimizer that has stepped: its
  // moments and step counts go, and the next steps are a fresh optimizer's.
  auto make = [] { return from_vector<double>(kStart).requires_grad_(); };
  auto p = make(), fresh_p = make();
  optim::Adam opt(std::vector<Tensor>{p}, optim::AdamOptions(0.05));
  const nn::StateDict older = opt.state_dict();
  run(opt, p, 3);
  ASSERT_GT(opt.state_dict().size(), older.size());
  {
    NoGradGuard g;
    p.copy_(fresh_p);
  }
  opt.load_state_dict(older);
  const nn::StateDict now = opt.state_dict();
  ASSERT_EQ(now.size(), 1u);
  EXPECT_EQ(now[0].first, "param_groups.0.lr");
  optim::Adam fresh(std::vector<Tensor>{fresh_p}, optim::AdamOptions(0.05));
  expect_near(run(opt, p, 2), run(fresh, fresh_p, 2));
}

TEST(Optimizers, ZeroGradAndParametersWithoutGradients) {
  auto p = from_vector<double>({1.0}).requires_grad_();
  optim::SGD opt(std::vector<Tensor>{p}, optim::SGDOptions(0.1));
  opt.step();  // no gradient: nothing happens
  EXPECT_DOUBLE_EQ(p.item<double>(), 1.0);
  p.set_grad(from_vector<double>({1.0}));
  opt.zero_grad(false);
  EXPECT_DOUBLE_EQ(p.grad().item<double>(), 0.0);
  opt.zero_grad();
  EXPECT_FALSE(p.grad().defined());
}

const auto error_of = test::kiln_error_message;

std::vector<Tensor> one_parameter() { return {from_vector<double>({1.0, 2.0}).requires_grad_()}; }

// Every option is checked when an optimizer is made, or a group added, naming the option
// and its value: the rules a checkpoint's values meet too (issue 28).
TEST(Optimizers, ConstructorsRefuseBadOptionsNamingThem) {
  const double nan = std::nan(""), inf = HUGE_VAL;
  using optim::AdamOptions, optim::AdamWOptions, optim::RMSpropOptions, optim::SGDOptions;
  const std::vector<std::pair<std::function<void()>, std::string>> cases = {
      {[] { optim::SGD o(one_parameter(), SGDOptions(-1)); },
       "SGD: the learning rate must be finite and non-negative, got -1"},
      {[&] { optim::SGD o(one_parameter(), SGDOptions(inf)); }, "non-negative, got inf"},
      {[&] { optim::Adam o(one_parameter(), AdamOptions(nan)); },
       "Adam: the learning rate must be finite and non-negative, got nan"},
      {[] { optim::SGD o(one_parameter(), SGDOptions(0.1).momentum(-0.5)); },
       "SGD: momentum must be finite and non-negative, got -0.5"},
      {[&] { optim::SGD o(one_parameter(), SGDOptions(0.1).momentum(inf)); },
       "SGD: momentum must be finite and non-negative, got inf"},
      {[&] { optim::SGD o(one_parameter(), SGDOptions(0.1).weight_decay(nan)); },
       "SGD: weight_decay must be finite and non-negative, got nan"},
      {[&] { optim::SGD o(one_parameter(), SGDOptions(0.1).dampening(inf)); },
       "SGD: dampening must be finite, got inf"},
      {[] {
         optim::Adam o(one_parameter(), AdamOptions().betas({0.9, 1.0}));
       },
       "Adam: betas must be in [0, 1), got (0.9, 1)"},
      {[] {
         optim::AdamW o(one_parameter(), AdamWOptions().betas({-0.1, 0.9}));
       },
       "AdamW: betas must be in [0, 1), got (-0.1, 0.9)"},
      {[&] {
         optim::Adam o(one_parameter(), AdamOptions().betas({nan, 0.9}));
       },
       "Adam: betas must be in [0, 1), got (nan, 0.9)"},
      {[] { optim::Adam o(one_parameter(), AdamOptions().eps(-1e-8)); },
       "Adam: eps must be finite and non-negative, got -1e-08"},
      {[&] { optim::AdamW o(one_parameter(), AdamWOptions().weight_decay(inf)); },
       "AdamW: weight_decay must be finite and non-negative, got inf"},
      {[] { optim::RMSprop o(one_parameter(), RMSpropOptions().alpha(1.5)); },
       "RMSprop: alpha must be in [0, 1], got 1.5"},
      {[&] { optim::RMSprop o(one_parameter(), RMSpropOptions().eps(nan)); },
       "RMSprop: eps must be finite and non-negative, got nan"},
      {[] { optim::RMSprop o(one_parameter(), RMSpropOptions().momentum(-1)); },
       "RMSprop: momentum must be finite and non-negative, got -1"},
      {[&] { optim::RMSprop o(one_parameter(), RMSpropOptions().weight_decay(inf)); },
       "RMSprop: weight_decay must be finite and non-negative, got inf"},
  };
  for (const auto& [make, expected] : cases) {
    const std::string message = error_of(make);
    EXPECT_NE(message.find(expected), std::string::npos) << message;
  }
}

// A group's own options are checked as the defaults are, also when it is added later,
// and a refused group is not added.
TEST(Optimizers, GroupOptionsAreCheckedToo) {
  std::vector<optim::ParamGroup> groups(1);
  groups[0].params = one_parameter();
  groups[0].options = std::make_unique<optim::AdamOptions>(-1);
  EXPECT_NE(error_of([&] {
              optim::Adam o(std::move(groups), optim::AdamOptions());
            }).find("Adam: the learning rate must be finite and non-negative, got -1"),
            std::string::npos);
  optim::Adam opt(one_parameter());
  auto group = [](std::unique_ptr<optim::OptimizerOptions> options) {
    optim::ParamGroup g;
    g.params = one_parameter();
    g.options = std::move(options);
    return g;
  };
  std::string message = error_of([&] {
    opt.add_param_group(group(std::make_unique<optim::AdamOptions>(optim::AdamOptions().eps(-1))));
  });
  EXPECT_NE(message.find("Adam: eps must be finite and non-negative, got -1"), std::string::npos)
      << message;
  message = error_of([&] { opt.add_param_group(group(std::make_unique<optim::SGDOptions>(0.1))); });
  EXPECT_NE(message.find("Adam: a parameter group's options are not AdamOptions"),
            std::string::npos)
      << message;
  EXPECT_EQ(opt.param_groups().size(), 1u);
}

// What a checkpoint restores is checked as the options are: each refusal names the key
// and the value, and changes nothing (issue 28: a learning rate of -1 trained silently).
TEST(Optimizers, LoadStateDictRefusesBadValuesNamingTheKey) {
  const double nan = std::nan(""), inf = HUGE_VAL;
  auto p = from_vector<double>({1.0, 2.0}).requires_grad_();
  optim::Adam adam(std::vector<Tensor>{p}, optim::AdamOptions(0.05));
  run(adam, p, 1);  // some state to keep
  const std::vector<double> moment = adam.state_dict().back().second.to_vector<double>();
  const Tensor lr = scalar_tensor(0.05, DType::Float64);
  const auto two = [](double a, double b) { return from_vector<double>({a, b}); };
  const std::vector<std::pair<nn::StateDict, std::string>> cases = {
      {{{"param_groups.0.lr", scalar_tensor(-1e-300, DType::Float64)}},
       "key 'param_groups.0.lr': a learning rate must be finite and non-negative, got -1e-300"},
      {{{"param_groups.0.lr", scalar_tensor(inf, DType::Float64)}}, "non-negative, got inf"},
      {{{"param_groups.0.lr", zeros({}, complex64)}},
       "key 'param_groups.0.lr': a learning rate must be a real number, not complex64"},
      {{{"param_groups.0.lr", lr}, {"state.0.step", full({}, -3.0)}},
       "key 'state.0.step': the step count must be a whole number in [0, 9e15], got -3"},
      {{{"param_groups.0.lr", lr}, {"state.0.step", zeros({}, complex64)}},
       "key 'state.0.step': the step count must be a real number, not complex64"},
      {{{"param_groups.0.lr", lr}, {"state.0.exp_avg_sq", two(-1.0, 0.5)}},
       "key 'state.0.exp_avg_sq': holds -1, but it is a running mean of squares"},
      {{{"param_groups.0.lr", lr}, {"state.0.exp_avg", two(nan, 0.0)}},
       "key 'state.0.exp_avg': holds a NaN or infinite value"},
      {{{"param_groups.0.lr", lr}, {"state.0.exp_avg_sq", two(inf, 0.0)}},
       "key 'state.0.exp_avg_sq': holds a NaN or infinite value"},
      {{{"param_groups.0.lr", lr}, {"state.0.exp_avgg", two(0.0, 0.0)}},
       "key 'state.0.exp_avgg': not a state Adam keeps (it keeps 'step', 'exp_avg', "
       "'exp_avg_sq')"},
      {{{"param_groups.0.lr", lr}, {"state.0.exp_avg", zeros({2}, int64)}},
       "key 'state.0.exp_avg': dtype int64 cannot hold the state of a float64 parameter"},
      {{{"param_groups.0.lr", lr}, {"state.0.exp_avg", zeros({2}, complex64)}},
       "key 'state.0.exp_avg': dtype complex64 cannot hold the state of a float64 parameter"},
      {{{"param_groups.0.lr", lr}, {"state.0.exp_avg", zeros({3}, float64)}},
       "key 'state.0.exp_avg': shape [3] does not match the parameter's [2]"},
  };
  for (const auto& c : cases) {
    const auto& dict = c.first;  // not a binding: clang 14 cannot capture one
    const auto& expected = c.second;
    std::string message = error_of([&] { adam.load_state_dict(dict); });
    EXPECT_NE(message.find(expected), std::string::npos) << message;
    EXPECT_EQ(error_of([&] { adam.check_state_dict(dict); }), message);
    EXPECT_EQ(adam.param_groups()[0].options->lr(), 0.05);
    EXPECT_EQ(adam.state_dict().back().second.to_vector<double>(), moment);
  }

  // Each algorithm names the state it keeps; only means of squares must be non-negative.
  optim::SGD sgd(one_parameter(), optim::SGDOptions(0.1).momentum(0.9));
  std::string message = error_of([&] {
    sgd.load_state_dict({{"param_groups.0.lr", lr}, {"state.0.exp_avg", two(0, 0)}});
  });
  EXPECT_NE(message.find("key 'state.0.exp_avg': not a state SGD keeps (it keeps 'step', "
                         "'momentum_buffer')"),
            std::string::npos)
      << message;
  message = error_of([&] {
    sgd.load_state_dict({{"param_groups.0.lr", lr}, {"state.0.momentum_buffer", two(0, nan)}});
  });
  EXPECT_NE(message.find("key 'state.0.momentum_buffer': holds a NaN"), std::string::npos)
      << message;
  sgd.load_state_dict({{"param_groups.0.lr", lr}, {"state.0.momentum_buffer", two(-1, 2)}});
  optim::RMSprop rms(one_parameter(), optim::RMSpropOptions().centered(true));
  message = error_of([&] {
    rms.load_state_dict({{"param_groups.0.lr", lr}, {"state.0.square_avg", two(0, -2)}});
  });
  EXPECT_NE(message.find("key 'state.0.square_avg': holds -2, but it is a running mean"),
            std::string::npos)
      << message;
  rms.load_state_dict({{"param_groups.0.lr", lr},
                       {"state.0.square_avg", two(1, 2)},
                       {"state.0.grad_avg", two(-1, 0.5)}});
}

TEST(ClipGradNorm, ScalesToTheMaximumNorm) {
  auto a = from_vector<double>({0.0, 0.0}).requires_grad_();
  auto b = from_vector<double>({0.0}).requires_grad_();
  a.set_grad(from_vector<double>({3.0, 0.0}));
  b.set_grad(from_vector<double>({4.0}));
  auto norm = optim::clip_grad_norm_({a, b}, 1.0);
  EXPECT_NEAR(norm.item<double>(), 5.0, 1e-12);
  EXPECT_NEAR(a.grad().to_vector<double>()[0], 3.0 / (5.0 + 1e-6), 1e-9);
  EXPECT_NEAR(b.grad().item<double>(), 4.0 / (5.0 + 1e-6), 1e-9);
  // Under the limit nothing changes.
  optim::clip_grad_norm_({a, b}, 10.0);
  EXPECT_NEAR(b.grad().item<double>(), 4.0 / (5.0 + 1e-6), 1e-9);
}

}  // namespace
