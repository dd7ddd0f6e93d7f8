// Mixed precision (kiln/amp.h): autocast's per-op dtypes, gradients through its casts,
// its parameter cache, GradScaler's skip/backoff/growth rule and its state, and
// training in bfloat16 parameters on the CPU plugin.

#include <gtest/gtest.h>

#include <kiln/kiln.h>
#include <cmath>
#include <limits>
#include <vector>

#include "support/kiln_test.h"

namespace {

using namespace kiln;
namespace F = kiln::nn::functional;

TEST(Autocast, EachListedOpRunsInThePromisedDtype) {
  const Tensor a = randn({4, 8}), b = randn({8, 3}), img = randn({2, 3, 6, 6}),
               w = randn({4, 3, 3, 3}), lw = randn({3, 8}), lb = randn({3});
  const Tensor half = randn({4, 8}).to(bfloat16);
  {
    autocast scope("cpu", bfloat16);
    EXPECT_TRUE(is_autocast_enabled("cpu"));
    EXPECT_FALSE(is_autocast_enabled("cuda"));
    // lower: to the scope's dtype
    EXPECT_EQ(matmul(a, b).dtype(), bfloat16);
    EXPECT_EQ(F::linear(a, lw, lb).dtype(), bfloat16);
    EXPECT_EQ(F::conv2d(img, w, {}, 1, 1).dtype(), bfloat16);
    EXPECT_EQ(matmul(a.to(float16), b).dtype(), bfloat16);  // the other half type too
    // float32: half inputs widen
    EXPECT_EQ(exp(half).dtype(), float32);
    EXPECT_EQ(log(half.abs() + 1).dtype(), float32);
    EXPECT_EQ(pow(half, 2.0).dtype(), float32);
    EXPECT_EQ(rsqrt(half.abs() + 1).dtype(), float32);
    EXPECT_EQ(half.sum().dtype(), float32);
    EXPECT_EQ(half.prod({1}).dtype(), float32);
    EXPECT_EQ(half.var({1}).dtype(), float32);
    EXPECT_EQ(F::batch_norm(half.reshape({4, 2, 4}), zeros({2}), ones({2}), {}, {}, true).dtype(),
              float32);
    EXPECT_EQ(
        F::nll_loss(F::log_softmax(a, 1).to(bfloat16), from_vector<int64_t>({0, 1, 2, 0})).dtype(),
        float32);
    EXPECT_EQ(F::softmax(half, 1).dtype(), float32);
    EXPECT_EQ(F::log_softmax(half, 1).dtype(), float32);
    EXPECT_EQ(F::layer_norm(half, {8}).dtype(), float32);
    EXPECT_EQ(F::cross_entropy(matmul(a, b), from_vector<int64_t>({0, 1, 2, 0})).dtype(), float32);
    // no policy: the inputs' dtypes, promoting as usual
    EXPECT_EQ(relu(half).dtype(), bfloat16);
    EXPECT_EQ((half + a).dtype(), float32);
    // never cast: float64 and integers
    EXPECT_EQ(matmul(a.to(float64), b.to(float64)).dtype(), float64);
    EXPECT_EQ(arange(0, 4).to(int64).sum().dtype(), int64);
    {
      autocast off("cpu", bfloat16, /*enabled=*/false);
      EXPECT_FALSE(is_autocast_enabled("cpu"));
      EXPECT_EQ(matmul(a, b).dtype(), float32);
    }
    EXPECT_EQ(matmul(a, b).dtype(), bfloat16);  // the outer scope is back
    {
      autocast other("cuda", float16);  // another backend's scope leaves cpu tensors alone
      EXPECT_EQ(matmul(a, b).dtype(), bfloat16);
    }
  }
  EXPECT_FALSE(is_autocast_enabled("cpu"));
  EXPECT_EQ(matmul(a, b).dtype(), float32);
  EXPECT_EQ(exp(half).dtype(), bfloat16);
  EXPECT_THROW(autocast("cpu", float32), Error);
  // A backend name nothing answers to is a typo, as in torch.autocast.
  EXPECT_KILN_ERROR(autocast("cdua", bfloat16), "no loaded backend is named 'cdua'");
  EXPECT_FALSE(is_autocast_enabled("cdua"));
}

TEST(Autocast, ResultsMatchFloat32WithinBFloat16Rounding) {
  const Tensor a = randn({16, 32}), b = randn({32, 8});
  const Tensor exact = matmul(a.to(float64), b.to(float64));
  Tensor low;
  {
    autocast scope("cpu", bfloat16);
    low = matmul(a, b);
  }
  // Inputs rounded to 8 significant bits (2^-9 relative each), sums of 32 products
  // accumulated in float32, the result rounded once more.
  const double err = (low.to(float64) - exact).abs().max().item<double>();
  const double scale = exact.abs().max().item<double>();
  EXPECT_LT(err, 0.02 * scale) << err << " vs " << scale;
  EXPECT_GT(err, 0.0);  // it did run in bfloat16
}

TEST(Autocast, GradientsFlowBackThroughTheCastsToFloat32Parameters) {
  auto layer = std::make_shared<nn::Linear>(8, 3);
  const Tensor x = randn({5, 8});
  Tensor loss;
  {
    autocast scope("cpu", bfloat16);
    loss = F::log_softmax(layer->forward(x), 1).sum();
  }
  EXPECT_EQ(loss.dtype(), float32);
  loss.backward();
  const Tensor gw = layer->weight.grad(), gb = layer->bias.grad();
  ASSERT_TRUE(gw.defined() && gb.defined());
  EXPECT_EQ(gw.dtype(), float32);
  EXPECT_EQ(gb.dtype(), float32);
  // The same gradient in float64, without autocast.
  Tensor w64 = layer->weight.detach().to(float64).requires_grad_(),
         b64 = layer->bias.detach().to(float64).requires_grad_();
  F::log_softmax(F::linear(x.to(float64), w64, b64), 1).sum().backward();
  const double err = (gw.to(float64) - w64.grad()).abs().max().item<double>();
  EXPECT_LT(err, 0.05 * (w64.grad().abs().max().item<double>() + 1)) << err;
}

TEST(Autocast, AParameterChangedInPlaceIsCastAgain) {
  const Tensor x = ones({2, 4});
  Tensor w = ones({4, 3}).requires_grad_();
  autocast scope("cpu", bfloat16);
  const Tensor first = matmul(x, w);
  {
    NoGradGuard no_grad;
    w.mul_(2);  // the cached cast is stale now
  }
  const Tensor second = matmul(x, w);
  EXPECT_EQ(first.to(float64).max().item<double>(), 4.0);
  EXPECT_EQ(second.to(float64).max().item<double>(), 8.0);
}

TEST(Autocast, ACastMadeUnderNoGradIsNotReusedForTraining) {
  const Tensor x = ones({2, 4});
  Tensor w = ones({4, 3}).requires_grad_();
  autocast scope("cpu", bfloat16);
  {
    NoGradGuard no_grad;  // e.g. an evaluation inside the same scope
    matmul(x, w);
  }
  matmul(x, w).to(float32).sum().backward();
  ASSERT_TRUE(w.grad().defined());
  EXPECT_EQ(w.grad().to_vector<float>(), std::vector<float>(12, 2.0f));
}

TEST(Autocast, TheBackwardPassRunsWithoutAutocast) {
  Tensor w = randn({4, 4}).requires_grad_();
  autocast scope("cpu", bfloat16);
  Tensor y = matmul(randn({2, 4}), w).to(float32).sum();
  y.backward();  // inside the scope: the gradient's matmul must not be cast again
  EXPECT_EQ(w.grad().dtype(), float32);
}

TEST(GradScaler, SkipsAStepWithAnInfGradientBacksOffAndGrowsAgain) {
  Tensor p = from_vector<float>({1.0f, 2.0f}).requires_grad_();
  optim::SGD sgd(std::vector<Tensor>{p}, optim::SGDOptions(1.0));
  amp::GradScaler scaler(amp::GradScalerOptions{.init_scale = 4.0, .growth_interval = 2});
  auto iteration = [&](const Tensor& factor) {
    sgd.zero_grad();
    scaler.scale((p * factor).sum()).backward();
    const bool stepped = scaler.step(sgd);
    scaler.update();
    return stepped;
  };
  const double inf = std::numeric_limits<double>::infinity();
  // Clean: the gradient (factor) reaches the optimizer unscaled.
  EXPECT_TRUE(iteration(from_vector<float>({0.5f, 0.25f})));
  EXPECT_EQ(p.to_vector<float>(), (std::vector<float>{0.5f, 1.75f}));
  EXPECT_EQ(scaler.get_scale(), 4.0);
  EXPECT_EQ(scaler.growth_tracker(), 1);
  // An inf gradient: no step, the scale halves, the clean run starts over.
  EXPECT_FALSE(iteration(from_vector<double>({1.0, inf}).to(float32)));
  EXPECT_EQ(p.to_vector<float>(), (std::vector<float>{0.5f, 1.75f}));
  EXPECT_EQ(scaler.get_scale(), 2.0);
  EXPECT_EQ(scaler.growth_tracker(), 0);
  // A NaN gradient likewise.
  EXPECT_FALSE(iteration(from_vector<double>({std::nan(""), 1.0}).to(float32)));
  EXPECT_EQ(scaler.get_scale(), 1.0);
  // growth_interval clean steps double it.
  EXPECT_TRUE(iteration(from_vector<float>({0.5f, 0.5f})));
  EXPECT_EQ(scaler.get_scale(), 1.0);
  EXPECT_TRUE(iteration(from_vector<float>({0.5f, 0.5f})));
  EXPECT_EQ(scaler.get_scale(), 2.0);
  EXPECT_EQ(p.to_vector<float>(), (std::vector<float>{-0.5f, 0.75f}));
}

TEST(GradScaler, UnscalesManyGradientsAndRefusesMisuse) {
  // 9 parameters: two kernel calls of up to 7 gradients share one flag.
  std::vector<Tensor> params;
  for (int i = 0; i < 9; ++i) params.push_back(zeros({2}).requires_grad_());
  optim::SGD sgd(params, optim::SGDOptions(0.1));
  amp::GradScaler scaler(amp::GradScalerOptions{.init_scale = 8.0});
  for (int i = 0; i < 9; ++i) params[i].set_grad(full({2}, 8.0 * (i + 1)));
  scaler.unscale_(sgd);
  for (int i = 0; i < 9; ++i)
    EXPECT_EQ(params[i].grad().to_vector<float>(), (std::vector<float>(2, i + 1.0f))) << i;
  EXPECT_THROW(scaler.unscale_(sgd), Error);  // twice before update()
  EXPECT_TRUE(scaler.step(sgd));
  EXPECT_THROW(scaler.step(sgd), Error);
  scaler.update();
  EXPECT_THROW(scaler.update(), Error);  // nothing was checked since
  EXPECT_THROW(amp::GradScaler(amp::GradScalerOptions{.init_scale = -1}), Error);
  EXPECT_THROW(amp::GradScaler(amp::GradScalerOptions{.backoff_factor = 1.5}), Error);
  // float16 gradients are refused (PyTorch's rule), before anything changes: step()
  // then refuses too rather than stepping with gradients still scaled.
  Tensor h = zeros({2}, TensorOptions(float16)).requires_grad_();
  Tensor f = zeros({2}).requires_grad_();
  optim::SGD mixed(std::vector<Tensor>{f, h}, optim::SGDOptions(0.1));
  f.set_grad(full({2}, 8.0));
  h.set_grad(full({2}, 8.0, TensorOptions(float16)));
  amp::GradScaler s2(amp::GradScalerOptions{.init_scale = 8.0});
  EXPECT_THROW(s2.unscale_(mixed), Error);
  EXPECT_THROW(s2.step(mixed), Error);
  EXPECT_EQ(f.grad().to_vector<float>(), std::vector<float>(2, 8.0f));
  // No gradient at all: nothing was checked, and step() says so.
  optim::SGD empty(std::vector<Tensor>{zeros({1}).requires_grad_()}, optim::SGDOptions(0.1));
  EXPECT_THROW(s2.step(empty), Error);
  // Scales float32 cannot hold are refused, and growth stops below float32's max.
  EXPECT_THROW(amp::GradScaler(amp::GradScalerOptions{.init_scale = 1e-300}), Error);
  EXPECT_THROW(amp::GradScaler(amp::GradScalerOptions{.init_scale = 1e300}), Error);
  amp::GradScaler big(amp::GradScalerOptions{.init_scale = 0x1p127, .growth_interval = 1});
  EXPECT_THROW(big.update(1e-300), Error);
  f.set_grad(full({2}, 1.0));
  h.set_grad({});
  optim::SGD one(std::vector<Tensor>{f}, optim::SGDOptions(0.0));
  big.step(one);
  big.update();
  EXPECT_EQ(big.get_scale(), 0x1p127);
  // A gradient that overflows when unscaled is caught too: 3e38 / 0.5.
  amp::GradScaler half_scale(amp::GradScalerOptions{.init_scale = 0.5});
  f.set_grad(full({2}, 3e38));
  EXPECT_FALSE(half_scale.step(one));
  // Disabled: a pass-through.
  amp::GradScaler off(amp::GradScalerOptions{.enabled = false});
  const Tensor loss = scalar_tensor(3.0);
  EXPECT_EQ(off.scale(loss).item<double>(), 3.0);
}

TEST(GradScaler, StateDictRoundTripsAndRefusesHostileValues) {
  amp::GradScaler a(amp::GradScalerOptions{.init_scale = 1024, .growth_interval = 10});
  Tensor p = ones({1}).requires_grad_();
  optim::SGD sgd(std::vector<Tensor>{p}, optim::SGDOptions(0.1));
  for (int i = 0; i < 3; ++i) {
    sgd.zero_grad();
    a.scale(p.sum()).backward();
    a.step(sgd);
    a.update();
  }
  amp::GradScaler b;
  b.load_state_dict(a.state_dict());
  EXPECT_EQ(b.get_scale(), 1024);
  EXPECT_EQ(b.growth_tracker(), 3);
  auto with = [&](const std::string& key, double v) {
    nn::StateDict d = a.state_dict();
    for (auto& [name, t] : d)
      if (name == key) t = scalar_tensor(v, TensorOptions(float64));
    return d;
  };
  const double inf = std::numeric_limits<double>::infinity();
  for (const auto& [key, v] : std::vector<std::pair<std::string, double>>{{"scale", -1},
                                                                          {"scale", inf},
                                                                          {"scale", std::nan("")},
                                                                          {"scale", 1e-300},
                                                                          {"growth_factor", 0.5},
                                                                          {"backoff_factor", 2},
                                                                          {"growth_interval", 0.5},
                                                                          {"growth_tracker", 10}}) {
    try {
      b.load_state_dict(with(key, v));
      ADD_FAILURE() << key << " = " << v << " was accepted";
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find(key.substr(0, 6)), std::string::npos) << e.what();
    }
  }
  // state_dict() writes 0-d values: a scale of shape [1] or [1, 1] is refused.
  for (const std::vector<int64_t>& shape : {std::vector<int64_t>{1}, std::vector<int64_t>{1, 1}}) {
    nn::StateDict d = a.state_dict();
    for (auto& [name, t] : d)
      if (name == "scale") t = full(shape, 512.0, TensorOptions(float64));
    EXPECT_KILN_ERROR(b.load_state_dict(d), "'scale' must be a 0-d floating-point tensor");
  }
  EXPECT_EQ(b.get_scale(), 1024);  // a refused state changes nothing
  nn::StateDict missing = a.state_dict();
  missing.pop_back();
  EXPECT_THROW(b.load_state_dict(missing), Error);
}

