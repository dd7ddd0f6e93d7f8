// The staged CUDA code (plugins/cuda/staged.cpp), run by ctest's cuda.staged with
// KILN_CUDA_STAGED=1: each entry's test, against the CPU plugin's answer (PyTorch 1.13's,
// tests/ops/pytorch_parity_test.cpp). Labelled gpu: skipped without a CUDA device. The
// first test checks that the switch is on, so these never pass with the staged code off.
#include <cmath>
#include <limits>

#include <kiln/amp.h>
#include <kiln/nn.h>
#include <kiln/optim.h>

#include "cuda_test_util.h"
#include "support/kiln_test.h"

namespace kiln::test::cuda {
namespace {

namespace F = kiln::nn::functional;
using indexing::Slice;

const Device kCpu("cpu", 0);
constexpr double kInf = std::numeric_limits<double>::infinity();
constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

// Runs `fn` with fallbacks counted from zero and returns how many the CUDA device took
// for the ops whose name holds `part` ("norm", "_step"; "" for every op).
template <class Fn>
uint64_t fallbacks_of(const char* part, const Fn& fn) {
  reset_fallback_report();
  fn();
  uint64_t calls = 0;
  for (const FallbackEntry& e : fallback_report().entries)
    if (e.device == "cuda:0" && e.op.find(part) != std::string::npos) calls += e.calls;
  return calls;
}

// Equal values (as float64, which every float dtype widens to exactly; NaN equals NaN).
::testing::AssertionResult same_values(const Tensor& got, const Tensor& want) {
  if (got.dtype() != want.dtype())
    return ::testing::AssertionFailure() << "dtype " << dtype_name(got.dtype());
  return matches(got.to(kCpu), ref_of(want), {0.0, 0.0});
}

// One rounding apart at most in `dtype`: the CUDA and CPU norms add the same float64
// terms in different orders, so a half result may round to the neighbouring value.
Tolerance one_rounding(DType dtype) { return {dtype == float16 ? 0x1p-10 : 0x1p-7, 1e-6}; }

TEST(CudaStaged, EveryEntryIsSwitchedOn) {
  const CudaPluginInfo cuda = cuda_plugin();
  ASSERT_TRUE(cuda.found);
  ASSERT_FALSE(cuda.info.staged.empty());
  for (const StagedInfo& s : cuda.info.staged) EXPECT_TRUE(s.enabled) << s.name;
}

TEST(CudaStaged, IntegerPowIsExact) {
  KILN_REQUIRE_CUDA();
  for (DType dtype : {int64, int32, uint8}) {
    SCOPED_TRACE(std::string(dtype_name(dtype)));
    std::vector<int64_t> base, exponent;
    for (int64_t i = 0; i < 16; ++i) {
      base.push_back(dtype == uint8 ? i * 7 : i - 7);
      exponent.push_back(i % 5);
    }
    Tensor a = from_vector<int64_t>(base, {16}).to(dtype);
    Tensor b = from_vector<int64_t>(exponent, {16}).to(dtype);
    Tensor want = pow(a, b);  // the CPU plugin's, exact (PyTorch's values)
    Tensor got;
    EXPECT_EQ(fallbacks_of("", [&] { got = pow(a.to(kCuda0), b.to(kCuda0)).to(kCpu); }), 0u);
    EXPECT_EQ(got.dtype(), dtype);
    EXPECT_EQ(got.to(int64).to_vector<int64_t>(), want.to(int64).to_vector<int64_t>());
  }
  // 16777217 ** 2 in int64, exact (float32 rounded it by 33,554,433).
  Tensor big = full({1}, int64_t{16777217}, TensorOptions(int64).device(kCuda0));
  EXPECT_EQ(pow(big, int64_t{2}).to(kCpu).item<int64_t>(), int64_t{16777217} * 16777217);
}

TEST(CudaStaged, SoftmaxShiftsByAnInfiniteMax) {
  KILN_REQUIRE_CUDA();
  // A row holding +inf, one of only -inf, an ordinary one; rows long enough for the
  // block kernel too, and a strided (dim 0) case.
  for (int64_t d : {3, 2000}) {
    SCOPED_TRACE(d);
    Tensor x = randn({3, d}, TensorOptions(float32));
    x.index({0, 1}).fill_(kInf);
    x.index({1}).fill_(-kInf);
    for (bool log : {false, true}) {
      Tensor want = log ? F::log_softmax(x, 1) : F::softmax(x, 1);
      Tensor got = (log ? F::log_softmax(x.to(kCuda0), 1) : F::softmax(x.to(kCuda0), 1)).to(kCpu);
      EXPECT_TRUE(got.index({0}).isnan().all().item<bool>());
      EXPECT_TRUE(got.index({1}).isnan().all().item<bool>());
      EXPECT_TRUE(allclose(got.index({2}), want.index({2}), 1e-5, 1e-6));
    }
    Tensor strided = F::softmax(x.t().contiguous().to(kCuda0), 0).to(kCpu);
    EXPECT_TRUE(strided.index({Slice(), 0}).isnan().all().item<bool>());
  }
}

TEST(CudaStaged, MaxPoolTakesTheLastNaN) {
  KILN_REQUIRE_CUDA();
  // One 2 x 2 window holding two NaNs: the value is NaN and the index the last one (3),
  // as on the CPU and in PyTorch; the gradient goes there.
  Tensor x = from_vector<double>({kNaN, 1.0, 2.0, kNaN}, {1, 1, 2, 2}, TensorOptions(float32));
  Tensor xc = x.to(kCuda0).requires_grad_();
  Tensor y = F::max_pool2d(xc, {2, 2});
  EXPECT_TRUE(std::isnan(y.to(kCpu).item<float>()));
  y.sum().backward();
  EXPECT_EQ(xc.grad().to(kCpu).to_vector<float>(), (std::vector<float>{0, 0, 0, 1}));
}

// The norms' forward and backward kernels in float16 and bfloat16, against the CPU
// plugin's widened kernels (float64 sums, results rounded through float32).
// log1p keeps the digits of a tiny x that log(1 + x) loses, gives -inf at -1 and NaN
// below; the gradient (grad / (1 + x), verified ops) flows back on the device.
TEST(CudaStaged, Log1pMatchesTheCpu) {
  KILN_REQUIRE_CUDA();
  const std::vector<double> xs = {1e-30, -1e-12, 3e-8, 0.0,  -0.0, 0.5,   -0.75,
                                  7.0,   1e30,   -1.0, -2.0, kInf, -kInf, kNaN};
  for (DType dtype : {float32, float64, float16, bfloat16}) {
    SCOPED_TRACE(std::string(dtype_name(dtype)));
    Tensor x = from_vector<double>(xs, {int64_t(xs.size())}).to(dtype);
    Tensor want = log1p(x);  // the CPU plugin's (PyTorch 1.13's values)
    Tensor got;
    EXPECT_EQ(fallbacks_of("log1p", [&] { got = log1p(x.to(kCuda0)); }), 0u);
    // A few ulps of libm difference in float32/float64; half types compute in float32
    // and round once, so they agree to a rounding.
    const Tolerance tol = dtype == float64   ? Tolerance{1e-15, 0.0}
                          : dtype == float32 ? Tolerance{5e-7, 0.0}
                                             : one_rounding(dtype);
    EXPECT_TRUE(matches(got.to(kCpu), ref_of(want), tol));
    // Relative to x for the tiny ones: log1p(x) = x - x^2/2 + ..., so log(1 + x) (0 or
    // a float32 rounding of 1 + x) fails this.
    if (dtype == float32 || dtype == float64) {
      EXPECT_NEAR(got.to(kCpu).to_vector<double>()[2], 3e-8, 3e-8 * 1e-6);
    }
  }
  Tensor x = from_vector<double>({0.25, 3.0, -0.5}, {3}).to(kCuda0).requires_grad_();
  log1p(x).sum().backward();
  EXPECT_TRUE(matches(x.grad().to(kCpu), {3}, {0.8, 0.25, 2.0}, kFloat64Tol));
}

// The fused attention op on the GPU against the CPU's fused kernel: values and the
// three gradients, across masks, causal, broadcast k/v, dropout (the same Philox
// decisions) and every float type; no CPU fallback; the composed version agrees too.
TEST(CudaStaged, AttentionMatchesTheCpu) {
  KILN_REQUIRE_CUDA();
  struct Case {
    const char* what;
    std::vector<int64_t> q, k, v;
    bool causal, mask;
    double dropout;
  };
  const std::vector<Case> cases = {
      {"plain", {2, 3, 37, 16}, {2, 3, 50, 16}, {2, 3, 50, 24}, false, false, 0.0},
      {"causal", {1, 4, 70, 64}, {1, 4, 70, 64}, {1, 4, 70, 64}, true, false, 0.0},
      {"masked, k/v broadcast", {2, 2, 9, 8}, {2, 1, 13, 8}, {2, 1, 13, 8}, false, true, 0.0},
      {"causal dropout", {1, 2, 33, 32}, {1, 2, 33, 32}, {1, 2, 33, 32}, true, false, 0.3},
  };
  for (DType dtype : {float32, float64, bfloat16, float16}) {
    for (const Case& c : cases) {
      SCOPED_TRACE(std::string(dtype_name(dtype)) + " " + c.what);
      manual_seed(17);
      const Tensor q = randn(c.q).to(dtype), k = randn(c.k).to(dtype), v = randn(c.v).to(dtype);
      const Tensor w = randn({c.q[0], c.q[1], c.q[2], c.v[3]}).to(dtype);
      const Tensor mask = c.mask ? randn({c.q[2], c.k[2]}) > -1.0 : Tensor();
      auto run = [&](const Device& device, std::vector<Tensor>& grads) {
        std::vector<Tensor> in = {q.to(device).requires_grad_(), k.to(device).requires_grad_(),
                                  v.to(device).requires_grad_()};
        manual_seed(5);
        const Tensor out = F::scaled_dot_product_attention(
            in[0], in[1], in[2], mask.defined() ? mask.to(device) : Tensor(), c.dropout, c.causal);
        (out * w.to(device)).sum().backward();
        for (const Tensor& t : in) grads.push_back(t.grad().to(kCpu));
        return out.detach().to(kCpu);
      };
      std::vector<Tensor> want_grads, got_grads;
      const Tensor want = run(kCpu, want_grads);
      Tensor got;
      EXPECT_EQ(fallbacks_of("attention", [&] { got = run(kCuda0, got_grads); }), 0u);
      const Tolerance tol = dtype == float64   ? Tolerance{1e-10, 1e-10}
                            : dtype == float32 ? Tolerance{2e-5, 2e-5}
                                               : Tolerance{3e-2, 3e-2};
      EXPECT_TRUE(matches(got, ref_of(want), tol));
      for (size_t i = 0; i < 3; ++i)
        EXPECT_TRUE(matches(got_grads[i], ref_of(want_grads[i]), tol)) << i;
    }
  }
}

TEST(CudaStaged, HalfNormsMatchTheCpu) {
  KILN_REQUIRE_CUDA();
  for (DType dtype : {float16, bfloat16}) {
    SCOPED_TRACE(std::string(dtype_name(dtype)));
    const Tolerance tol = one_rounding(dtype);
    // batch norm, training, with running statistics, on [4, 3, 5, 5].
    Tensor x = (randn({4, 3, 5, 5}) * 3.0 + 1.5).to(dtype);
    Tensor weight = randn({3}).to(dtype), bias = randn({3}).to(dtype);
    Tensor grad_y = randn({4, 3, 5, 5}).to(dtype);
    struct Run {
      Tensor y, grad_x, grad_weight, grad_bias, running_mean, running_var;
    };
    // Running statistics only where the op has them (batch norm).
    auto expect_close = [&](const Run& got, const Run& want) {
      EXPECT_TRUE(matches(got.y.to(kCpu), ref_of(want.y), tol));
      EXPECT_TRUE(matches(got.grad_x.to(kCpu), ref_of(want.grad_x), tol.scaled(2)));
      EXPECT_TRUE(matches(got.grad_weight.to(kCpu), ref_of(want.grad_weight), tol));
      EXPECT_TRUE(matches(got.grad_bias.to(kCpu), ref_of(want.grad_bias), tol));
      if (!want.running_mean.defined()) return;
      EXPECT_TRUE(matches(got.running_mean.to(kCpu), ref_of(want.running_mean), tol));
      EXPECT_TRUE(matches(got.running_var.to(kCpu), ref_of(want.running_var), tol));
    };
    auto batch_norm_on = [&](const Device& d) {
      Run r;
      Tensor xd = x.to(d).requires_grad_(), w = weight.to(d).requires_grad_(),
             b = bias.to(d).requires_grad_();
      r.running_mean = zeros({3}, options(dtype, d));
      r.running_var = ones({3}, options(dtype, d));
      r.y = F::batch_norm(xd, r.running_mean, r.running_var, w, b, true);
      (r.y * grad_y.to(d)).sum().backward();
      r.grad_x = xd.grad(), r.grad_weight = w.grad(), r.grad_bias = b.grad();
      return r;
    };
    const Run want = batch_norm_on(kCpu);
    Run got;
    EXPECT_EQ(fallbacks_of("norm", [&] { got = batch_norm_on(kCuda0); }), 0u);
    expect_close(got, want);

    // layer norm over the last dim of [6, 7, 33].
    Tensor lx = (randn({6, 7, 33}) - 2.0).to(dtype);
    Tensor lw = randn({33}).to(dtype), lb = randn({33}).to(dtype), lg = randn({6, 7, 33}).to(dtype);
    auto layer_norm_on = [&](const Device& d) {
      Run r;
      Tensor xd = lx.to(d).requires_grad_(), w = lw.to(d).requires_grad_(),
             b = lb.to(d).requires_grad_();
      r.y = F::layer_norm(xd, {33}, w, b);
      (r.y * lg.to(d)).sum().backward();
      r.grad_x = xd.grad(), r.grad_weight = w.grad(), r.grad_bias = b.grad();
      return r;
    };
    const Run lwant = layer_norm_on(kCpu);
    Run lgot;
    EXPECT_EQ(fallbacks_of("norm", [&] { lgot = layer_norm_on(kCuda0); }), 0u);
    expect_close(lgot, lwant);
  }
}

// SGD (momentum, nesterov, weight decay) and Adam/AdamW on half parameters: the same
// float32 formulas in the same order as the CPU plugin, so the same bits, step by step.
TEST(CudaStaged, HalfOptimizerStepsMatchTheCpu) {
  KILN_REQUIRE_CUDA();
  for (DType dtype : {float16, bfloat16}) {
    for (int kind = 0; kind < 3; ++kind) {  // SGD, Adam, AdamW
      SCOPED_TRACE(std::string(dtype_name(dtype)) + " optimizer " + std::to_string(kind));
      Tensor start = randn({5, 7}).to(dtype);
      std::vector<Tensor> grads;
      for (int i = 0; i < 3; ++i) grads.push_back(randn({5, 7}).to(dtype));
      // The parameter, then every optimizer state tensor (momentum buffer, exp_avg,
      // exp_avg_sq), on the CPU.
      auto train_on = [&](const Device& d) -> std::vector<Tensor> {
        Tensor p = start.to(d).requires_grad_();
        std::unique_ptr<optim::Optimizer> opt;
        if (kind == 0)
          opt = std::make_unique<optim::SGD>(
              std::vector<Tensor>{p},
              optim::SGDOptions(0.1).momentum(0.9).nesterov(true).weight_decay(0.01));
        else if (kind == 1)
          opt = std::make_unique<optim::Adam>(std::vector<Tensor>{p},
                                              optim::AdamOptions(0.01).weight_decay(0.01));
        else
          opt = std::make_unique<optim::AdamW>(std::vector<Tensor>{p},
                                               optim::AdamWOptions(0.01).weight_decay(0.1));
        for (const Tensor& g : grads) {
          p.set_grad(g.to(d));
          opt->step();
        }
        std::vector<Tensor> out{p.detach().to(kCpu)};
        for (const auto& [name, t] : opt->state_dict())
          if (t.numel() == p.numel()) out.push_back(t.to(kCpu));
        return out;
      };
      const std::vector<Tensor> want = train_on(kCpu);
      std::vector<Tensor> got;
      EXPECT_EQ(fallbacks_of("_step", [&] { got = train_on(kCuda0); }), 0u);
      ASSERT_EQ(got.size(), want.size());
      EXPECT_GE(want.size(), kind == 0 ? 2u : 3u);  // the state is compared too
      for (size_t i = 0; i < want.size(); ++i) EXPECT_TRUE(same_values(got[i], want[i])) << i;
    }
  }
}

// GradScaler's check and unscale: the gradients and the verdict equal the CPU's, for a
// clean step and ones holding an inf or a NaN; inv_scale (1/3: the multiplies round) is
// read on the device.
TEST(CudaStaged, UnscaleMatchesTheCpu) {
  KILN_REQUIRE_CUDA();
  for (double bad : {0.0, kInf, kNaN}) {
    const bool with_inf = bad != 0.0;
    SCOPED_TRACE(bad);
    Tensor g32 = randn({9, 4}) * 1024.0;
    Tensor g16 = (randn({33}) * 1024.0).to(bfloat16);
    if (with_inf) g16.index({3}).fill_(bad);
    struct Run {
      Tensor grad32, grad16;
      bool stepped;
    };
    auto unscale_on = [&](const Device& d) {
      Tensor a = zeros({9, 4}, options(float32, d)).requires_grad_();
      Tensor b = zeros({33}, options(bfloat16, d)).requires_grad_();
      a.set_grad(g32.to(d).t().contiguous().t());  // a strided gradient too
      b.set_grad(g16.to(d));
      optim::SGD opt({a, b}, optim::SGDOptions(0.0));
      amp::GradScalerOptions scaling;
      scaling.init_scale = 3.0;
      amp::GradScaler scaler(scaling);
      scaler.unscale_(opt);
      Run r{a.grad().clone(), b.grad().clone(), false};
      r.stepped = scaler.step(opt);
      return r;
    };
    const Run want = unscale_on(kCpu);
    Run got;
    EXPECT_EQ(fallbacks_of("unscale", [&] { got = unscale_on(kCuda0); }), 0u);
    EXPECT_EQ(got.stepped, want.stepped);
    EXPECT_EQ(got.stepped, !with_inf);
    EXPECT_TRUE(same_values(got.grad32, want.grad32));
    EXPECT_TRUE(same_values(got.grad16, want.grad16));
  }
}

// kiln::Graph on cuda:0 with kiln.graphs.v1: the forward and backward passes replay as
// CUDA graph launches (the Adam steps, whose step count changes, as ordinary calls),
// and every replay equals the eager step bit for bit.
TEST(CudaStaged, GraphReplaysLaunchCudaGraphs) {
  KILN_REQUIRE_CUDA();
  const TensorOptions on = TensorOptions(float32).device(kCuda0);
  auto make = [] {
    manual_seed(11);
    auto m = std::make_shared<nn::Sequential>();
    m->push_back<nn::Linear>(12, 32);
    m->push_back<nn::ReLU>();
    m->push_back<nn::Linear>(32, 4);
    m->to(kCuda0);
    return m;
  };
  std::vector<Tensor> xs, ys;
  manual_seed(3);
  for (int i = 0; i < 6; ++i) {
    xs.push_back(randn({8, 12}, on));
    ys.push_back(randn({8, 4}, on));
  }
  auto step = [](nn::Sequential& m, optim::Optimizer& opt, const Tensor& x, const Tensor& y) {
    opt.zero_grad(false);
    Tensor loss = F::mse_loss(m.forward(x), y);
    loss.backward();
    opt.step();
    return loss;
  };
  // Eager: six steps.
  auto eager = make();
  optim::Adam eager_opt(eager->parameters(), optim::AdamOptions(1e-2));
  std::vector<float> eager_losses;
  for (int i = 0; i < 6; ++i)
    eager_losses.push_back(step(*eager, eager_opt, xs[i], ys[i]).to(kCpu).item<float>());
  // Two eager steps (the optimizer's state exists), a capture, four replays.
  auto model = make();
  optim::Adam opt(model->parameters(), optim::AdamOptions(1e-2));
  Tensor x = zeros({8, 12}, on), y = zeros({8, 4}, on);
  std::vector<float> losses;
  for (int i = 0; i < 2; ++i) {
    x.copy_(xs[i]);
    y.copy_(ys[i]);
    losses.push_back(step(*model, opt, x, y).to(kCpu).item<float>());
  }
  opt.zero_grad();  // the gradients come from the graph's pool
  Graph graph;
  Tensor loss;
  {
    GraphCapture capture(graph, kCuda0);
    loss = step(*model, opt, x, y);
  }
  for (int i = 2; i < 6; ++i) {
    x.copy_(xs[i]);
    y.copy_(ys[i]);
    graph.replay();
    losses.push_back(loss.to(kCpu).item<float>());
  }
  EXPECT_GE(graph.num_device_graphs(), 1u);
  EXPECT_EQ(losses, eager_losses);
  const std::vector<Tensor> a = eager->parameters(), b = model->parameters();
  ASSERT_EQ(a.size(), b.size());
  for (size_t i = 0; i < a.size(); ++i) EXPECT_TRUE(same_values(b[i], a[i])) << "parameter " << i;
}

}  // namespace
}  // namespace kiln::test::cuda
