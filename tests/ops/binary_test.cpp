// Every elementwise binary op on every device: broadcasting across ranks, stride-0
// expanded inputs, transposed/strided/offset inputs, 0-d and empty operands, scalar
// operands on both sides, integer wrap-around, IEEE special values, in-place ops
// through views. Tolerances as in support/kiln_test.h (float32 1e-5 relative).
#include <cmath>
#include <functional>
#include <limits>

#include "kiln/testing/pointwise_ops.h"
#include "ops/conformance.h"

namespace kiln::test {
namespace {

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();
constexpr double kInf = std::numeric_limits<double>::infinity();

enum class Kind { Arith, Div, Pow, MinMax, Compare, Logical };

struct BinaryCase {
  const char* name;
  std::function<Tensor(const Tensor&, const Tensor&)> op;
  std::function<double(double, double)> ref;
  Kind kind;
};

double nan_max(double a, double b) {
  return std::isnan(a) || std::isnan(b) ? kNaN : std::max(a, b);
}
double nan_min(double a, double b) {
  return std::isnan(a) || std::isnan(b) ? kNaN : std::min(a, b);
}

const std::vector<BinaryCase>& binary_cases() {
  static const std::vector<BinaryCase> cases = {
      {"add", [](const Tensor& a, const Tensor& b) { return add(a, b); },
       [](double a, double b) { return a + b; }, Kind::Arith},
      {"sub", [](const Tensor& a, const Tensor& b) { return sub(a, b); },
       [](double a, double b) { return a - b; }, Kind::Arith},
      {"mul", [](const Tensor& a, const Tensor& b) { return mul(a, b); },
       [](double a, double b) { return a * b; }, Kind::Arith},
      {"div", [](const Tensor& a, const Tensor& b) { return div(a, b); },
       [](double a, double b) { return a / b; }, Kind::Div},
      {"pow", [](const Tensor& a, const Tensor& b) { return pow(a, b); },
       [](double a, double b) { return std::pow(a, b); }, Kind::Pow},
      {"maximum", [](const Tensor& a, const Tensor& b) { return maximum(a, b); }, nan_max,
       Kind::MinMax},
      {"minimum", [](const Tensor& a, const Tensor& b) { return minimum(a, b); }, nan_min,
       Kind::MinMax},
      {"eq", [](const Tensor& a, const Tensor& b) { return eq(a, b); },
       [](double a, double b) { return double(a == b); }, Kind::Compare},
      {"ne", [](const Tensor& a, const Tensor& b) { return ne(a, b); },
       [](double a, double b) { return double(a != b); }, Kind::Compare},
      {"lt", [](const Tensor& a, const Tensor& b) { return lt(a, b); },
       [](double a, double b) { return double(a < b); }, Kind::Compare},
      {"le", [](const Tensor& a, const Tensor& b) { return le(a, b); },
       [](double a, double b) { return double(a <= b); }, Kind::Compare},
      {"gt", [](const Tensor& a, const Tensor& b) { return gt(a, b); },
       [](double a, double b) { return double(a > b); }, Kind::Compare},
      {"ge", [](const Tensor& a, const Tensor& b) { return ge(a, b); },
       [](double a, double b) { return double(a >= b); }, Kind::Compare},
      {"logical_and", [](const Tensor& a, const Tensor& b) { return logical_and(a, b); },
       [](double a, double b) { return double(a != 0 && b != 0); }, Kind::Logical},
      {"logical_or", [](const Tensor& a, const Tensor& b) { return logical_or(a, b); },
       [](double a, double b) { return double(a != 0 || b != 0); }, Kind::Logical},
  };
  return cases;
}

bool gives_bool(Kind k) { return k == Kind::Compare || k == Kind::Logical; }

/// Inputs suited to the op: denominators away from 0, positive bases for pow,
/// small integers for comparisons (so that ties happen), zeros for logical ops.
std::vector<double> inputs_for(Kind kind, bool second, size_t n, uint32_t seed) {
  switch (kind) {
    case Kind::Div:
      if (second) {
        auto v = random_floats(n, seed, 0.5, 3);
        for (size_t i = 0; i < n; i += 2) v[i] = -v[i];
        return v;
      }
      return random_floats(n, seed, -3, 3);
    case Kind::Pow:
      return second ? random_floats(n, seed, -2, 2) : random_floats(n, seed, 0.5, 2);
    case Kind::Compare:
      return random_ints(n, seed, -2, 2);
    case Kind::Logical:
      return random_ints(n, seed, -1, 1);
    default:
      return random_floats(n, seed, -3, 3);
  }
}

struct ShapePair {
  Shape a, b;
  Layout la, lb;
};

const std::vector<ShapePair>& shape_pairs() {
  static const std::vector<ShapePair> pairs = {
      {{2, 3}, {2, 3}, Layout::Contiguous, Layout::Contiguous},
      {{3, 4}, {3, 4}, Layout::Transposed, Layout::Strided},  // both non-contiguous
      {{4, 1, 3}, {2, 1}, Layout::Strided, Layout::Offset},   // ranks 3 and 2 -> [4, 2, 3]
      {{3}, {2, 3}, Layout::Contiguous, Layout::Transposed},  // lower rank on the left
      {{2, 3}, {1}, Layout::Offset, Layout::Contiguous},
      {{5, 1}, {1, 4}, Layout::Contiguous, Layout::Strided},  // both broadcast -> [5, 4]
      {{}, {2, 3}, Layout::Contiguous, Layout::Contiguous},   // 0-d on either side
      {{2, 3}, {}, Layout::Strided, Layout::Contiguous},
      {{}, {}, Layout::Contiguous, Layout::Contiguous},
      {{0, 3}, {3}, Layout::Contiguous, Layout::Contiguous},  // empty
      {{0, 3}, {1, 3}, Layout::Contiguous, Layout::Strided},
      {{2, 0}, {2, 1}, Layout::Contiguous, Layout::Contiguous},
  };
  return pairs;
}

class BinaryOps : public DeviceTest {
 protected:
  void check(const BinaryCase& c, const Tensor& a, const Tensor& b, DType compute_dtype) {
    auto y = c.op(a, b);
    EXPECT_EQ(y.dtype(), gives_bool(c.kind) ? kbool : compute_dtype);
    EXPECT_EQ(y.device(), device());
    const Tolerance tol = gives_bool(c.kind) ? kExact : tolerance_for(compute_dtype);
    EXPECT_TRUE(matches(y, map_binary(ref_of(a), ref_of(b), c.ref), tol));
  }
};

TEST_P(BinaryOps, EveryOpBroadcastingAndLayoutsFloat32) {
  uint32_t seed = 1000;
  for (const BinaryCase& c : binary_cases()) {
    for (const ShapePair& p : shape_pairs()) {
      SCOPED_TRACE(std::string(c.name) + " " + shape_str(p.a) + " " + layout_name(p.la) + " with " +
                   shape_str(p.b) + " " + layout_name(p.lb));
      auto a = make(inputs_for(c.kind, false, numel_of(p.a), ++seed), p.a, float32, p.la);
      auto b = make(inputs_for(c.kind, true, numel_of(p.b), ++seed), p.b, float32, p.lb);
      check(c, a, b, float32);
    }
  }
}

TEST_P(BinaryOps, EveryOpFloat64) {
  uint32_t seed = 2000;
  for (const BinaryCase& c : binary_cases()) {
    SCOPED_TRACE(c.name);
    auto a = make(inputs_for(c.kind, false, 12, ++seed), {4, 1, 3}, float64, Layout::Transposed);
    auto b = make(inputs_for(c.kind, true, 2, ++seed), {2, 1}, float64, Layout::Contiguous);
    check(c, a, b, float64);
  }
}

TEST_P(BinaryOps, StrideZeroExpandedInputs) {
  uint32_t seed = 3000;
  for (const BinaryCase& c : binary_cases()) {
    SCOPED_TRACE(c.name);
    auto a = make(inputs_for(c.kind, false, 3, ++seed), {3, 1}).expand({3, 4});
    auto b = make(inputs_for(c.kind, true, 4, ++seed), {1, 4}).expand({3, 4});
    ASSERT_EQ(a.stride(1), 0);
    ASSERT_EQ(b.stride(0), 0);
    check(c, a, b, float32);
    // Expanded against its own base: the same storage on both sides.
    auto base = make(inputs_for(c.kind, false, 4, ++seed), {4});
    check(c, base.expand({2, 4}), base, float32);
  }
}

TEST_P(BinaryOps, IntegerDTypesStayIntegral) {
  uint32_t seed = 4000;
  for (const BinaryCase& c : binary_cases()) {
    if (c.kind == Kind::Div || c.kind == Kind::Pow) continue;  // float-only in the catalogue
    for (DType dtype : {int32, int64, uint8}) {
      SCOPED_TRACE(std::string(c.name) + " " + std::string(dtype_name(dtype)));
      const bool unsigned_ = dtype == uint8;
      auto values = [&](size_t n) {
        return c.kind == Kind::Logical
                   ? random_ints(n, ++seed, unsigned_ ? 0 : -1, 1)
                   : random_ints(n, ++seed, unsigned_ ? 0 : -40, unsigned_ ? 15 : 40);
      };
      auto a = make(values(12), {2, 2, 3}, dtype, Layout::Transposed);
      auto b = make(values(3), {3}, dtype, Layout::Strided);
      if (unsigned_ && c.name == std::string("sub")) {
        check(
            {c.name, c.op, [](double x, double y) { return std::fmod(x - y + 256, 256); }, c.kind},
            a, b, dtype);
        continue;
      }
      check(c, a, b, dtype);
    }
  }
}

TEST_P(BinaryOps, BoolInputsToComparisonsAndLogicalOps) {
  for (const BinaryCase& c : binary_cases()) {
    if (!gives_bool(c.kind)) continue;
    SCOPED_TRACE(c.name);
    auto a = make({1, 0, 1, 0}, {4}, kbool);
    auto b = make({1, 1, 0, 0}, {4}, kbool, Layout::Strided);
    check(c, a, b, kbool);
  }
}

TEST_P(BinaryOps, IntegersWrapAround) {
  auto i32 = from_vector<int32_t>(
      {std::numeric_limits<int32_t>::max(), std::numeric_limits<int32_t>::min(), 65536}, {3},
      opts(int32));
  auto one = from_vector<int32_t>({1, 1, 65536}, {3}, opts(int32));
  EXPECT_EQ((i32 + one).to_vector<int32_t>(),
            (std::vector<int32_t>{std::numeric_limits<int32_t>::min(),
                                  std::numeric_limits<int32_t>::min() + 1, 131072}));
  EXPECT_EQ((i32 - one).to_vector<int32_t>(),
            (std::vector<int32_t>{std::numeric_limits<int32_t>::max() - 1,
                                  std::numeric_limits<int32_t>::max(), 0}));
  EXPECT_EQ((i32 * one).select(0, 2).item<int32_t>(), 0);  // 2^32 wraps to 0
  auto i64 = from_vector<int64_t>({std::numeric_limits<int64_t>::max()}, {1}, opts(int64));
  EXPECT_EQ((i64 + from_vector<int64_t>({1}, {1}, opts(int64))).item<int64_t>(),
            std::numeric_limits<int64_t>::min());
  auto u8 = from_vector<uint8_t>({250, 3}, {2}, opts(uint8));
  auto u8b = from_vector<uint8_t>({10, 5}, {2}, opts(uint8));
  EXPECT_EQ((u8 + u8b).to_vector<int64_t>(), (std::vector<int64_t>{4, 8}));
  EXPECT_EQ((u8 - u8b).to_vector<int64_t>(), (std::vector<int64_t>{240, 254}));
  EXPECT_EQ((u8 * u8b).to_vector<int64_t>(), (std::vector<int64_t>{196, 15}));  // 2500 mod 256
}

TEST_P(BinaryOps, IeeeSpecialValues) {
  for (DType dtype : {float32, float64}) {
    SCOPED_TRACE(dtype_name(dtype));
    auto num = make({1, -1, 0, kInf, 2}, {5}, dtype);
    auto den = make({0, 0, 0, kInf, -0.5}, {5}, dtype);
    EXPECT_TRUE(matches(num / den, {5}, {kInf, -kInf, kNaN, kNaN, -4}));
    auto base = make({-2, -2, 0, 2, 4, kNaN}, {6}, dtype);
    auto exponent = make({3, 0.5, 0, -1, 0.5, 0}, {6}, dtype);
    EXPECT_TRUE(matches(pow(base, exponent), {6}, {-8, kNaN, 1, 0.5, 2, 1}, tolerance_for(dtype)));
    auto n = make({kNaN, 1, kNaN}, {3}, dtype);
    auto m = make({1, kNaN, kNaN}, {3}, dtype);
    EXPECT_TRUE(matches(maximum(n, m), {3}, {kNaN, kNaN, kNaN}));
    EXPECT_TRUE(matches(minimum(n, m), {3}, {kNaN, kNaN, kNaN}));
    EXPECT_EQ(eq(n, m).to_vector<bool>(), (std::vector<bool>{false, false, false}));
    EXPECT_EQ(ne(n, m).to_vector<bool>(), (std::vector<bool>{true, true, true}));
    EXPECT_EQ(lt(n, m).to_vector<bool>(), (std::vector<bool>{false, false, false}));
    EXPECT_EQ(ge(n, m).to_vector<bool>(), (std::vector<bool>{false, false, false}));
    EXPECT_EQ(logical_and(n, m).to_vector<bool>(),
              (std::vector<bool>{true, true, true}));  // NaN != 0
    auto z = make({0, -0.0}, {2}, dtype);
    EXPECT_EQ(eq(z, make({-0.0, 0}, {2}, dtype)).to_vector<bool>(),
              (std::vector<bool>{true, true}));
    EXPECT_EQ(logical_or(z, z).to_vector<bool>(), (std::vector<bool>{false, false}));
  }
}

TEST_P(BinaryOps, HalfDTypes) {
  for (DType dtype : {float16, bfloat16}) {
    SCOPED_TRACE(dtype_name(dtype));
    auto a = make(random_grid(12, 1, -4, 4, 16), {3, 4}, dtype, Layout::Transposed);
    auto b = make(random_grid(4, 2, 0.5, 4, 16), {4}, dtype);
    for (const BinaryCase& c : binary_cases()) {
      if (c.kind == Kind::Pow || c.kind == Kind::Logical) continue;
      SCOPED_TRACE(c.name);
      check(c, a, b, dtype);
    }
  }
}

TEST_P(BinaryOps, OperatorsMatchFunctions) {
  auto a = random({2, 3}, 1);
  auto b = random({3}, 2, float32, Layout::Contiguous, 0.5, 2);
  auto same = [](const Tensor& x, const Tensor& y) {
    return x.dtype() == y.dtype() && x.shape() == y.shape() &&
           x.to_vector<double>() == y.to_vector<double>();
  };
  EXPECT_TRUE(same(a + b, add(a, b)));
  EXPECT_TRUE(same(a - b, sub(a, b)));
  EXPECT_TRUE(same(a * b, mul(a, b)));
  EXPECT_TRUE(same(a / b, div(a, b)));
  EXPECT_TRUE(same(a == b, eq(a, b)));
  EXPECT_TRUE(same(a != b, ne(a, b)));
  EXPECT_TRUE(same(a < b, lt(a, b)));
  EXPECT_TRUE(same(a <= b, le(a, b)));
  EXPECT_TRUE(same(a > b, gt(a, b)));
  EXPECT_TRUE(same(a >= b, ge(a, b)));
  EXPECT_TRUE(same(b.pow(a), pow(b, a)));
}

TEST_P(BinaryOps, ScalarOperandsOnBothSides) {
  auto x =
      make({1, -2, 4, 0.5}, {2, 2}, float32, Layout::Transposed);  // logical [[1, -2], [4, 0.5]]
  auto r = ref_of(x);
  auto expect = [&](const Tensor& y, std::function<double(double)> f) {
    EXPECT_EQ(y.dtype(), float32);
    EXPECT_EQ(y.device(), device());
    EXPECT_TRUE(matches(y, map_unary(r, f), kFloat32Tol));
  };
  expect(x + 2, [](double v) { return v + 2; });
  expect(2 + x, [](double v) { return 2 + v; });
  expect(x - 2, [](double v) { return v - 2; });
  expect(2 - x, [](double v) { return 2 - v; });
  expect(x * 0.5, [](double v) { return v * 0.5; });
  expect(0.5 * x, [](double v) { return 0.5 * v; });
  expect(x / 4, [](double v) { return v / 4; });
  expect(4 / x, [](double v) { return 4 / v; });
  expect(x.pow(2), [](double v) { return v * v; });
  expect(pow(x.abs(), 0.5), [](double v) { return std::sqrt(std::abs(v)); });
  EXPECT_EQ((x > 0.5).to_vector<bool>(), (std::vector<bool>{true, false, true, false}));
  EXPECT_EQ((x >= 0.5).to_vector<bool>(), (std::vector<bool>{true, false, true, true}));
  EXPECT_EQ((x < 1).to_vector<bool>(), (std::vector<bool>{false, true, false, true}));
  EXPECT_EQ((x <= 1).to_vector<bool>(), (std::vector<bool>{true, true, false, true}));
  EXPECT_EQ((x == 4).to_vector<bool>(), (std::vector<bool>{false, false, true, false}));
  EXPECT_EQ((x != 4).to_vector<bool>(), (std::vector<bool>{true, true, false, true}));
  auto s = scalar_tensor(3.0, opts());
  EXPECT_EQ((s * 2).dim(), 0);
  EXPECT_EQ((s * 2).item<float>(), 6.0f);
  EXPECT_EQ((1 - zeros({0, 2}, opts())).shape(), IntArrayRef({0, 2}));
}

TEST_P(BinaryOps, InPlaceThroughViewsOnTheDevice) {
  auto base = zeros({3, 4}, opts());
  base.slice(1, 1, 4, 2).add_(make({1, 2}, {2}));    // columns 1 and 3
  base.t().select(0, 0).sub_(make({1, 1, 1}, {3}));  // column 0
  base.select(0, 2).mul_(3);                         // row 2
  base.narrow(0, 0, 2).div_(make({2}, {}));          // rows 0 and 1
  EXPECT_TRUE(matches(base, {3, 4}, {-0.5, 0.5, 0, 1, -0.5, 0.5, 0, 1, -3, 3, 0, 6}));
  EXPECT_EQ(base.device(), device());
  auto i = zeros({2, 3}, opts(int64));
  i.t().add_(from_vector<int64_t>({1, 2}, {2}, opts(int64)));
  EXPECT_EQ(i.to_vector<int64_t>(), (std::vector<int64_t>{1, 1, 1, 2, 2, 2}));
}

// Every generated op with an in-place spelling (its catalogue entry's "inplace":
// a.add_(b)) leaves in a exactly what the out-of-place op returns for it, in each of
// its dtypes, through a transposed view with b broadcast, with values from its test
// domain: no list to keep.
TEST_P(BinaryOps, EveryInPlaceSpellingMatchesTheOutOfPlaceOp) {
  int checked = 0;
  for (const kiln::testing::PointwiseOp& p : kiln::testing::kPointwiseOps) {
    if (p.binary_inplace == nullptr) continue;
    SCOPED_TRACE(p.op);
    for (DType dtype : {float32, float64, float16, bfloat16, int32, int64}) {
      if (!((p.dtypes >> static_cast<int>(dtype)) & 1u)) continue;
      SCOPED_TRACE(dtype_name(dtype));
      Tensor a = make(domain_values(p.domain[0], dtype, 12, 4), {3, 4}, dtype, Layout::Transposed);
      const Tensor b = make(domain_values(p.domain[1], dtype, 4, 5), {4}, dtype);
      const std::vector<double> expected = p.binary(a, b).to_vector<double>();
      Tensor& same = p.binary_inplace(a, b);
      EXPECT_EQ(&same, &a);
      EXPECT_TRUE(matches(a, {3, 4}, expected, kExact));
      ++checked;
    }
  }
  EXPECT_GE(checked, 6 * 4);  // add, sub, mul, div, pow, atan2, each in four dtypes at least
}

TEST_P(BinaryOps, InputsAreNotModified) {
  auto a = make({1, 2, 3}, {3});
  auto b = make({4, 5, 6}, {3});
  (void)(a + b);
  (void)(a * b);
  (void)(a < b);
  EXPECT_TRUE(matches(a, {3}, {1, 2, 3}));
  EXPECT_TRUE(matches(b, {3}, {4, 5, 6}));
}

TEST_P(BinaryOps, Allclose) {
  auto a = make({1, 2, 1000}, {3});
  EXPECT_TRUE(allclose(a, make({1, 2, 1000.001}, {3}, float64)));  // |d| <= 1e-8 + 1e-5 * 1000
  EXPECT_FALSE(allclose(a, make({1, 2, 1000.1}, {3})));
  EXPECT_TRUE(allclose(a, make({1, 2, 1000.1}, {3}), 1e-3));
  EXPECT_TRUE(allclose(make({0}, {1}), make({1e-9}, {1})));  // atol near zero
  EXPECT_FALSE(allclose(make({0}, {1}), make({1e-6}, {1})));
  EXPECT_TRUE(allclose(make({2, 2}, {2}), make({2}, {})));  // broadcasting
  auto nan = make({std::numeric_limits<double>::quiet_NaN()}, {1});
  EXPECT_FALSE(allclose(nan, nan));  // NaNs are unequal
  EXPECT_TRUE(allclose(make({1, 2}, {2}, int64), make({1, 2}, {2}, float32)));
  EXPECT_KILN_ERROR(allclose(a, make({1, 2}, {2})), "[3]", "[2]");
}

TEST_P(BinaryOps, AllcloseTreatsEqualInfinitiesAsClose) {
  // As numpy.allclose and torch.allclose do (inf - inf is NaN, but the values are equal).
  const double inf = std::numeric_limits<double>::infinity();
  EXPECT_TRUE(allclose(make({inf, -inf, 1}, {3}), make({inf, -inf, 1}, {3})));
  EXPECT_FALSE(allclose(make({inf}, {1}), make({-inf}, {1})));
  EXPECT_FALSE(allclose(make({inf}, {1}), make({1e38}, {1})));
}

KILN_INSTANTIATE_FOR_EVERY_DEVICE(BinaryOps);

}  // namespace
}  // namespace kiln::test
