// Type promotion of binary ops on every device: tensor with tensor (promote_types)
// and tensor with scalar (Scalar::result_type), with the values computed in the
// promoted dtype.
#include "ops/conformance.h"

namespace kiln::test {
namespace {

class Promotion : public DeviceTest {};

TEST_P(Promotion, IntWithFloatGivesFloat) {
  auto i = make({1, 2, 3}, {3}, int32);
  auto f = make({0.5, 0.25, -1}, {3}, float32);
  auto y = i + f;
  EXPECT_EQ(y.dtype(), float32);
  EXPECT_TRUE(matches(y, {3}, {1.5, 2.25, 2}));
  EXPECT_EQ((f * i).dtype(), float32);
  auto l = make({4, 5, 6}, {3}, int64);
  EXPECT_EQ((l - f).dtype(), float32);
  EXPECT_TRUE(matches(l - f, {3}, {3.5, 4.75, 7}));
  EXPECT_EQ((l + make({1, 2, 3}, {3}, float64)).dtype(), float64);
  auto h = l + make({0.5, 0.5, 0.5}, {3}, float16);
  EXPECT_EQ(h.dtype(), float16);
  EXPECT_TRUE(matches(h, {3}, {4.5, 5.5, 6.5}));
}

TEST_P(Promotion, IntWithIntStaysInt) {
  auto a = make({1, 2}, {2}, int32);
  auto y = a + make({10, 20}, {2}, int32);
  EXPECT_EQ(y.dtype(), int32);
  EXPECT_EQ(y.to_vector<int32_t>(), (std::vector<int32_t>{11, 22}));
  auto big = from_vector<int64_t>({(int64_t{1} << 40) + 5, 7}, {2}, opts(int64));
  auto w = big + a;  // int64 + int32: exact in int64, not through a float
  EXPECT_EQ(w.dtype(), int64);
  EXPECT_EQ(w.to_vector<int64_t>(), (std::vector<int64_t>{(int64_t{1} << 40) + 6, 9}));
  auto u = make({200, 100}, {2}, uint8);
  auto s = u + make({100, -1}, {2}, int32);  // uint8 + int32: int32, no uint8 wrap
  EXPECT_EQ(s.dtype(), int32);
  EXPECT_EQ(s.to_vector<int32_t>(), (std::vector<int32_t>{300, 99}));
  auto b = make({1, 0}, {2}, kbool);
  EXPECT_EQ((b + a).dtype(), int32);
  EXPECT_EQ((b + a).to_vector<int32_t>(), (std::vector<int32_t>{2, 2}));
  EXPECT_EQ((b * u).dtype(), uint8);
}

TEST_P(Promotion, FloatWidths) {
  auto f32 = make({0.1}, {1}, float32);
  auto f64 = make({0.1}, {1}, float64);
  auto y = f32 + f64;
  EXPECT_EQ(y.dtype(), float64);
  EXPECT_EQ(y.item<double>(), static_cast<double>(0.1f) + 0.1);  // f32 widened exactly
  auto h = make({1.5}, {1}, float16);
  auto bf = make({2.25}, {1}, bfloat16);
  EXPECT_EQ((h + bf).dtype(), float32);
  EXPECT_EQ((h + bf).item<float>(), 3.75f);
  EXPECT_EQ((h * f32).dtype(), float32);
  EXPECT_EQ((bf - f64).dtype(), float64);
}

TEST_P(Promotion, TrueDivisionOfIntegersGivesFloat32) {
  auto a = make({7, -7, 1}, {3}, int64);
  auto b = make({2, 2, 3}, {3}, int64);
  auto y = a / b;
  EXPECT_EQ(y.dtype(), float32);
  EXPECT_TRUE(matches(y, {3}, {3.5, -3.5, 1.0 / 3}, kFloat32Tol));
  EXPECT_EQ(div(make({1}, {1}, int32), make({4}, {1}, int32)).item<float>(), 0.25f);
  EXPECT_EQ((a / 2).dtype(), float32);
  EXPECT_TRUE(matches(a / 2, {3}, {3.5, -3.5, 0.5}));
  EXPECT_EQ((1 / b).dtype(), float32);
  EXPECT_TRUE(matches(1 / b, {3}, {0.5, 0.5, 1.0 / 3}, kFloat32Tol));
}

TEST_P(Promotion, ComparisonsPromoteThenGiveBool) {
  auto i = make({1, 2, 3}, {3}, int32);
  auto f = make({1.5, 2, 2.5}, {3}, float32);
  EXPECT_EQ((i == f).dtype(), kbool);
  EXPECT_EQ((i == f).to_vector<bool>(), (std::vector<bool>{false, true, false}));
  EXPECT_EQ((i > f).to_vector<bool>(), (std::vector<bool>{false, false, true}));
  EXPECT_EQ(maximum(i, f).dtype(), float32);
  EXPECT_TRUE(matches(maximum(i, f), {3}, {1.5, 2, 3}));
  EXPECT_EQ(logical_and(i, f).dtype(), kbool);
}

TEST_P(Promotion, ScalarsKeepTheTensorDTypeWithinACategory) {
  auto i = make({1, 2}, {2}, int32);
  EXPECT_EQ((i + 2).dtype(), int32);
  EXPECT_EQ((i * 3).to_vector<int32_t>(), (std::vector<int32_t>{3, 6}));
  EXPECT_EQ((2 - i).dtype(), int32);
  EXPECT_EQ((2 - i).to_vector<int32_t>(), (std::vector<int32_t>{1, 0}));
  auto u = make({250, 1}, {2}, uint8);
  EXPECT_EQ((u + 10).dtype(), uint8);
  EXPECT_EQ((u + 10).to_vector<int64_t>(), (std::vector<int64_t>{4, 11}));  // wraps in uint8
  auto h = make({1.5, -2}, {2}, float16);
  EXPECT_EQ((h * 2.0).dtype(), float16);
  EXPECT_TRUE(matches(h * 2.0, {2}, {3, -4}));
  EXPECT_EQ((h + 1).dtype(), float16);
  auto d = make({1.0}, {1}, float64);
  EXPECT_EQ((d + 0.1).dtype(), float64);
  EXPECT_EQ((d + 0.1).item<double>(), 1.0 + 0.1);  // the scalar is not rounded to float32
  EXPECT_EQ((0.1 * d).item<double>(), 0.1);
}

TEST_P(Promotion, ScalarsOfAHigherCategoryUseItsDefault) {
  auto i = make({1, 2}, {2}, int64);
  EXPECT_EQ((i + 0.5).dtype(), float32);
  EXPECT_TRUE(matches(i + 0.5, {2}, {1.5, 2.5}));
  EXPECT_EQ((0.5 * i).dtype(), float32);
  EXPECT_EQ((i >= 1.5).to_vector<bool>(), (std::vector<bool>{false, true}));  // compared as floats
  auto b = make({1, 0}, {2}, kbool);
  EXPECT_EQ((b + 1).dtype(), int64);
  EXPECT_EQ((b + 1).to_vector<int64_t>(), (std::vector<int64_t>{2, 1}));
  EXPECT_EQ((b * 1.5).dtype(), float32);
  EXPECT_TRUE(matches(b * 1.5, {2}, {1.5, 0}));
}

TEST_P(Promotion, ZeroDimAndEmptyOperands) {
  auto s = make({2}, {}, int64);
  auto v = make({1, 2, 3}, {3}, int64);
  EXPECT_EQ((s * v).to_vector<int64_t>(), (std::vector<int64_t>{2, 4, 6}));
  auto e = zeros({0, 3}, opts(int32));
  auto y = e + make({1, 2, 3}, {3}, float32);
  EXPECT_EQ(y.dtype(), float32);
  EXPECT_EQ(y.shape(), IntArrayRef({0, 3}));
}

KILN_INSTANTIATE_FOR_EVERY_DEVICE(Promotion);

}  // namespace
}  // namespace kiln::test