TEST(HalfPrecision, ModelsInBFloat16TrainWithEveryOptimizer) {
  // Conv, batch norm, pooling, linear and the fused optimizer steps in bfloat16 on
  // the CPU plugin: the loss of a fixed batch goes down and everything stays bfloat16.
  for (int which = 0; which < 3; ++which) {
    manual_seed(7);
    auto model = std::make_shared<nn::Sequential>();
    model->push_back<nn::Conv2d>(1, 4, 3, nn::Conv2dOptions().padding(1));
    model->push_back<nn::BatchNorm2d>(4);
    model->push_back<nn::ReLU>();
    model->push_back<nn::MaxPool2d>(2);
    model->push_back<nn::Flatten>();
    model->push_back<nn::Linear>(4 * 4 * 4, 3);
    model->to(bfloat16);
    std::unique_ptr<optim::Optimizer> opt;
    if (which == 0)
      opt =
          std::make_unique<optim::SGD>(model->parameters(), optim::SGDOptions(0.05).momentum(0.9));
    else if (which == 1)
      opt = std::make_unique<optim::Adam>(model->parameters(), optim::AdamOptions(1e-2));
    else
      opt = std::make_unique<optim::AdamW>(model->parameters(), optim::AdamWOptions(1e-2));
    const Tensor x = randn({6, 1, 8, 8}).to(bfloat16);
    const Tensor y = from_vector<int64_t>({0, 1, 2, 0, 1, 2});
    double first = 0, last = 0;
    for (int step = 0; step < 15; ++step) {
      opt->zero_grad();
      Tensor loss = F::cross_entropy(model->forward(x), y);
      loss.backward();
      opt->step();
      (step == 0 ? first : last) = loss.to(float64).item<double>();
    }
    EXPECT_LT(last, 0.7 * first) << "optimizer " << which;
    for (const Tensor& p : model->parameters()) EXPECT_EQ(p.dtype(), bfloat16);
  }
}

}  // namespace
