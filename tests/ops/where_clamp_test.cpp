// where (with broadcasting, scalars and promotion) and clamp (one or both bounds,
// NaN, infinities, integer inputs) on every device.
#include <cmath>
#include <limits>

#include "ops/conformance.h"

namespace kiln::test {
namespace {

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();
constexpr double kInf = std::numeric_limits<double>::infinity();

class WhereClamp : public DeviceTest {};

double pick(double c, double a, double b) { return c != 0 ? a : b; }

TEST_P(WhereClamp, WhereSameShape) {
  auto c = make({1, 0, 0, 1, 1, 0}, {2, 3}, kbool);
  auto a = random({2, 3}, 1);
  auto b = random({2, 3}, 2, float32, Layout::Transposed);
  auto y = where(c, a, b);
  EXPECT_EQ(y.dtype(), float32);
  EXPECT_EQ(y.device(), device());
  EXPECT_TRUE(matches(y, map_ternary(ref_of(c), ref_of(a), ref_of(b), pick), kExact));
}

TEST_P(WhereClamp, WhereBroadcastsAllThreeOperands) {
  auto c = make({1, 0, 1}, {3, 1}, kbool, Layout::Strided);
  auto a = random({1, 4}, 3);
  auto b = random({2, 1, 1}, 4);
  auto y = where(c, a, b);
  EXPECT_EQ(y.shape(), IntArrayRef({2, 3, 4}));
  EXPECT_TRUE(matches(y, map_ternary(ref_of(c), ref_of(a), ref_of(b), pick), kExact));
  auto e = make({1, 0, 1, 1}, {4}, kbool).expand({3, 4});  // stride-0 condition
  EXPECT_TRUE(matches(where(e, a, b), map_ternary(ref_of(e), ref_of(a), ref_of(b), pick), kExact));
}

TEST_P(WhereClamp, WhereWithScalars) {
  auto x = make({-1, 2, -3, 4}, {4});
  auto y = where(x > 0, x, 0.0);  // relu
  EXPECT_EQ(y.dtype(), float32);
  EXPECT_TRUE(matches(y, {4}, {0, 2, 0, 4}));
  auto leaky = where(x > 0, x, 0.1 * x);
  EXPECT_TRUE(matches(leaky, {4}, {-0.1, 2, -0.3, 4}, kFloat32Tol));
  auto z = where(x > 0, -1, x);
  EXPECT_EQ(z.dtype(), float32);
  EXPECT_TRUE(matches(z, {4}, {-1, -1, -3, -1}));
  auto i = make({5, 6}, {2}, int64);
  auto w = where(make({0, 1}, {2}, kbool), i, 0);
  EXPECT_EQ(w.dtype(), int64);
  EXPECT_EQ(w.to_vector<int64_t>(), (std::vector<int64_t>{0, 6}));
}

TEST_P(WhereClamp, WherePromotesItsOperands) {
  auto c = make({1, 0}, {2}, kbool);
  auto y = where(c, make({1, 2}, {2}, int32), make({0.5, 0.25}, {2}, float32));
  EXPECT_EQ(y.dtype(), float32);
  EXPECT_TRUE(matches(y, {2}, {1, 0.25}));
  auto z = where(c, make({1, 2}, {2}, int32), make({7, 8}, {2}, int64));
  EXPECT_EQ(z.dtype(), int64);
  EXPECT_EQ(z.to_vector<int64_t>(), (std::vector<int64_t>{1, 8}));
  auto b = where(c, make({0, 0}, {2}, kbool), make({1, 1}, {2}, kbool));
  EXPECT_EQ(b.dtype(), kbool);
  EXPECT_EQ(b.to_vector<bool>(), (std::vector<bool>{false, true}));
}

TEST_P(WhereClamp, WhereZeroDimAndEmpty) {
  auto c = make({1}, {}, kbool);
  auto y = where(c, make({3}, {}), make({4}, {}));
  EXPECT_EQ(y.dim(), 0);
  EXPECT_EQ(y.item<float>(), 3.0f);
  auto e = where(zeros({0, 2}, opts(kbool)), zeros({0, 2}, opts()), ones({2}, opts()));
  EXPECT_EQ(e.shape(), IntArrayRef({0, 2}));
  auto s = where(make({0, 1}, {2}, kbool), scalar_tensor(1.0, opts()), make({5, 6}, {2}));
  EXPECT_TRUE(matches(s, {2}, {5, 1}));
}

TEST_P(WhereClamp, ClampBothBounds) {
  for (Layout layout : kAllLayouts) {
    SCOPED_TRACE(layout_name(layout));
    auto x = random({3, 4}, 9, float32, layout, -3, 3);
    auto y = clamp(x, -1.0, 1.5);
    EXPECT_EQ(y.dtype(), float32);
    EXPECT_TRUE(
        matches(y, map_unary(ref_of(x), [](double v) { return std::min(std::max(v, -1.0), 1.5); }),
                kExact));
    EXPECT_TRUE(matches(x.clamp(-1.0, 1.5), ref_of(y), kExact));
  }
}

TEST_P(WhereClamp, ClampInPlaceWritesThroughEveryLayout) {
  for (Layout layout : kAllLayouts) {
    SCOPED_TRACE(layout_name(layout));
    auto x = random({3, 4}, 10, float32, layout, -3, 3);
    const auto before = ref_of(x);
    Tensor& same = x.clamp_(-1.0, 1.5);
    EXPECT_EQ(&same, &x);
    EXPECT_TRUE(matches(
        x, map_unary(before, [](double v) { return std::min(std::max(v, -1.0), 1.5); }), kExact));
  }
  auto i = make({-5, 0, 7}, {3}, int64);
  i.clamp_(std::nullopt, 3);
  EXPECT_TRUE(matches(i, {3}, {-5, 0, 3}));
}

TEST_P(WhereClamp, MaskedFillKeepsTheTensorsDtypeAndBroadcastsTheMask) {
  auto x = random({2, 3}, 11, float32, Layout::Transposed);
  auto mask = make({1, 0, 1}, {3}, kbool);  // one row, broadcast to both
  const auto rx = ref_of(x);
  auto y = x.masked_fill(mask, -2.5);
  EXPECT_EQ(y.dtype(), float32);
  EXPECT_EQ(y.device(), device());
  std::vector<double> expected;
  for (int r = 0; r < 2; ++r)
    for (int c = 0; c < 3; ++c) expected.push_back(c != 1 ? -2.5 : rx.at({r, c}));
  EXPECT_TRUE(matches(y, {2, 3}, expected, kExact));
  // An int tensor keeps int64 (the value is converted, PyTorch's rule); in place.
  auto i = make({1, 2, 3}, {3}, int64);
  i.masked_fill_(make({0, 1, 0}, {3}, kbool), 9);
  EXPECT_EQ(i.dtype(), int64);
  EXPECT_TRUE(matches(i, {3}, {1, 9, 3}));
  // Empty and full masks.
  EXPECT_TRUE(matches(x.masked_fill(make({0, 0, 0}, {3}, kbool), 1.0), rx, kExact));
  EXPECT_TRUE(matches(x.masked_fill(make({1, 1, 1}, {3}, kbool), 1.0), {2, 3},
                      std::vector<double>(6, 1.0), kExact));
  EXPECT_KILN_ERROR(x.masked_fill(make({1, 0}, {2, 1, 1}, kbool), 0.0), "does not broadcast");
  EXPECT_KILN_ERROR(x.masked_fill(make({1, 0, 1}, {3}, float32), 0.0), "bool");
}

TEST_P(WhereClamp, ClampOneBound) {
  auto x = make({-2, -0.5, 0.5, 2}, {4}, float32, Layout::Strided);
  EXPECT_TRUE(matches(clamp(x, 0.0, std::nullopt), {4}, {0, 0, 0.5, 2}));
  EXPECT_TRUE(matches(clamp(x, std::nullopt, 0.0), {4}, {-2, -0.5, 0, 0}));
  EXPECT_TRUE(matches(x.clamp(-1.0, std::nullopt), {4}, {-1, -0.5, 0.5, 2}));
  EXPECT_TRUE(matches(x.clamp(std::nullopt, 1.0), {4}, {-2, -0.5, 0.5, 1}));
}

TEST_P(WhereClamp, ClampSpecialValues) {
  for (DType dtype : {float32, float64}) {
    SCOPED_TRACE(dtype_name(dtype));
    auto x = make({kNaN, kInf, -kInf, 0.25}, {4}, dtype);
    EXPECT_TRUE(matches(clamp(x, -1.0, 1.0), {4}, {kNaN, 1, -1, 0.25}));
    EXPECT_TRUE(matches(clamp(x, 0.0, std::nullopt), {4}, {kNaN, kInf, 0, 0.25}));
    EXPECT_TRUE(matches(clamp(x, -kInf, kInf), {4}, {kNaN, kInf, -kInf, 0.25}));
    // min > max: every element becomes max, as min(max(x, min), max) says.
    EXPECT_TRUE(matches(clamp(make({1, 5, 9}, {3}, dtype), 6.0, 4.0), {3}, {4, 4, 4}));
  }
}

TEST_P(WhereClamp, ClampIntegers) {
  auto x = make({-5, 0, 3, 10}, {4}, int64);
  EXPECT_EQ(clamp(x, -2, 4).to_vector<int64_t>(), (std::vector<int64_t>{-2, 0, 3, 4}));
  EXPECT_EQ(clamp(make({-5, 7}, {2}, int32), 0, std::nullopt).to_vector<int32_t>(),
            (std::vector<int32_t>{0, 7}));
}

TEST_P(WhereClamp, ClampZeroDimAndEmptyAndHalf) {
  EXPECT_EQ(clamp(make({5}, {}), 0.0, 1.0).item<float>(), 1.0f);
  EXPECT_EQ(clamp(zeros({0, 4}, opts()), 0.0, 1.0).shape(), IntArrayRef({0, 4}));
  auto h = clamp(make({-3, 0.5, 3}, {3}, float16), -1.0, 1.0);
  EXPECT_EQ(h.dtype(), float16);
  EXPECT_TRUE(matches(h, {3}, {-1, 0.5, 1}));
}

TEST_P(WhereClamp, ClampWithoutBoundsThrows) {
  EXPECT_KILN_ERROR(clamp(zeros({2}, opts()), std::nullopt, std::nullopt), "clamp");
}

KILN_INSTANTIATE_FOR_EVERY_DEVICE(WhereClamp);

}  // namespace
}  // namespace kiln::test
