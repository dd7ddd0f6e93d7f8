// Corners where Kiln once disagreed with PyTorch 1.13 (issue 38), on every device: the
// gradients of reductions over size-1 dims, ties and NaN; std, pow and prod at zero;
// prod over several dims and ±inf norms; half gradients computed in float32;
// type promotion with 0-d tensors; integer scalars kept exact or wrapped; values that
// do not fit a dtype; in-place ops with a wider operand; clamp's bounds; indexing with
// 0-d index tensors, huge steps, -0.0 and bool tensors. Every expected value was
// printed by Debian's python3-torch 1.13.1 for the same inputs.
#include <cmath>
#include <cstdint>
#include <limits>

#include "kiln/fft.h"
#include "kiln/indexing.h"
#include "kiln/nn/functional.h"
#include "ops/conformance.h"

namespace kiln::test {
namespace {

using indexing::Slice;
constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();
constexpr double kInf = std::numeric_limits<double>::infinity();

class PytorchParity : public DeviceTest {
 protected:
  Tensor leaf(const std::vector<double>& values, const Shape& shape, DType dtype = float32) const {
    return make(values, shape, dtype).requires_grad_();
  }
};

// -- gradients --------------------------------------------------------------------------

TEST_P(PytorchParity, ExtremesOverSizeOneDimsPassTheWholeGradient) {
  // x of shape [2, 1]: reducing dim 1 picks each element; the gradient is 1, not 1/2.
  for (const char* name : {"amax", "amin", "inf-norm"}) {
    SCOPED_TRACE(name);
    Tensor x = leaf({3, -1}, {2, 1});
    Tensor y = std::string(name) == "amax"   ? x.amax({1})
               : std::string(name) == "amin" ? x.amin({1})
                                             : norm(x, kInf, {1});
    y.sum().backward();
    const double sign = std::string(name) == "inf-norm" ? -1 : 1;
    EXPECT_TRUE(matches(x.grad(), {2, 1}, {1, sign}));
  }
  Tensor p = leaf({0, 2}, {2, 1});
  p.prod({1}).sum().backward();
  EXPECT_TRUE(matches(p.grad(), {2, 1}, {1, 1}));
}

TEST_P(PytorchParity, ProdGradientAtZeros) {
  Tensor x = leaf({0, 2, 0, 0, 3, 4}, {3, 2}, float64);
  (x.prod({1}) * make({1, 2, 3}, {3}, float64)).sum().backward();
  EXPECT_TRUE(matches(x.grad(), {3, 2}, {2, 0, 0, 0, 12, 9}));
}

TEST_P(PytorchParity, MaxAlongADimGivesTheGradientToTheReturnedIndex) {
  Tensor x = leaf({1, 5, 5, 2, 2, 2}, {2, 3});
  auto [v, i] = x.max(1);
  v.sum().backward();
  EXPECT_EQ(i.to_vector<int64_t>(), (std::vector<int64_t>{1, 0}));
  EXPECT_TRUE(matches(x.grad(), {2, 3}, {0, 1, 0, 1, 0, 0}));
  Tensor y = leaf({1, 5, 5, 2, 2, 2}, {2, 3});
  auto [mv, mi] = y.min(1, /*keepdim=*/true);
  EXPECT_EQ(mv.shape(), IntArrayRef({2, 1}));
  mv.sum().backward();
  EXPECT_TRUE(matches(y.grad(), {2, 3}, {1, 0, 0, 1, 0, 0}));
  // A NaN is the maximum, and its index takes the gradient.
  Tensor z = leaf({1, kNaN, 5, 2, kNaN, kNaN}, {2, 3});
  auto [nv, ni] = z.max(1);
  EXPECT_EQ(ni.to_vector<int64_t>(), (std::vector<int64_t>{1, 1}));
  (nv * make({1, 2}, {2})).sum().backward();
  EXPECT_TRUE(matches(z.grad(), {2, 3}, {0, 1, 0, 0, 2, 0}));
}

TEST_P(PytorchParity, MaxOfEverythingSharesAmongTiesAndGoesToNaNs) {
  Tensor x = leaf({1, 5, 5, 2}, {4});
  x.max().backward();
  EXPECT_TRUE(matches(x.grad(), {4}, {0, 0.5, 0.5, 0}));
  Tensor y = leaf({1, kNaN, 5, kNaN}, {4});
  y.max().backward();
  EXPECT_TRUE(matches(y.grad(), {4}, {0, 0.5, 0, 0.5}));
  Tensor z = leaf({1, kNaN, -5, kNaN}, {4});
  z.min().backward();
  EXPECT_TRUE(matches(z.grad(), {4}, {0, 0.5, 0, 0.5}));
  // amax keeps PyTorch's amax rule: a NaN slice has no maximum to credit, so NaN.
  Tensor a = leaf({1, kNaN, 3, 2, 2, 1}, {2, 3});
  a.amax({1}).sum().backward();
  EXPECT_TRUE(matches(a.grad(), {2, 3}, {kNaN, kNaN, kNaN, 0.5, 0.5, 0}));
}

TEST_P(PytorchParity, StdGradientIsZeroWhereTheStdIsZero) {
  Tensor x = leaf({1, 1, 1, 1, 2, 4}, {2, 3}, float64);
  (x.std({1}) * make({1, 2}, {2}, float64)).sum().backward();
  EXPECT_TRUE(matches(x.grad(), {2, 3},
                      {0, 0, 0, -0.8728715609439697, -0.2182178902359925, 1.0910894511799618},
                      kFloat64Tol));
}

TEST_P(PytorchParity, PowGradientsAtZero) {
  Tensor a = leaf({0, 0, 2, 0}, {4}, float64);
  Tensor b = leaf({0, 1, 0, 2}, {4}, float64);
  pow(a, b).sum().backward();
  EXPECT_TRUE(matches(a.grad(), {4}, {0, 1, 0, 0}));
  EXPECT_TRUE(matches(b.grad(), {4}, {0, 0, std::log(2.0), 0}, kFloat64Tol));
  Tensor c = leaf({0, 3}, {2});
  c.pow(0).sum().backward();
  EXPECT_TRUE(matches(c.grad(), {2}, {0, 0}));
}

// pow's gradient multiplies as PyTorch's pow_backward: grad * (b * a^(b-1)). In float16
// b * a^(b-1) = 16 * 2^15 overflows, so PyTorch 1.13 gives inf for a gradient of 2^-10;
// the other order, (grad * b) * a^(b-1), gave 512.
TEST_P(PytorchParity, PowGradientMultipliesInPyTorchsOrder) {
  Tensor a = leaf({2}, {1}, float16);
  (pow(a, make({16}, {1}, int32)) * std::ldexp(1.0, -10)).sum().backward();
  EXPECT_TRUE(std::isinf(a.grad().to(float32).item<float>()));
}

TEST_P(PytorchParity, MaximumAndMinimumSplitTiesAndGiveNaNsToBoth) {
  // torch.maximum/minimum(a, b).backward(g) with g = [1, 2, 4, 8, 16]: a tie halves the
  // gradient, the loser gets 0, and where either side is NaN both get all of it.
  const std::vector<double> av = {1, kNaN, 2, 3, kInf}, bv = {1, 1, kNaN, 4, kInf};
  Tensor g = make({1, 2, 4, 8, 16}, {5});
  Tensor a = leaf(av, {5}), b = leaf(bv, {5});
  (maximum(a, b) * g).sum().backward();
  EXPECT_TRUE(matches(a.grad(), {5}, {0.5, 2, 4, 0, 8}));
  EXPECT_TRUE(matches(b.grad(), {5}, {0.5, 2, 4, 8, 8}));
  Tensor c = leaf(av, {5}), d = leaf(bv, {5});
  (minimum(c, d) * g).sum().backward();
  EXPECT_TRUE(matches(c.grad(), {5}, {0.5, 2, 4, 8, 8}));
  EXPECT_TRUE(matches(d.grad(), {5}, {0.5, 2, 4, 0, 8}));
  // Broadcast: the one b shares with both a's it ties (reference case maximum/1/0).
  Tensor e = leaf({2, 2}, {2}), f = leaf({2}, {1});
  maximum(e, f).sum().backward();
  EXPECT_TRUE(matches(e.grad(), {2}, {0.5, 0.5}));
  EXPECT_TRUE(matches(f.grad(), {1}, {1}));
}

TEST_P(PytorchParity, PointwiseGradientsAtNaNAndInf) {
  const std::vector<double> xv = {kNaN, -1, 0, 2, kInf, -kInf};
  Tensor three = make({3, 3, 3, 3, 3, 3}, {6});
  // relu: threshold_backward zeroes only where y <= 0, so NaN passes: [3, 0, 0, 3, 3, 0].
  Tensor r = leaf(xv, {6});
  (r.relu() * three).sum().backward();
  EXPECT_TRUE(matches(r.grad(), {6}, {3, 0, 0, 3, 3, 0}));
  // abs: grad * sgn(x), sgn(NaN) = 0: [0, -3, 0, 3, 3, -3].
  Tensor a = leaf(xv, {6});
  (a.abs() * three).sum().backward();
  EXPECT_TRUE(matches(a.grad(), {6}, {0, -3, 0, 3, 3, -3}));
  // l1_loss([nan, 1, -2], [0, 2, -2], reduction='none'): [0, -1, 0].
  Tensor l = leaf({kNaN, 1, -2}, {3});
  nn::functional::l1_loss(l, make({0, 2, -2}, {3}), nn::Reduction::None).sum().backward();
  EXPECT_TRUE(matches(l.grad(), {3}, {0, -1, 0}));
  // max(dim) of a 0-d NaN: the gradient passes (-1.75), as for min.
  Tensor m = leaf({kNaN}, {});
  (std::get<0>(m.max(0)) * -1.75).backward();
  EXPECT_TRUE(matches(m.grad(), {}, {-1.75}));
}

TEST_P(PytorchParity, ProdAndCumprodGradientsWithInfinities) {
  // With no zero anywhere PyTorch divides: prod([inf, 2]) gives [nan, inf].
  Tensor a = leaf({kInf, 2}, {2}, float64);
  a.prod().backward();
  EXPECT_TRUE(matches(a.grad(), {2}, {kNaN, kInf}));
  // With a zero anywhere it multiplies the others instead, in every slice:
  // [[inf, 2], [0, 3]].prod(1) gives [[2, inf], [3, 0]].
  Tensor b = leaf({kInf, 2, 0, 3}, {2, 2}, float64);
  b.prod({1}).sum().backward();
  EXPECT_TRUE(matches(b.grad(), {2, 2}, {2, kInf, 3, 0}));
  // prod over a dim of one passes the gradient, inf or not: [[0.25, -0.5]].
  Tensor c = leaf({kInf, -0.0}, {1, 2});
  (c.prod({0}) * make({0.25, -0.5}, {2})).sum().backward();
  EXPECT_TRUE(matches(c.grad(), {1, 2}, {0.25, -0.5}));
  // prod of everything with a zero: [[inf, 2, 0]] gives [[0, nan, inf]].
  Tensor d = leaf({kInf, 2, 0}, {1, 3});
  d.prod().backward();
  EXPECT_TRUE(matches(d.grad(), {1, 3}, {0, kNaN, kInf}));
  // prod() of everything with two zeros is 0 everywhere, even beside an inf.
  Tensor f = leaf({0, 2, 0, kInf}, {2, 2}, float64);
  f.prod().backward();
  EXPECT_TRUE(matches(f.grad(), {2, 2}, {0, 0, 0, 0}));
  // cumprod with zeros after an inf: the terms past the first zero are masked, and
  // y before the zero multiplies the sum from outside, as in PyTorch.
  Tensor h = leaf({kInf, 3.125, 0}, {3}, float64);
  (h.cumprod(0) * make({0.25, 0.5, 2}, {3}, float64)).sum().backward();
  EXPECT_TRUE(matches(h.grad(), {3}, {kNaN, kInf, kInf}));
  Tensor k = leaf({kInf, 0, 3, 2, kInf}, {5}, float64);
  (k.cumprod(0) * make({2, 0.5, -1.5, -0.25, -0.5}, {5}, float64)).sum().backward();
  EXPECT_TRUE(matches(k.grad(), {5}, {kNaN, -kInf, 0, 0, 0}));
  Tensor m = leaf({2, 0, 3, 0, 5}, {5}, float64);
  (m.cumprod(0) * make({1, 2, 3, 4, 5}, {5}, float64)).sum().backward();
  EXPECT_TRUE(matches(m.grad(), {5}, {1, 22, 0, 0, 0}));
  // cumprod along a dim of one passes the gradient: [[0.5, 2]].
  Tensor e = leaf({kInf, kNaN}, {1, 2});
  (e.cumprod(0) * make({0.5, 2}, {1, 2})).sum().backward();
  EXPECT_TRUE(matches(e.grad(), {1, 2}, {0.5, 2}));
}

TEST_P(PytorchParity, ProdOverSeveralDimsIsOneProdAfterAnother) {
  // PyTorch 1.13's prod takes one dim: x.prod(1, keepdim=True).prod(0).backward() for
  // [[inf, 2], [3, 4]] gives [[nan, nan], [inf, inf]] (the partial product inf meets
  // itself in y / x), not the products of the others [[24, inf], [inf, inf]].
  Tensor x = leaf({kInf, 2, 3, 4}, {2, 2});
  x.prod({0, 1}).backward();
  EXPECT_TRUE(matches(x.grad(), {2, 2}, {kNaN, kNaN, kInf, kInf}));
}

TEST_P(PytorchParity, HalfProdAndCumprodGradientsAreComputedInFloat32) {
  // The products of the others of [[256, 256, 0, 2^-10]] pass 65504 on the way (256·256)
  // but end at 64: PyTorch's float32 answer, x.float().prod(1) backward, is [0, 0, 64, 0].
  Tensor x = leaf({256, 256, 0, 0.0009765625}, {1, 4}, float16);
  x.prod({1}).sum().backward();
  EXPECT_EQ(x.grad().dtype(), float16);
  EXPECT_TRUE(matches(x.grad(), {1, 4}, {0, 0, 64, 0}));
  // cumprod([1024, 128, 2^-10]) passes through 131072 (inf in float16); with weights
  // [1, 0, 0.25] the float32 gradient is [1.03125, 0.25, 32768].
  Tensor c = leaf({1024, 128, 0.0009765625}, {3}, float16);
  (c.cumprod(0) * make({1, 0, 0.25}, {3}, float16)).sum().backward();
  EXPECT_TRUE(matches(c.grad(), {3}, {1.03125, 0.25, 32768}));
}

TEST_P(PytorchParity, InfinityNormGradientSharesAmongTiesAndGivesNaNsZero) {
  // torch.linalg.vector_norm(x, ord=±inf, dim=1) backward, float32 and float16 alike: ties
  // share the gradient, times sign(x); a NaN norm's NaN element gets sign(NaN) = 0.
  for (DType dtype : {float32, float16}) {
    SCOPED_TRACE(dtype_name(dtype));
    Tensor x = leaf({1, -3, 3, kNaN, 2, -2, 0.5, 1}, {2, 4}, dtype);
    (norm(x, kInf, {1}) * make({-1.5, 2}, {2}, dtype)).sum().backward();
    EXPECT_TRUE(matches(x.grad(), {2, 4}, {0, 0, 0, 0, 1, -1, 0, 0}));
    Tensor y = leaf({0.5, -0.5, 2, kInf, kNaN, 1, -4, 0.25}, {2, 4}, dtype);
    (norm(y, -kInf, {1}) * make({3, -1}, {2}, dtype)).sum().backward();
    EXPECT_TRUE(matches(y.grad(), {2, 4}, {1.5, -1.5, 0, 0, 0, 0, 0, 0}));
  }
}

TEST_P(PytorchParity, Atan2GradientWithAnIntegerOrBoolOperand) {
  // atan2(0.5, [True, False]).backward(ones): 1 / 1.25 + 0 = 0.8.
  Tensor a = leaf({0.5}, {});
  atan2(a, make({1, 0}, {2}, kbool)).sum().backward();
  EXPECT_TRUE(matches(a.grad(), {}, {0.8}, kFloat32Tol));
  // PyTorch 1.13 negates and squares a uint8 operand in uint8, wrapping around
  // (-3 is 253, 200² is 64): atan2(uint8 [3, 200], b).backward(ones) gives b.grad
  // [19.4615, 0.8716], and atan2(b, uint8 [3, 200]) gives [0.2308, 3.1128].
  Tensor b = leaf({-2, 0.5}, {2});
  atan2(make({3, 200}, {2}, uint8), b).sum().backward();
  EXPECT_TRUE(matches(b.grad(), {2}, {19.461538314819336, 0.8715953230857849}, kFloat32Tol));
  Tensor c = leaf({-2, 0.5}, {2});
  atan2(c, make({3, 200}, {2}, uint8)).sum().backward();
  EXPECT_TRUE(matches(c.grad(), {2}, {0.23076924681663513, 3.112840414047241}, kFloat32Tol));
  // A float16 operand against integers from 256 on: a² + b² does not fit float16, so the
  // gradient is computed in float32 (PyTorch's float32 answer, rounded to float16).
  Tensor d = leaf({0.5, -2}, {2}, float16);
  atan2(d, make({300, -400}, {2}, int32)).sum().backward();
  EXPECT_TRUE(matches(d.grad(), {2}, {0.00333404541015625, -0.0025005340576171875}, kFloat16Tol));
  Tensor e = leaf({0.5, -2}, {2}, float16);
  atan2(make({300, -400}, {2}, int64), e).sum().backward();
  EXPECT_TRUE(matches(e.grad(), {2}, {-0.00333404541015625, 0.0025005340576171875}, kFloat16Tol));
}

TEST_P(PytorchParity, HalfStdIsComputedInFloat32) {
  // torch.tensor([-3.25, -624, 224], dtype=float16).std() is 439 (the variance, 192721,
  // does not fit float16); its gradient is [0.1493, -0.5576, 0.4082].
  Tensor x = leaf({-3.25, -624, 224}, {3}, float16);
  Tensor s = x.std();
  EXPECT_EQ(s.dtype(), float16);
  EXPECT_TRUE(matches(s, {}, {439}));
  s.backward();
  EXPECT_TRUE(matches(x.grad(), {3}, {0.14929199, -0.55761719, 0.40820312}, kFloat16Tol));
}

TEST_P(PytorchParity, LayerNormGradientWithAnInfiniteWeight) {
  const std::vector<double> xv = {0, 1, 0.5, -1, -1, 1, -1, -0.5, -1, -1};
  Tensor g = make({0.5, -1.5, -1.25, -0.5, 2, 0, 2, 1.5, -1.75, 1}, {2, 5});
  Tensor bias = make({0.5, 1, 0, -0.5, -0.5}, {5});
  Tensor x = leaf(xv, {2, 5});
  (nn::functional::layer_norm(x, {5}, make({-3.375, kInf, 3.5, -3.75, 0.5}, {5}), bias) * g)
      .sum()
      .backward();
  EXPECT_TRUE(
      matches(x.grad(), {2, 5}, {kNaN, kNaN, kInf, kNaN, kNaN, kNaN, kNaN, kNaN, kNaN, kNaN}));
  // The same with the weight's inf read as 1.5, from F.layer_norm(...).backward(g).
  Tensor y = leaf(xv, {2, 5});
  (nn::functional::layer_norm(y, {5}, make({-3.375, 1.5, 3.5, -3.75, 0.5}, {5}), bias) * g)
      .sum()
      .backward();
  EXPECT_TRUE(
      matches(y.grad(), {2, 5},
              {-0.4431166648864746, 1.922539472579956, -2.268077850341797, 0.9411978721618652,
               -0.1525435447692871, -0.7060611248016357, -1.163212537765503, 2.824026107788086,
               3.435917377471924, -4.390671730041504},
              kFloat32Tol));
}

TEST_P(PytorchParity, EvalBatchNormWithStridedStatisticsAndWeight) {
  // Reference cases batch_norm/1/33 and batch_norm/3/12. The expected values are
  // PyTorch 1.13's for the same tensors made contiguous: with the strided ones, its CPU
  // backward misreads them (x.grad [-1.34, -2.0, -0.89, 1.75] and weight.grad
  // [-2.60, -6.14] here, and a weight gradient of 1.5e91 in the second case, read from
  // memory it never wrote), which Kiln does not copy.
  Tensor x = leaf({-0.4375, 3.5625, -2.25, 0.5625}, {2, 2}, float64);
  Tensor mean_base = make({1.5625, 1.8125, -3.3125, -1.0, -0.0625}, {5}, float64);
  Tensor weight_base = leaf({1, -1, 1, -1, -0.5}, {5}, float64);
  Tensor y = nn::functional::batch_norm(
      x, mean_base.slice(0, 1, 5, 3), make({1.25, 1}, {2}, float64), weight_base.slice(0, 1, 5, 3),
      make({-0.6875, -3.1875}, {2}, float64), false);
  (y * make({1.5, -2, 1, 1.75}, {2, 2}, float64)).sum().backward();
  EXPECT_TRUE(
      matches(x.grad(), {2, 2},
              {-1.3416354199689269, 0.9999950000374997, -0.894423613312618, -0.8749956250328123},
              kFloat64Tol));
  EXPECT_TRUE(matches(weight_base.grad(), {5}, {0, -6.652275624012597, 0, 0, -6.1562192189808576},
                      kFloat64Tol));
  Tensor w = leaf({-2.4375, 3}, {2}, float64);
  Tensor z = nn::functional::batch_norm(
      make({-0.5625, -2.6875, 1.5625, 2.5, 3.875, -3.4375}, {3, 2}, float64),
      make({-2.3125, 1.1875, 1.875}, {3}, float64).slice(0, 0, 3, 2),
      make({0.75, 0.5}, {2}, float64), w, make({-4, 0.375}, {2}, float64), false);
  (z * make({-1.5, 1, -0.5, 1.75, 1.5, 0}, {3, 2}, float64)).sum().backward();
  EXPECT_TRUE(matches(w.grad(), {2}, {5.448706840885902, -4.90550423968455}, kFloat64Tol));
}

TEST_P(PytorchParity, TrainingBatchNormUpdatesStridedRunningStatisticsInPlace) {
  // PyTorch 1.13 updates a sliced running_mean / running_var through the view:
  // F.batch_norm(x, rm_base[0::2], rv_base[1::3], training=True, momentum=0.25) leaves
  // rm_base [7.75, 20, 23.125, 40] and rv_base [1, 2.5, 3, 4, 5.0625].
  Tensor mean_base = make({10, 20, 30, 40}, {4}, float64);
  Tensor var_base = make({1, 2, 3, 4, 5}, {5}, float64);
  Tensor y = nn::functional::batch_norm(make({1, 2, 3, 5, -1, 0.5}, {3, 2}, float64),
                                        mean_base.slice(0, 0, 4, 2), var_base.slice(0, 1, 5, 3), {},
                                        {}, true, 0.25);
  EXPECT_TRUE(matches(y, {3, 2},
                      {0, -0.2672608601114684, 1.2247425750014138, 1.3363043005573418,
                       -1.2247425750014138, -1.0690434404458735},
                      kFloat64Tol));
  EXPECT_TRUE(matches(mean_base, {4}, {7.75, 20, 23.125, 40}, kFloat64Tol));
  EXPECT_TRUE(matches(var_base, {5}, {1, 2.5, 3, 4, 5.0625}, kFloat64Tol));
  // An expanded one has one element for every channel: no in-place update can be right.
  EXPECT_KILN_ERROR(nn::functional::batch_norm(make({1, 2, 3, 5}, {2, 2}, float64),
                                               make({7}, {1}, float64).expand({2}),
                                               make({1, 1}, {2}, float64), {}, {}, true),
                    "batch_norm", "overlap");
}

// -- dtypes and values ------------------------------------------------------------------

TEST_P(PytorchParity, ZeroDimTensorsPromoteOnlyAcrossCategories) {
  const Tensor f32_0d = make({2}, {}, float32);
  EXPECT_EQ((make({1, 1}, {2}, float16) * f32_0d).dtype(), float16);
  EXPECT_EQ((f32_0d * make({1, 1}, {2}, bfloat16)).dtype(), bfloat16);
  EXPECT_EQ((make({1, 1}, {2}, int32) + make({1.5}, {}, float64)).dtype(), float64);
  EXPECT_EQ((make({1, 1}, {2}, uint8) + make({7}, {}, int64)).dtype(), uint8);
  EXPECT_EQ((make({1, 0}, {2}, kbool) + make({7}, {}, int32)).dtype(), int32);
  EXPECT_EQ((make({1}, {}, int32) + make({1.5}, {}, float64)).dtype(), float64);  // both 0-d
  EXPECT_EQ(where(make({1, 0}, {2}, kbool), make({1, 1}, {2}, float16), f32_0d).dtype(), float16);
  Tensor h = make({1, 2}, {2}, float16);
  h.mul_(f32_0d);  // stays float16 in place too
  EXPECT_TRUE(matches(h, {2}, {2, 4}));
}

TEST_P(PytorchParity, IntegerPowIsExactInTheIntegerDtype) {
  Tensor a = from_vector<int64_t>({16777217, 0, 2, 1, -1, -1, 3}, {7}, opts(int64));
  Tensor b = from_vector<int64_t>({2, -1, -1, -2, -3, -2, 0}, {7}, opts(int64));
  Tensor y = pow(a, b);
  EXPECT_EQ(y.dtype(), int64);
  EXPECT_EQ(y.to_vector<int64_t>(), (std::vector<int64_t>{281475010265089, 0, 0, 1, -1, 1, 1}));
  EXPECT_EQ(a.pow(2).dtype(), int64);
  EXPECT_EQ(pow(make({3}, {1}, uint8), make({7}, {1}, uint8)).to_vector<uint8_t>(),
            (std::vector<uint8_t>{139}));  // 2187 wraps to 139
  EXPECT_EQ(make({2}, {1}, int32).pow(40).to_vector<int32_t>(), (std::vector<int32_t>{0}));
  EXPECT_EQ(pow(2, make({3}, {1}, int64)).to_vector<int64_t>(), (std::vector<int64_t>{8}));
  Tensor f = make({2}, {1}, int64).pow(0.5);
  EXPECT_EQ(f.dtype(), float32);
  EXPECT_TRUE(matches(f, {1}, {std::sqrt(2.0)}, kFloat32Tol));
  EXPECT_KILN_ERROR(pow(make({1}, {1}, kbool), make({1}, {1}, kbool)), "pow", "bool");
}

TEST_P(PytorchParity, IntegerScalarsAreExactAndWrap) {
  const int64_t big = int64_t{1} << 53;
  Tensor l = from_vector<int64_t>({big}, {1}, opts(int64));
  EXPECT_FALSE((l == big + 1).item<bool>());
  EXPECT_TRUE((l + 1 == big + 1).item<bool>());
  EXPECT_EQ((l + (big + 1)).item<int64_t>(), 2 * big + 1);
  EXPECT_EQ(full({2}, INT64_MAX, opts(int64)).to_vector<int64_t>(),
            (std::vector<int64_t>{INT64_MAX, INT64_MAX}));
  // uint8 and int32 wrap as two's complement, as PyTorch's do.
  Tensor u = make({5, 200}, {2}, uint8);
  EXPECT_EQ((u + (-3)).to_vector<uint8_t>(), (std::vector<uint8_t>{2, 197}));
  EXPECT_EQ((u + 300).to_vector<uint8_t>(), (std::vector<uint8_t>{49, 244}));
  Tensor i = make({5}, {1}, int32);
  EXPECT_EQ((i + (int64_t{1} << 31)).to_vector<int32_t>(), (std::vector<int32_t>{-2147483643}));
}

TEST_P(PytorchParity, ValuesThatDoNotFitTheDtypeAreRefused) {
  EXPECT_KILN_ERROR(full({2}, 300, opts(uint8)), "300", "uint8", "overflow");
  EXPECT_KILN_ERROR(full({2}, 1e300, opts(int64)), "int64", "overflow");
  EXPECT_KILN_ERROR(full({2}, kNaN, opts(int64)), "int64", "overflow");
  EXPECT_KILN_ERROR(full({2}, 255.9, opts(uint8)), "uint8", "overflow");
  EXPECT_KILN_ERROR(full({2}, 1e10, opts(float16)), "float16", "overflow");
  Tensor mask = make({1, 0}, {2}, kbool);
  EXPECT_KILN_ERROR(zeros({2}, opts(uint8)).masked_fill(mask, 300), "uint8", "overflow");
  EXPECT_KILN_ERROR(zeros({2}, opts(int32)).masked_fill(mask, -kInf), "int32", "overflow");
  Tensor t = zeros({2}, opts(uint8));
  EXPECT_KILN_ERROR(t.index_put_({make({0}, {1}, int64)}, 256), "uint8", "overflow");
  // What fits is written: -1 wraps into uint8, 2.7 truncates, inf fits a float.
  EXPECT_EQ(full({2}, -1, opts(uint8)).to_vector<uint8_t>(), (std::vector<uint8_t>{255, 255}));
  EXPECT_EQ(full({1}, 2.7, opts(int64)).item<int64_t>(), 2);
  EXPECT_TRUE(matches(zeros({2}, opts()).masked_fill(mask, -kInf), {2}, {-kInf, 0}));
  EXPECT_EQ(full({1}, 5, opts(kbool)).item<bool>(), true);
}

TEST_P(PytorchParity, InPlaceOpsTakeAWiderOperandOfAKindTheyHold) {
  Tensor f = make({1, 1}, {2}, float32);
  f.add_(make({1e-10, 2}, {2}, float64));
  EXPECT_TRUE(matches(f, {2}, {1, 3}));
  EXPECT_EQ(f.dtype(), float32);
  Tensor h = make({1.5, 2}, {2}, float16);
  h.mul_(make({2, 0.5}, {2}, float32));
  EXPECT_TRUE(matches(h, {2}, {3, 1}));
  Tensor i = make({2147483647, 5}, {2}, int32);
  i.add_(from_vector<int64_t>({1, int64_t{1} << 40}, {2}, opts(int64)));
  EXPECT_EQ(i.to_vector<int32_t>(), (std::vector<int32_t>{-2147483647 - 1, 5}));
  // A result of a higher category still cannot be stored.
  Tensor n = make({1, 2}, {2}, int32);
  EXPECT_KILN_ERROR(n.add_(make({0.5, 0.5}, {2}, float32)), "add_", "float32", "int32");
}

TEST_P(PytorchParity, ClampPromotesForFractionalBoundsAndPropagatesANaNBound) {
  Tensor i = make({0, 3}, {2}, int32);
  Tensor y = clamp(i, 0.5, 1.5);
  EXPECT_EQ(y.dtype(), float32);
  EXPECT_TRUE(matches(y, {2}, {0.5, 1.5}));
  // Any floating bound promotes (PyTorch: 2.0 is a Python float); integer bounds keep
  // the dtype, and an int64 bound is exact beyond 2^53.
  EXPECT_EQ(clamp(i, 1.0, 2.0).dtype(), float32);
  EXPECT_EQ(clamp(i, 1, 2).dtype(), int32);
  EXPECT_KILN_ERROR(i.clamp_(0.5, std::nullopt), "clamp_", "int32");
  EXPECT_KILN_ERROR(i.clamp_(1.0, std::nullopt), "clamp_", "int32");
  const int64_t big = (int64_t{1} << 53) + 1;
  Tensor l = make({0, 1}, {2}, int64) * (big + 1);  // {0, 2^53 + 2}, exact
  EXPECT_EQ(clamp(l, big, std::nullopt).to_vector<int64_t>(), (std::vector<int64_t>{big, big + 1}));
  EXPECT_EQ(clamp(l, std::nullopt, big).to_vector<int64_t>(), (std::vector<int64_t>{0, big}));
  l.clamp_(big, std::nullopt);
  EXPECT_EQ(l.to_vector<int64_t>(), (std::vector<int64_t>{big, big + 1}));
  // A NaN bound skips the range check of the other (PyTorch 1.13: int64 tensor,
  // min NaN, max 1e300 gives NaN in float32).
  EXPECT_TRUE(matches(clamp(make({1, 2}, {2}, int64), kNaN, 1e300), {2}, {kNaN, kNaN}));
  Tensor x = make({-1, 0, 2}, {3}).requires_grad_();
  Tensor z = clamp(x, kNaN, std::nullopt);
  EXPECT_TRUE(matches(z, {3}, {kNaN, kNaN, kNaN}));
  z.sum().backward();
  EXPECT_TRUE(matches(x.grad(), {3}, {0, 0, 0}));
  EXPECT_TRUE(matches(clamp(make({-1, 2}, {2}), std::nullopt, kNaN), {2}, {kNaN, kNaN}));
}

TEST_P(PytorchParity, IntegerScalarsKeepTheirValueInTrueDivision) {
  // uint8 / -3: the scalar is -3 (not 253 wrapped into uint8) in float32.
  EXPECT_TRUE(matches(make({6, 9}, {2}, uint8) / -3, {2}, {-2, -3}));
  EXPECT_EQ((make({6, 9}, {2}, uint8) / -3).dtype(), float32);
  // A 0-d integer tensor too: the scalar is not wrapped into int32 (PyTorch 1.13:
  // tensor(3, int32) / -2**63 is -3.2526e-19, and div(2**40) the same way).
  const Tensor three = make({3}, {}, int32);
  for (const Tensor& q : {three / INT64_MIN, three / (int64_t{1} << 40), INT64_MIN / three}) {
    EXPECT_EQ(q.dtype(), float32);
    EXPECT_TRUE(std::isfinite(q.item<float>()));
  }
  EXPECT_FLOAT_EQ((three / INT64_MIN).item<float>(), -3.2526065e-19f);
  EXPECT_FLOAT_EQ((three / (int64_t{1} << 40)).item<float>(), 2.7284841e-12f);
}

TEST_P(PytorchParity, DivGradientOfTheDivisorAvoidsOverflow) {
  // -grad * ((a / b) / b), PyTorch's order: a zero numerator over a denormal divisor
  // gives 0, not 0 * inf = NaN (PyTorch 1.13: 0.0 / tensor(-7.17e-43) grad -0).
  Tensor b = make({-7.174648137343064e-43, 2}, {2}).requires_grad_();
  (0.0 / b).sum().backward();
  EXPECT_TRUE(matches(b.grad(), {2}, {0, 0}));
}

TEST_P(PytorchParity, SoftmaxOfAZeroDimTensorIsALineOfOne) {
  // exp(x - x): NaN for +-inf and NaN, as PyTorch; the gradient flows (and is 0).
  Tensor x = make({2.5}, {}).requires_grad_();
  Tensor y = nn::functional::softmax(x, 0);
  EXPECT_EQ(y.dim(), 0);
  EXPECT_EQ(y.item<float>(), 1.0f);
  EXPECT_EQ(nn::functional::log_softmax(x, -1).item<float>(), 0.0f);
  (y * 3).backward();
  EXPECT_TRUE(matches(x.grad(), {}, {0}));
  EXPECT_TRUE(std::isnan(nn::functional::softmax(make({kInf}, {}), 0).item<float>()));
  EXPECT_TRUE(std::isnan(nn::functional::log_softmax(make({-kInf}, {}), 0).item<float>()));
}

TEST_P(PytorchParity, IndexSelectChecksTheIndexEvenWhenNothingIsCopied) {
  // PyTorch 1.13: index_select(zeros(4, 2, 0), 0, [4]) raises though the result is empty.
  const Tensor x = zeros({4, 2, 0}, opts());
  EXPECT_KILN_ERROR(index_select(x, 0, make({4}, {1}, int64)), "index_select", "4", "out of range");
  EXPECT_KILN_ERROR(index_select(x, 1, make({-1}, {1}, int64)), "index_select", "-1");
  EXPECT_EQ(index_select(x, 0, make({3, 0}, {2}, int64)).shape(), IntArrayRef({2, 2, 0}));
}

TEST_P(PytorchParity, NumbersWrittenByClampAndWhereMustFit) {
  EXPECT_KILN_ERROR(clamp(make({1, 2}, {2}), 1e300, std::nullopt), "clamp", "overflow");
  EXPECT_KILN_ERROR(clamp(make({1, 2}, {2}), -1e300, kInf), "clamp", "overflow");
  EXPECT_KILN_ERROR(clamp(make({1, 2}, {2}, int32), 0, int64_t{10000000000}), "clamp", "overflow");
  EXPECT_KILN_ERROR(clamp(make({1, 2}, {2}, uint8), -4, std::nullopt), "clamp", "wraps it to 252");
  Tensor cond = make({1, 0}, {2}, kbool);
  EXPECT_KILN_ERROR(where(cond, make({1, 1}, {2}, float16), 1e10), "where", "overflow");
  EXPECT_KILN_ERROR(where(cond, 70000.0, make({1, 1}, {2}, float16)), "where", "overflow");
  EXPECT_TRUE(matches(where(cond, make({1, 1}, {2}, float16), 2), {2}, {1, 2}));
}

TEST_P(PytorchParity, BoolArithmeticIsLogical) {
  Tensor b = make({1, 0}, {2}, kbool), c = make({1, 1}, {2}, kbool);
  EXPECT_EQ((b + c).dtype(), kbool);
  EXPECT_EQ((b + c).to_vector<bool>(), (std::vector<bool>{true, true}));
  EXPECT_EQ((b * c).to_vector<bool>(), (std::vector<bool>{true, false}));
  EXPECT_EQ(maximum(b, c).to_vector<bool>(), (std::vector<bool>{true, true}));
  EXPECT_EQ(minimum(b, c).to_vector<bool>(), (std::vector<bool>{true, false}));
  EXPECT_KILN_ERROR(b - c, "sub", "bool");
  EXPECT_KILN_ERROR(b - make({1, 1}, {2}, int64), "sub", "bool");
  EXPECT_TRUE(b.amax().item<bool>());
  EXPECT_FALSE(b.amin().item<bool>());
  EXPECT_EQ(b.max().dtype(), kbool);
  auto [v, i] = b.max(0);
  EXPECT_TRUE(v.item<bool>());
  EXPECT_EQ(i.item<int64_t>(), 0);
}

TEST_P(PytorchParity, Uint8TakesTheSignOps) {
  Tensor u = make({0, 5, 255}, {3}, uint8);
  EXPECT_EQ(u.abs().to_vector<uint8_t>(), (std::vector<uint8_t>{0, 5, 255}));
  EXPECT_EQ(u.neg().to_vector<uint8_t>(), (std::vector<uint8_t>{0, 251, 1}));
  EXPECT_EQ(u.relu().to_vector<uint8_t>(), (std::vector<uint8_t>{0, 5, 255}));
  EXPECT_EQ(u.sign().to_vector<uint8_t>(), (std::vector<uint8_t>{0, 1, 1}));
  EXPECT_EQ(u.clamp(3.0, 100.0).to_vector<uint8_t>(), (std::vector<uint8_t>{3, 5, 100}));
  EXPECT_EQ(u.sign().dtype(), uint8);
  // any/all of uint8 are uint8 in PyTorch.
  EXPECT_EQ(make({0, 2}, {2}, uint8).any().dtype(), uint8);
  EXPECT_EQ(make({0, 2}, {1, 2}, uint8).all({1}).to_vector<uint8_t>(), (std::vector<uint8_t>{0}));
}

TEST_P(PytorchParity, VarianceWithTooLargeACorrectionIsInfOrNaN) {
  EXPECT_TRUE(matches(make({1, 2}, {2}).var({0}, 2), {}, {kInf}));
  EXPECT_TRUE(matches(make({1, 1}, {2}).var({0}, 2), {}, {kNaN}));
  EXPECT_TRUE(matches(make({1}, {1}).var(), {}, {kNaN}));
  EXPECT_TRUE(matches(make({1, 3}, {2}).std({0}, 3), {}, {kInf}));
  // Reference case std/7/88: bfloat16 denormals whose float32 squares underflow; PyTorch
  // 1.13 sums them in double, so the sum is not 0 and the std is inf, not NaN.
  EXPECT_TRUE(
      matches(make({-7.346839692639297e-40, 7.346839692639297e-40}, {1, 2}, bfloat16).std({1}, 2),
              {1}, {kInf}));
}

TEST_P(PytorchParity, VarianceGradientWithNoDegreesOfFreedom) {
  // Reference cases var/1/89, var/4/74, var/7/98: for a 0-d input or no dims and
  // N = correction, PyTorch 1.13's gradient is grad · 2/0 (torch.var(x, dim=0,
  // correction=1) of a 0-d 1.5, backward(-2.0) gives -inf; backward(0.0) gives NaN).
  for (DType dtype : {float16, bfloat16, float32, float64}) {
    SCOPED_TRACE(dtype_name(dtype));
    Tensor x = leaf({1.5}, {}, dtype);
    (x.var({0}, 1) * -2.0).backward();
    EXPECT_TRUE(matches(x.grad(), {}, {-kInf}));
    Tensor y = leaf({1.5}, {1, 1}, dtype);
    y.var({}, 1, true).sum().backward();
    EXPECT_TRUE(matches(y.grad(), {1, 1}, {kInf}));
  }
  // With dims the x − mean factor stays: inf · 0 = NaN (torch.var(x, dim=0) of [1.5]).
  Tensor z = leaf({1.5}, {1});
  z.var({0}, 1).backward();
  EXPECT_TRUE(matches(z.grad(), {1}, {kNaN}));
}

TEST_P(PytorchParity, SmallerCornersOfTheApi) {
  EXPECT_TRUE(matches(norm(make({3, -4}, {2}), -kInf), {}, {3}));
  Tensor s = index_select(make({5}, {}), 0, make({0}, {1}, int64));
  EXPECT_TRUE(matches(s, {}, {5}));
  EXPECT_KILN_ERROR(nn::functional::pad(make({1, 2}, {1, 1, 2}), {3, 0}, "circular"), "circular",
                    "more than once");
}

// -- indexing ---------------------------------------------------------------------------

TEST_P(PytorchParity, ZeroDimIntegerIndexIsAnInteger) {
  Tensor x = arange(24, opts(int64)).reshape({2, 3, 4});
  Tensor one = make({1}, {}, int64);
  EXPECT_EQ(x.index({one, Slice(), make({0, 2}, {2}, int64)}).shape(), IntArrayRef({3, 2}));
  EXPECT_EQ(x.index({Slice(), make({-1}, {}, int32)}).shape(), IntArrayRef({2, 4}));
  EXPECT_EQ(x.index({one}).to_vector<int64_t>(), x.select(0, 1).to_vector<int64_t>());
}

TEST_P(PytorchParity, HugeSliceStepsDoNotOverflow) {
  Tensor a = arange(5, opts(int64));
  EXPECT_EQ(a.index({Slice(0, 5, INT64_MAX)}).to_vector<int64_t>(), (std::vector<int64_t>{0}));
  EXPECT_EQ(a.index({Slice(1, indexing::None, INT64_MAX - 1)}).to_vector<int64_t>(),
            (std::vector<int64_t>{1}));
  EXPECT_EQ(a.index({Slice(INT64_MIN, INT64_MAX, 2)}).to_vector<int64_t>(),
            (std::vector<int64_t>{0, 2, 4}));
}

TEST_P(PytorchParity, IndexPutKeepsNegativeZeroAndTakesBoolAndEmptyTensors) {
  Tensor z = zeros({2, 2}, opts());
  z.index_put_({make({0, 1}, {2}, int64), make({0, 1}, {2}, int64)}, make({-0.0, -0.0}, {2}));
  const auto v = z.to_vector<double>();
  EXPECT_TRUE(std::signbit(v[0]) && std::signbit(v[3]));
  EXPECT_FALSE(std::signbit(v[1]));
  Tensor b = zeros({3}, opts(kbool));
  b.index_put_({make({0, 2}, {2}, int64)}, make({1, 1}, {2}, kbool));
  EXPECT_EQ(b.to_vector<bool>(), (std::vector<bool>{true, false, true}));
  Tensor e = zeros({0, 3}, opts());
  e.index_put_({from_vector<int64_t>({}, {0}, opts(int64))}, 1.0);
  EXPECT_EQ(e.shape(), IntArrayRef({0, 3}));
  Tensor f = zeros({2, 0}, opts());
  f.index_put_({make({0, 1}, {2}, int64)}, zeros({2, 0}, opts()));
  EXPECT_EQ(f.shape(), IntArrayRef({2, 0}));
}

// PyTorch 1.13 checks index_add's index even when src has no elements to add.
TEST_P(PytorchParity, IndexAddChecksTheIndexWithNothingToAdd) {
  Tensor x = zeros({0, 1}, opts(bfloat16));
  EXPECT_KILN_ERROR(index_add(x, -1, make({1, 0, 0}, {3}, int64), zeros({0, 3}, opts(bfloat16))),
                    "index_add", "index 1", "size 1");
  EXPECT_EQ(index_add(x, -1, make({0, 0}, {2}, int64), zeros({0, 2}, opts(bfloat16))).numel(), 0);
}

TEST_P(PytorchParity, BoolScatterAddAndIndexAddAreALogicalOr) {
  Tensor b = zeros({3}, opts(kbool));
  EXPECT_EQ(b.scatter_add(0, make({0, 0}, {2}, int64), make({1, 1}, {2}, kbool)).to_vector<bool>(),
            (std::vector<bool>{true, false, false}));
  EXPECT_EQ(b.index_add(0, make({0, 0}, {2}, int64), make({1, 1}, {2}, kbool)).to_vector<bool>(),
            (std::vector<bool>{true, false, false}));
}

TEST_P(PytorchParity, OutOfRangeIndicesAreNamedAsWritten) {
  Tensor x = zeros({3}, opts());
  EXPECT_KILN_ERROR(x.index({make({-5}, {1}, int64)}), "-5");
  Tensor m = zeros({3, 3}, opts());
  EXPECT_KILN_ERROR(m.index({make({0, -5}, {2}, int64), make({0, 1}, {2}, int64)}), "-5",
                    "out of range", "size 3");
  EXPECT_KILN_ERROR(m.index({make({0, 1}, {2}, int64), make({0, 7}, {2}, int64)}), "7", "size 3");
}

TEST_P(PytorchParity, OneDimensionalFftsRefuseNonPositiveN) {
  Tensor x = make({1, 2, 3, 4}, {4});
  EXPECT_KILN_ERROR(fft::fft(x, -1), "fft", "-1");
  EXPECT_KILN_ERROR(fft::ifft(x, -1), "ifft", "-1");
  EXPECT_KILN_ERROR(fft::irfft(x, -1), "irfft", "-1");
  EXPECT_KILN_ERROR(fft::rfft(x, 0), "rfft", "0");
}

// PyTorch 1.13 skips a 1-D tensor of size 0 in cat whatever the others' rank (its legacy
// rule), and returns it for a list of only such tensors, with no check of the dim.
TEST_P(PytorchParity, CatSkipsOneDimensionalEmptyTensors) {
  Tensor acc = zeros({0}, opts(float64)).requires_grad_();
  Tensor x = make({1, 2, 3, 4, 5, 6}, {2, 3}).requires_grad_();
  Tensor y = cat({acc, x, zeros({0}, opts(kbool))}, 1);
  EXPECT_EQ(y.shape().vec(), (std::vector<int64_t>{2, 3}));
  EXPECT_EQ(y.dtype(), float64);  // the skipped tensors still take part in the dtype
  EXPECT_TRUE(matches(y, {2, 3}, {1, 2, 3, 4, 5, 6}));
  (y * 2).sum().backward();
  EXPECT_TRUE(matches(x.grad(), {2, 3}, {2, 2, 2, 2, 2, 2}));
  EXPECT_EQ(acc.grad().shape().vec(), (std::vector<int64_t>{0}));
  EXPECT_EQ(cat({zeros({0}, opts(kbool))}, 2).shape().vec(), (std::vector<int64_t>{0}));
  // A [0, 3] tensor is not legacy-empty: its rank still has to match.
  EXPECT_KILN_ERROR(cat({zeros({0, 3}, opts()), zeros({3}, opts())}, 0), "cat", "dimensions");
  EXPECT_TRUE(matches(cat({zeros({0, 3}, opts()), make({1, 2, 3}, {1, 3})}, 0), {1, 3}, {1, 2, 3}));
}

KILN_INSTANTIATE_FOR_EVERY_DEVICE(PytorchParity);

}  // namespace
}  // namespace kiln::test
