// Corners where Kiln once disagreed with PyTorch 1.13 (issue 38), on every device: the
// gradients of reductions over size-1 dims, ties and NaN; std, pow and prod at zero;
// type promotion with 0-d tensors; integer scalars kept exact or wrapped; values that
// do not fit a dtype; in-place ops with a wider operand; clamp's bounds; indexing with
// 0-d index tensors, huge steps, -0.0 and bool tensors. Every expected value was
// printed by Debian's python3-torch 1.13.1 for the same inputs.
#include <cmath>
#include <cstdint>
#include <limits>

#include "kiln/fft.h"
#include "kiln/indexing.h"
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
  EXPECT_EQ(clamp(i, 1.0, 2.0).dtype(), int32);  // whole-number bounds keep the dtype
  EXPECT_KILN_ERROR(i.clamp_(0.5, std::nullopt), "clamp_", "int32");
  Tensor x = make({-1, 0, 2}, {3}).requires_grad_();
  Tensor z = clamp(x, kNaN, std::nullopt);
  EXPECT_TRUE(matches(z, {3}, {kNaN, kNaN, kNaN}));
  z.sum().backward();
  EXPECT_TRUE(matches(x.grad(), {3}, {0, 0, 0}));
  EXPECT_TRUE(matches(clamp(make({-1, 2}, {2}), std::nullopt, kNaN), {2}, {kNaN, kNaN}));
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

KILN_INSTANTIATE_FOR_EVERY_DEVICE(PytorchParity);

}  // namespace
}  // namespace kiln::test
