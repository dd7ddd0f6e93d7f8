// Creation functions on the default device (cpu:0 in this test's environment).
#include <cmath>
#include <limits>

#include "support/kiln_test.h"

namespace kiln {
namespace {

using test::matches;

TEST(Creation, DefaultsAreFloat32OnTheDefaultDevice) {
  auto x = zeros({2, 3});
  EXPECT_EQ(x.dtype(), float32);
  EXPECT_EQ(x.device(), default_device());
  EXPECT_EQ(x.device(), Device("cpu", 0));
  EXPECT_EQ(x.shape(), IntArrayRef({2, 3}));
  EXPECT_EQ(x.dim(), 2);
  EXPECT_EQ(x.numel(), 6);
  EXPECT_EQ(x.size(0), 2);
  EXPECT_EQ(x.size(-1), 3);
  EXPECT_EQ(x.element_size(), 4u);
  EXPECT_TRUE(x.is_contiguous());
  EXPECT_EQ(x.strides(), IntArrayRef({3, 1}));
  EXPECT_EQ(x.storage_offset(), 0);
}

TEST(Creation, ZerosOnesFull) {
  EXPECT_TRUE(matches(zeros({2, 2}), {2, 2}, {0, 0, 0, 0}));
  EXPECT_TRUE(matches(ones({3}), {3}, {1, 1, 1}));
  EXPECT_TRUE(matches(full({2, 1}, 2.5), {2, 1}, {2.5, 2.5}));
  auto i = full({3}, 7, int64);
  EXPECT_EQ(i.dtype(), int64);
  EXPECT_EQ(i.to_vector<int64_t>(), (std::vector<int64_t>{7, 7, 7}));
  auto b = ones({2}, kbool);
  EXPECT_EQ(b.dtype(), kbool);
  EXPECT_EQ(b.to_vector<bool>(), (std::vector<bool>{true, true}));
  auto d = full({2}, -1.25, TensorOptions().dtype(float64));
  EXPECT_EQ(d.dtype(), float64);
  EXPECT_TRUE(matches(d, {2}, {-1.25, -1.25}));
}

TEST(Creation, LikeFunctionsKeepShapeDTypeAndDevice) {
  auto x = full({2, 3}, 4, int32);
  for (const Tensor& y : {zeros_like(x), ones_like(x), full_like(x, 9), empty_like(x)}) {
    EXPECT_EQ(y.shape(), x.shape());
    EXPECT_EQ(y.dtype(), int32);
    EXPECT_EQ(y.device(), x.device());
    EXPECT_FALSE(y.shares_storage_with(x));
  }
  EXPECT_EQ(zeros_like(x).to_vector<int32_t>(), std::vector<int32_t>(6, 0));
  EXPECT_EQ(ones_like(x).to_vector<int32_t>(), std::vector<int32_t>(6, 1));
  EXPECT_EQ(full_like(x, 9).to_vector<int32_t>(), std::vector<int32_t>(6, 9));
}

TEST(Creation, EmptyAndZeroDimTensors) {
  auto e = empty({0, 3});
  EXPECT_EQ(e.numel(), 0);
  EXPECT_EQ(e.shape(), IntArrayRef({0, 3}));
  EXPECT_TRUE(e.to_vector<float>().empty());
  auto z = zeros({4, 0, 2}, int64);
  EXPECT_EQ(z.numel(), 0);
  EXPECT_EQ(z.dim(), 3);

  auto s = zeros({});
  EXPECT_EQ(s.dim(), 0);
  EXPECT_EQ(s.numel(), 1);
  EXPECT_EQ(s.item<float>(), 0.0f);
  auto f = full({}, 3.5);
  EXPECT_EQ(f.dim(), 0);
  EXPECT_EQ(f.item<float>(), 3.5f);
}

TEST(Creation, ScalarTensor) {
  auto s = scalar_tensor(3.5);
  EXPECT_EQ(s.dim(), 0);
  EXPECT_EQ(s.numel(), 1);
  EXPECT_EQ(s.dtype(), float32);
  EXPECT_EQ(s.item<double>(), 3.5);
  auto i = scalar_tensor(int64_t{1} << 40, int64);
  EXPECT_EQ(i.dtype(), int64);
  EXPECT_EQ(i.item<int64_t>(), int64_t{1} << 40);
  auto d = scalar_tensor(0.1, float64);
  EXPECT_EQ(d.item<double>(), 0.1);  // no float32 rounding on the way
}

TEST(Creation, NegativeSizeThrows) {
  EXPECT_KILN_ERROR(zeros({2, -1}), "-1");
  EXPECT_KILN_ERROR(empty({-3}), "-3");
}

TEST(Creation, ArangeIntegerBoundsGiveInt64) {
  auto a = arange(5);
  EXPECT_EQ(a.dtype(), int64);
  EXPECT_EQ(a.to_vector<int64_t>(), (std::vector<int64_t>{0, 1, 2, 3, 4}));
  EXPECT_EQ(arange(1, 10, 3).to_vector<int64_t>(), (std::vector<int64_t>{1, 4, 7}));
  EXPECT_EQ(arange(5, 0, -2).to_vector<int64_t>(), (std::vector<int64_t>{5, 3, 1}));
  EXPECT_EQ(arange(0).numel(), 0);
  EXPECT_EQ(arange(3, 3).numel(), 0);
}

TEST(Creation, ArangeFloatingBoundsGiveFloat32) {
  auto a = arange(0.0, 1.0, 0.25);
  EXPECT_EQ(a.dtype(), float32);
  EXPECT_TRUE(matches(a, {4}, {0, 0.25, 0.5, 0.75}));
  auto b = arange(0, 1, 0.1);  // length ceil((end - start) / step) = 10
  EXPECT_EQ(b.dtype(), float32);
  ASSERT_EQ(b.numel(), 10);
  std::vector<double> expected;
  for (int i = 0; i < 10; ++i) expected.push_back(static_cast<float>(0.1 * i));
  EXPECT_TRUE(matches(b, {10}, expected, test::kFloat32Tol));
  auto c = arange(2.5, TensorOptions().dtype(float64));
  EXPECT_EQ(c.dtype(), float64);
  EXPECT_TRUE(matches(c, {3}, {0, 1, 2}));
  auto d = arange(0, 6, 2, TensorOptions().dtype(float32));
  EXPECT_EQ(d.dtype(), float32);
  EXPECT_TRUE(matches(d, {3}, {0, 2, 4}));
}

TEST(Creation, ArangeBadStepThrows) {
  EXPECT_KILN_ERROR(arange(0, 5, 0));
  EXPECT_KILN_ERROR(arange(0, 5, -1));  // step's sign disagrees with end - start
  EXPECT_KILN_ERROR(arange(0, 5, 0.5, TensorOptions().dtype(int32)), "0.5", "truncated to 0");
}

// A count past int64 is refused (end - start once overflowed), and one that fits but
// cannot be allocated fails at the allocation.
TEST(Creation, ArangeCountsPastInt64AreRefused) {
  const int64_t lo = std::numeric_limits<int64_t>::min(), hi = std::numeric_limits<int64_t>::max();
  EXPECT_KILN_ERROR(arange(lo, hi), "more elements than int64 counts");
  EXPECT_KILN_ERROR(arange(hi, lo, -1), "more elements than int64 counts");
  EXPECT_KILN_ERROR(arange(0.0, 1e300, 1e-300), "more elements than int64 counts");
  EXPECT_KILN_ERROR(arange(0, 1e19, 1, TensorOptions().dtype(int32)), "do not fit");
  EXPECT_KILN_ERROR(arange(hi), "memory");
  EXPECT_KILN_ERROR(arange(hi, TensorOptions().dtype(float64)), "memory");
  EXPECT_EQ(arange(hi - 2, hi).numel(), 2);  // counted in int64 (the values go through float64)
}

// An integer dtype counts with truncated bounds and step, as PyTorch 1.13's arange.
TEST(Creation, ArangeOfAnIntegerDTypeTruncatesFractionalBounds) {
  EXPECT_TRUE(matches(arange(0, 6, 1.5, TensorOptions().dtype(int64)), {6}, {0, 1, 2, 3, 4, 5}));
  EXPECT_TRUE(matches(arange(-1.5, 3, 1, TensorOptions().dtype(int64)), {4}, {-1, 0, 1, 2}));
  EXPECT_TRUE(matches(arange(2.7, TensorOptions().dtype(int64)), {2}, {0, 1}));
  // PyTorch's length for other integer dtypes comes from the untruncated bounds.
  EXPECT_TRUE(matches(arange(2.7, TensorOptions().dtype(int32)), {3}, {0, 1, 2}));
  EXPECT_TRUE(matches(arange(0, 6, 1.5, TensorOptions().dtype(int32)), {4}, {0, 1, 2, 3}));
  EXPECT_TRUE(matches(arange(5.5, -1, -2.5, TensorOptions().dtype(int64)), {3}, {5, 3, 1}));
}

TEST(Creation, LinspaceEndpointsAreExact) {
  EXPECT_TRUE(matches(linspace(0, 1, 5), {5}, {0, 0.25, 0.5, 0.75, 1}));
  auto x = linspace(-1.3, 2.7, 7);
  EXPECT_EQ(x.dtype(), float32);
  auto v = x.to_vector<float>();
  ASSERT_EQ(v.size(), 7u);
  EXPECT_EQ(v.front(), static_cast<float>(-1.3));
  EXPECT_EQ(v.back(), static_cast<float>(2.7));
  for (int i = 0; i < 7; ++i) EXPECT_NEAR(v[i], -1.3 + i * 4.0 / 6, 1e-6) << i;

  auto d = linspace(0.1, 0.7, 4, float64);
  EXPECT_EQ(d.dtype(), float64);
  auto dv = d.to_vector<double>();
  EXPECT_EQ(dv.front(), 0.1);
  EXPECT_EQ(dv.back(), 0.7);  // computed as end - 0 * step: exact

  EXPECT_TRUE(matches(linspace(2, 9, 1), {1}, {2}));
  EXPECT_EQ(linspace(0, 1, 0).numel(), 0);
  EXPECT_TRUE(matches(linspace(3, -3, 3), {3}, {3, 0, -3}));
  EXPECT_KILN_ERROR(linspace(0, 1, -1), "-1");
}

TEST(Creation, FromVectorWithShapeAndConversion) {
  auto x = from_vector<float>({1, 2, 3, 4, 5, 6}, {2, 3});
  EXPECT_EQ(x.dtype(), float32);
  EXPECT_EQ(x.shape(), IntArrayRef({2, 3}));
  EXPECT_TRUE(matches(x, {2, 3}, {1, 2, 3, 4, 5, 6}));

  auto one_d = from_vector<int64_t>({5, -6, 7});
  EXPECT_EQ(one_d.dtype(), int64);
  EXPECT_EQ(one_d.shape(), IntArrayRef({3}));
  EXPECT_EQ(one_d.to_vector<int64_t>(), (std::vector<int64_t>{5, -6, 7}));

  auto big = from_vector<int64_t>({(int64_t{1} << 62) + 1});
  EXPECT_EQ(big.item<int64_t>(), (int64_t{1} << 62) + 1);  // exact, not via double

  auto converted = from_vector<int32_t>({1, -2, 3}, {3}, TensorOptions().dtype(float64));
  EXPECT_EQ(converted.dtype(), float64);
  EXPECT_TRUE(matches(converted, {3}, {1, -2, 3}));

  auto truncated = from_vector<double>({1.7, -1.7, 2.5}, {3}, int32);
  EXPECT_EQ(truncated.dtype(), int32);
  EXPECT_EQ(truncated.to_vector<int32_t>(), (std::vector<int32_t>{1, -1, 2}));

  auto u8 = from_vector<uint8_t>({0, 200, 255});
  EXPECT_EQ(u8.dtype(), uint8);
  EXPECT_EQ(u8.to_vector<int64_t>(), (std::vector<int64_t>{0, 200, 255}));

  auto b = from_vector<bool>({true, false, true});
  EXPECT_EQ(b.dtype(), kbool);
  EXPECT_EQ(b.to_vector<bool>(), (std::vector<bool>{true, false, true}));

  auto d = from_vector<double>({0.1});
  EXPECT_EQ(d.dtype(), float64);
  EXPECT_EQ(d.item<double>(), 0.1);
}

TEST(Creation, FromVectorKeepsTheElementTypeWhenOptionsNameOnlyADevice) {
  // "the dtype is T's unless the options name another"
  auto d = from_vector<double>({0.1, 0.2}, {2}, TensorOptions().device("cpu:0"));
  EXPECT_EQ(d.dtype(), float64);
  EXPECT_EQ(d.to_vector<double>(), (std::vector<double>{0.1, 0.2}));
  EXPECT_EQ(
      from_vector<int64_t>({(int64_t{1} << 60) + 1}, {1}, TensorOptions().device("cpu:0")).dtype(),
      int64);
  EXPECT_EQ(from_vector<bool>({true}, {1}, TensorOptions().device("cpu:0")).dtype(), kbool);
}

TEST(Creation, FromVectorShapesAndEdgeCases) {
  auto s = from_vector<float>({4.5}, {});
  EXPECT_EQ(s.numel(), 1);
  auto e = from_vector<float>({}, {0, 3});
  EXPECT_EQ(e.shape(), IntArrayRef({0, 3}));
  EXPECT_EQ(from_vector<float>({}).numel(), 0);
  EXPECT_KILN_ERROR(from_vector<float>({1, 2, 3, 4, 5, 6}, {2, 2}), "6");
  EXPECT_KILN_ERROR(from_vector<float>({1, 2, 3}, {4}), "3");
}

TEST(Creation, TensorOptionsDefaults) {
  TensorOptions o;
  EXPECT_FALSE(o.has_dtype());
  EXPECT_FALSE(o.has_device());
  EXPECT_EQ(o.dtype(), float32);
  EXPECT_EQ(o.device(), default_device());
  TensorOptions p = TensorOptions().dtype(int64).device("cpu:0");
  EXPECT_TRUE(p.has_dtype());
  EXPECT_TRUE(p.has_device());
  EXPECT_EQ(p.dtype(), int64);
  EXPECT_EQ(p.device(), Device("cpu", 0));
}

}  // namespace
}  // namespace kiln

namespace kiln::test {
namespace {

TEST(Creation, EmptyTensorsWithHugeDimensionsDoNotOverflow) {
  // 0 x 2^62 x 2^62 holds nothing, but the row-major strides of its other dimensions
  // overflow int64 (undefined behaviour, which the sanitizer build turns into a
  // failure); a non-empty shape that large is refused instead.
  const int64_t huge = int64_t{1} << 62;
  Tensor t = empty({0, huge, huge});
  EXPECT_EQ(t.numel(), 0);
  EXPECT_EQ(t.shape().vec(), (std::vector<int64_t>{0, huge, huge}));
  EXPECT_THROW(empty({2, huge, huge}), Error);
}

}  // namespace
}  // namespace kiln::test
