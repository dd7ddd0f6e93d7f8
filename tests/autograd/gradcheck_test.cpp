// Every differentiable op checked against central finite differences in float64
// (kiln::gradcheck: eps 1e-6, |analytic - numerical| <= 1e-5 + 1e-3·|numerical|).
// Inputs are chosen away from kinks (relu at 0, abs at 0, clamp bounds, max ties)
// where finite differences are not meaningful.

#include <gtest/gtest.h>

#include <kiln/kiln.h>
#include <kiln/nn/functional.h>
#include <kiln/testing/pointwise_ops.h>

namespace {

namespace F = kiln::nn::functional;
using kiln::Tensor;
using Inputs = std::vector<Tensor>;

// Values in [lo, hi), deterministic, float64, requiring grad.
Tensor input(std::vector<int64_t> shape, double lo = -1.0, double hi = 1.0, uint64_t seed = 1) {
  kiln::manual_seed(seed);
  return kiln::uniform(shape, lo, hi, kiln::float64).requires_grad_();
}

// Values at least `gap` away from each other and from zero, shuffled: no kinks.
Tensor spread(std::vector<int64_t> shape, double gap = 0.1) {
  int64_t n = 1;
  for (auto s : shape) n *= s;
  std::vector<double> v(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) v[i] = (i % 2 ? 1 : -1) * (0.2 + gap * i);
  for (size_t i = 0; i < v.size(); ++i) std::swap(v[i], v[(i * 7 + 3) % v.size()]);
  return kiln::from_vector<double>(v, shape).requires_grad_();
}

#define EXPECT_GRADCHECK(fn, ...)                      \
  do {                                                 \
    auto r = kiln::gradcheck(fn, Inputs{__VA_ARGS__}); \
    EXPECT_TRUE(r.ok) << r.message;                    \
  } while (0)

TEST(Gradcheck, UnaryOps) {
  EXPECT_GRADCHECK([](const Inputs& x) { return -x[0]; }, input({3, 4}));
  EXPECT_GRADCHECK([](const Inputs& x) { return x[0].abs(); }, spread({3, 4}));
  EXPECT_GRADCHECK([](const Inputs& x) { return x[0].exp(); }, input({3, 4}));
  EXPECT_GRADCHECK([](const Inputs& x) { return x[0].log(); }, input({3, 4}, 0.5, 2.0));
  EXPECT_GRADCHECK([](const Inputs& x) { return x[0].sqrt(); }, input({3, 4}, 0.5, 2.0));
  EXPECT_GRADCHECK([](const Inputs& x) { return x[0].rsqrt(); }, input({3, 4}, 0.5, 2.0));
  EXPECT_GRADCHECK([](const Inputs& x) { return x[0].sin(); }, input({3, 4}));
  EXPECT_GRADCHECK([](const Inputs& x) { return x[0].cos(); }, input({3, 4}));
  EXPECT_GRADCHECK([](const Inputs& x) { return x[0].tanh(); }, input({3, 4}));
  EXPECT_GRADCHECK([](const Inputs& x) { return x[0].sigmoid(); }, input({3, 4}));
  EXPECT_GRADCHECK([](const Inputs& x) { return x[0].relu(); }, spread({3, 4}));
  EXPECT_GRADCHECK([](const Inputs& x) { return x[0].gelu(); }, input({3, 4}, -3, 3));
  EXPECT_GRADCHECK([](const Inputs& x) { return x[0].gelu("tanh"); }, input({3, 4}, -3, 3));
  EXPECT_GRADCHECK([](const Inputs& x) { return x[0].clamp(-0.35, 0.45); }, spread({3, 4}, 0.07));
  EXPECT_GRADCHECK([](const Inputs& x) { return x[0].pow(3.0); }, input({3, 4}));
}

// Every differentiable pointwise op generated from api/ops.json, with inputs drawn from
// its whole catalogue test domain; binary ops broadcast ([3, 4] with [4]). The points
// where an op is not differentiable (test.nondifferentiable_at: abs's and relu's kink,
// log's 0, div's pole) keep kGradcheckMargin away from the samples.
TEST(Gradcheck, EveryGeneratedPointwiseOp) {
  int checked = 0;
  for (const kiln::testing::PointwiseOp& p : kiln::testing::kPointwiseOps) {
    if (!p.differentiable) continue;
    SCOPED_TRACE(p.op);
    auto domain = [&](int i, std::vector<int64_t> shape, uint64_t seed) {
      const kiln::testing::InputDomain& d = p.domain[i];
      std::vector<double> values = input(shape, d.lo, d.hi, seed).to_vector<double>();
      for (double& v : values) v = d.differentiable_sample(v);
      return kiln::from_vector<double>(values, shape).requires_grad_();
    };
    if (p.unary != nullptr) {
      auto f = p.unary;
      EXPECT_GRADCHECK([f](const Inputs& x) { return f(x[0]); }, domain(0, {3, 4}, 1));
    } else {
      auto f = p.binary;
      EXPECT_GRADCHECK([f](const Inputs& x) { return f(x[0], x[1]); }, domain(0, {3, 4}, 1),
                       domain(1, {4}, 2));
    }
    ++checked;
  }
  EXPECT_GE(checked, 21);  // the catalogue's differentiable pointwise ops, erf, atan2 and log1p
}

TEST(Gradcheck, BinaryOpsWithBroadcasting) {
  auto a = [] { return input({2, 3, 4}, -1, 1, 1); };
  auto b = [] { return input({3, 1}, 0.5, 1.5, 2); };
  EXPECT_GRADCHECK([](const Inputs& x) { return x[0] + x[1]; }, a(), b());
  EXPECT_GRADCHECK([](const Inputs& x) { return x[0] - x[1]; }, a(), b());
  EXPECT_GRADCHECK([](const Inputs& x) { return x[0] * x[1]; }, a(), b());
  EXPECT_GRADCHECK([](const Inputs& x) { return x[0] / x[1]; }, a(), b());
  EXPECT_GRADCHECK([](const Inputs& x) { return kiln::pow(x[1], x[0]); }, a(), b());
  EXPECT_GRADCHECK([](const Inputs& x) { return kiln::maximum(x[0], x[1]); }, spread({2, 3}),
                   spread({2, 3}, 0.13) * 0.9);
  EXPECT_GRADCHECK([](const Inputs& x) { return kiln::minimum(x[0], x[1]); }, spread({2, 3}),
                   spread({2, 3}, 0.13) * 0.9);
  EXPECT_GRADCHECK([](const Inputs& x) { return 2.0 - x[0] * 3 + 1.5 / x[1]; }, a(), b());
}

TEST(Gradcheck, WhereRoutesGradients) {
  auto cond = kiln::from_vector<bool>({true, false, true, false, false, true}, {2, 3});
  EXPECT_GRADCHECK([cond](const Inputs& x) { return kiln::where(cond, x[0], x[1]); }, input({2, 3}),
                   input({3}, -1, 1, 3));
}

TEST(Gradcheck, Reductions) {
  EXPECT_GRADCHECK([](const Inputs& x) { return x[0].sum(); }, input({3, 4}));
  EXPECT_GRADCHECK([](const Inputs& x) { return x[0].sum({1}, true); }, input({3, 4, 2}));
  EXPECT_GRADCHECK([](const Inputs& x) { return x[0].mean({0, 2}); }, input({3, 4, 2}));
  EXPECT_GRADCHECK([](const Inputs& x) { return x[0].var({1}); }, input({3, 4}));
  EXPECT_GRADCHECK([](const Inputs& x) { return x[0].var({}, 0); }, input({3, 4}));
  EXPECT_GRADCHECK([](const Inputs& x) { return x[0].amax({1}); }, spread({3, 4}));
  EXPECT_GRADCHECK([](const Inputs& x) { return x[0].min(); }, spread({3, 4}));
  EXPECT_GRADCHECK([](const Inputs& x) { return x[0].prod({1}); }, input({3, 4}, 0.5, 1.5));
}

TEST(Gradcheck, ProdWithZeros) {
  // One zero in a row: only the zero gets a gradient (the product of the others);
  // two zeros: nobody does. Finite differences agree with both.
  auto x = kiln::from_vector<double>({0.0, 2.0, 3.0, 0.0, 0.0, 5.0, 1.5, 2.0, 0.5}, {3, 3})
               .requires_grad_();
  EXPECT_GRADCHECK([](const Inputs& v) { return v[0].prod({1}); }, x);
}

TEST(Gradcheck, ViewsAndJoins) {
  EXPECT_GRADCHECK(
      [](const Inputs& x) {
        return x[0].reshape({4, 3}).t().matmul(x[0].reshape({4, 3}));
      },
      input({2, 6}));
  EXPECT_GRADCHECK([](const Inputs& x) { return x[0].permute({2, 0, 1}) * 2; }, input({2, 3, 4}));
  EXPECT_GRADCHECK([](const Inputs& x) { return x[0].slice(1, 1, 4, 2); }, input({3, 5}));
  EXPECT_GRADCHECK([](const Inputs& x) { return x[0].narrow(0, 1, 2).select(1, 2); },
                   input({3, 5}));
  EXPECT_GRADCHECK(
      [](const Inputs& x) {
        return x[0].unsqueeze(1).expand({3, 4, 5});
      },
      input({3, 5}));
  EXPECT_GRADCHECK([](const Inputs& x) { return x[0].squeeze().flatten(); }, input({3, 1, 5}));
  EXPECT_GRADCHECK(
      [](const Inputs& x) {
        return kiln::cat({x[0], x[1] * 2}, 1);
      },
      input({2, 3}), input({2, 2}));
  EXPECT_GRADCHECK(
      [](const Inputs& x) {
        return kiln::stack({x[0], x[1]}, 0);
      },
      input({2, 3}), input({2, 3}));
}

TEST(Gradcheck, DtypeConversionPassesGradientsBackInTheInputDtype) {
  // (A float32 round trip is too coarse for finite differences at eps 1e-6.)
  auto a = input({2, 3});
  (a.to(kiln::float32) * 2.0f).sum().backward();
  EXPECT_EQ(a.grad().dtype(), kiln::float64);
  EXPECT_EQ(a.grad().to_vector<double>(), std::vector<double>(6, 2.0));
}

// The composite tensor methods and the sort/scan ops (inputs without ties or zeros
// where those would be kinks).
TEST(Gradcheck, TensorMethods) {
  EXPECT_GRADCHECK([](const Inputs& x) { return x[0].flip({0, 1}); }, input({3, 4}));
  EXPECT_GRADCHECK([](const Inputs& x) { return x[0].roll({1, -2}, {0, 1}); }, input({3, 4}));
  EXPECT_GRADCHECK([](const Inputs& x) { return x[0].repeat({2, 1, 3}); }, input({2, 3}));
  EXPECT_GRADCHECK([](const Inputs& x) { return x[0].tril(1); }, input({3, 4}));
  EXPECT_GRADCHECK([](const Inputs& x) { return x[0].triu(-1); }, input({2, 3, 4}));
  EXPECT_GRADCHECK([](const Inputs& x) { return x[0].diag(1); }, input({3}));
  EXPECT_GRADCHECK([](const Inputs& x) { return x[0].diag(-1); }, input({3, 4}));
  EXPECT_GRADCHECK([](const Inputs& x) { return x[0].std({1}); }, input({3, 4}));
  EXPECT_GRADCHECK([](const Inputs& x) { return x[0].norm(); }, spread({3, 4}));
  EXPECT_GRADCHECK([](const Inputs& x) { return x[0].norm(2, {1}); }, spread({3, 4}));
  EXPECT_GRADCHECK([](const Inputs& x) { return x[0].norm(3, {0}, true); }, spread({3, 4}));
  EXPECT_GRADCHECK([](const Inputs& x) { return x[0].norm(1); }, spread({3, 4}));
  EXPECT_GRADCHECK([](const Inputs& x) { return x[0].cumsum(1); }, input({3, 4}));
  EXPECT_GRADCHECK([](const Inputs& x) { return x[0].cumsum(0); }, input({3, 4}));
  EXPECT_GRADCHECK([](const Inputs& x) { return x[0].cumprod(1); }, input({3, 4}));
  // Zeros at and after a line's first zero (the gradient's special cases).
  EXPECT_GRADCHECK([](const Inputs& x) { return x[0].cumprod(1); },
                   kiln::from_vector<double>(
                       {0.5, 0, 2, -1, 0, 1.5, 0, 0, 3, 0.25, -2, 0.7, 0.9, -0.4, 0}, {3, 5})
                       .requires_grad_());
  EXPECT_GRADCHECK([](const Inputs& x) { return x[0].masked_scatter(x[0] > 0.0, x[1]); },
                   input({3, 4}), input({12}, -1, 1, 2));
  auto positions = kiln::from_vector<int64_t>({2, 0, 1, 0, 1, 2}, {2, 3});
  EXPECT_GRADCHECK([positions](const Inputs& x) { return x[0].scatter(0, positions, x[1]); },
                   input({3, 3}), input({2, 4}, -1, 1, 2));
  EXPECT_GRADCHECK([](const Inputs& x) { return std::get<0>(x[0].sort(1, true)); }, spread({3, 4}));
  EXPECT_GRADCHECK([](const Inputs& x) { return std::get<0>(x[0].topk(2, 0)); }, spread({3, 4}));
  EXPECT_GRADCHECK([](const Inputs& x) { return x[0].masked_select(x[0] > 0.35); }, spread({3, 4}));
  auto index = kiln::from_vector<int64_t>({0, 2, 0, 1, 1, 2}, {2, 3});
  EXPECT_GRADCHECK([index](const Inputs& x) { return x[0].scatter_add(1, index, x[1]); },
                   input({2, 3}), input({2, 4}, -1, 1, 2));
  EXPECT_GRADCHECK(
      [](const Inputs& x) {
        return kiln::einsum("bij,bjk->bik", {x[0], x[1]});
      },
      input({2, 2, 3}), input({2, 3, 2}, -1, 1, 2));
  EXPECT_GRADCHECK([](const Inputs& x) { return kiln::einsum("ii->", {x[0]}); }, input({3, 3}));
  EXPECT_GRADCHECK(
      [](const Inputs& x) {
        return kiln::einsum("...ij,...jk->...ik", {x[0], x[1]});
      },
      input({1, 2, 3}), input({2, 3, 2}, -1, 1, 2));
  EXPECT_GRADCHECK(
      [](const Inputs& x) {
        return kiln::einsum("ij,j,jk->ik", {x[0], x[1], x[2]});
      },
      input({2, 3}), input({3}, -1, 1, 2), input({3, 2}, -1, 1, 3));
  EXPECT_GRADCHECK(
      [](const Inputs& x) {
        return F::pad(x[0], {2, 1}, "reflect");
      },
      input({1, 2, 4}));
  EXPECT_GRADCHECK([](const Inputs& x) { return F::pad(x[0], {1, 1, -1, 2}); }, input({1, 3, 4}));
  EXPECT_GRADCHECK(
      [](const Inputs& x) {
        return F::interpolate(x[0], {3, 5}, "bilinear");
      },
      input({1, 2, 2, 3}));
  auto rows = kiln::from_vector<int64_t>({2, 0, 2});
  EXPECT_GRADCHECK([rows](const Inputs& x) { return x[0].index_add(0, rows, x[1]); }, input({3, 2}),
                   input({3, 2}, -1, 1, 3));
}

TEST(Gradcheck, Matmul) {
  EXPECT_GRADCHECK([](const Inputs& x) { return kiln::matmul(x[0], x[1]); }, input({3, 4}),
                   input({4, 2}));
  EXPECT_GRADCHECK([](const Inputs& x) { return kiln::matmul(x[0], x[1]); }, input({2, 3, 4}),
                   input({4, 5}));  // broadcast batch
  EXPECT_GRADCHECK([](const Inputs& x) { return kiln::matmul(x[0], x[1]); }, input({4}),
                   input({4}));  // dot
  EXPECT_GRADCHECK([](const Inputs& x) { return kiln::matmul(x[0], x[1]); }, input({4}),
                   input({2, 4, 3}));
  EXPECT_GRADCHECK([](const Inputs& x) { return kiln::matmul(x[0], x[1].transpose(0, 1)); },
                   input({3, 4}), input({5, 4}));
}

TEST(Gradcheck, Indexing) {
  auto idx = kiln::from_vector<int64_t>({2, 0, 2, 1});
  EXPECT_GRADCHECK([idx](const Inputs& x) { return kiln::index_select(x[0], 1, idx); },
                   input({3, 4}));
  auto g = kiln::from_vector<int64_t>({0, 2, 1, 0, 0, 1}, {2, 3});
  EXPECT_GRADCHECK([g](const Inputs& x) { return kiln::gather(x[0], 0, g); }, input({3, 3}));
}

}  // namespace
