// Every elementwise unary op on every device, against float64 references, over
// contiguous, strided, transposed and offset inputs, 0-d and empty tensors, special
// values, integer and half dtypes. Tolerances: see support/kiln_test.h
// (float32 1e-5 relative + 1e-6 absolute; float64 1e-12; float16 2e-3; bfloat16 1.6e-2).
#include <cmath>
#include <functional>
#include <limits>

#include "kiln/testing/pointwise_ops.h"
#include "ops/conformance.h"

namespace kiln::test {
namespace {

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();
constexpr double kInf = std::numeric_limits<double>::infinity();

struct UnaryCase {
  const char* name;
  std::function<Tensor(const Tensor&)> op;
  std::function<double(double)> ref;
  double lo, hi;    // input range where the op is well-conditioned
  bool integer_ok;  // defined for int32/int64 (catalogue: neg, abs, sign, relu)
  bool special_ok;  // the reference is meaningful on NaN/inf inputs
};

double ref_sign(double x) { return std::isnan(x) ? x : (x > 0) - (x < 0); }
double ref_relu(double x) { return std::isnan(x) ? x : std::max(x, 0.0); }
double ref_sigmoid(double x) { return 1 / (1 + std::exp(-x)); }
double ref_gelu(double x) { return 0.5 * x * (1 + std::erf(x / std::sqrt(2.0))); }
double ref_gelu_tanh(double x) {
  return 0.5 * x * (1 + std::tanh(std::sqrt(2 / M_PI) * (x + 0.044715 * x * x * x)));
}

const std::vector<UnaryCase>& unary_cases() {
  static const std::vector<UnaryCase> cases = {
      {"neg", [](const Tensor& x) { return kiln::neg(x); }, [](double x) { return -x; }, -3, 3,
       true, true},
      {"abs", [](const Tensor& x) { return kiln::abs(x); }, [](double x) { return std::abs(x); },
       -3, 3, true, true},
      {"sign", [](const Tensor& x) { return kiln::sign(x); }, ref_sign, -3, 3, true, true},
      {"exp", [](const Tensor& x) { return kiln::exp(x); }, [](double x) { return std::exp(x); },
       -4, 4, false, true},
      {"log", [](const Tensor& x) { return kiln::log(x); }, [](double x) { return std::log(x); },
       0.05, 5, false, true},
      {"sqrt", [](const Tensor& x) { return kiln::sqrt(x); }, [](double x) { return std::sqrt(x); },
       0, 5, false, true},
      {"rsqrt", [](const Tensor& x) { return kiln::rsqrt(x); },
       [](double x) { return 1 / std::sqrt(x); }, 0.05, 5, false, false},
      {"sin", [](const Tensor& x) { return kiln::sin(x); }, [](double x) { return std::sin(x); },
       -4, 4, false, false},
      {"cos", [](const Tensor& x) { return kiln::cos(x); }, [](double x) { return std::cos(x); },
       -4, 4, false, false},
      {"tanh", [](const Tensor& x) { return kiln::tanh(x); }, [](double x) { return std::tanh(x); },
       -3, 3, false, true},
      {"sigmoid", [](const Tensor& x) { return kiln::sigmoid(x); }, ref_sigmoid, -6, 6, false,
       true},
      {"relu", [](const Tensor& x) { return kiln::relu(x); }, ref_relu, -3, 3, true, true},
      {"gelu", [](const Tensor& x) { return kiln::gelu(x); }, ref_gelu, -4, 4, false, false},
      {"gelu_tanh", [](const Tensor& x) { return kiln::gelu(x, "tanh"); }, ref_gelu_tanh, -4, 4,
       false, false},
  };
  return cases;
}

class UnaryOps : public DeviceTest {};

TEST_P(UnaryOps, EveryOpEveryLayoutFloat32AndFloat64) {
  uint32_t seed = 100;
  for (const UnaryCase& c : unary_cases()) {
    for (DType dtype : {float32, float64}) {
      for (Layout layout : kAllLayouts) {
        SCOPED_TRACE(std::string(c.name) + " " + std::string(dtype_name(dtype)) + " " +
                     layout_name(layout));
        auto x = random({3, 5}, ++seed, dtype, layout, c.lo, c.hi);
        auto y = c.op(x);
        EXPECT_EQ(y.dtype(), dtype);
        EXPECT_EQ(y.device(), device());
        EXPECT_TRUE(matches(y, map_unary(ref_of(x), c.ref), tolerance_for(dtype)));
      }
    }
  }
}

TEST_P(UnaryOps, ExpandedInput) {
  for (const UnaryCase& c : unary_cases()) {
    SCOPED_TRACE(c.name);
    auto x = random({3, 1}, 7, float32, Layout::Contiguous, c.lo, c.hi).expand({3, 4});
    EXPECT_TRUE(matches(c.op(x), map_unary(ref_of(x), c.ref), kFloat32Tol));
  }
}

TEST_P(UnaryOps, ZeroDimAndEmpty) {
  for (const UnaryCase& c : unary_cases()) {
    SCOPED_TRACE(c.name);
    auto s = make({(c.lo + c.hi) / 3}, {});
    auto y = c.op(s);
    EXPECT_EQ(y.dim(), 0);
    EXPECT_TRUE(matches(y, map_unary(ref_of(s), c.ref), kFloat32Tol));
    auto e = zeros({0, 3}, opts());
    auto ye = c.op(e);
    EXPECT_EQ(ye.shape(), IntArrayRef({0, 3}));
    EXPECT_EQ(ye.device(), device());
  }
}

TEST_P(UnaryOps, SpecialValues) {
  const std::vector<double> specials = {kNaN, kInf, -kInf, 0.0, 1.0, -1.0};
  for (const UnaryCase& c : unary_cases()) {
    if (!c.special_ok) continue;
    for (DType dtype : {float32, float64}) {
      SCOPED_TRACE(std::string(c.name) + " " + std::string(dtype_name(dtype)));
      auto x = make(specials, {6}, dtype);
      EXPECT_TRUE(matches(c.op(x), map_unary(ref_of(x), c.ref), tolerance_for(dtype)));
    }
  }
}

TEST_P(UnaryOps, IntegerDTypesWhereTheCatalogueDefinesThem) {
  for (const UnaryCase& c : unary_cases()) {
    if (!c.integer_ok) continue;
    for (DType dtype : {int32, int64}) {
      for (Layout layout : {Layout::Contiguous, Layout::Transposed}) {
        SCOPED_TRACE(std::string(c.name) + " " + std::string(dtype_name(dtype)) + " " +
                     layout_name(layout));
        auto x = make(random_ints(12, 3, -50, 50), {3, 4}, dtype, layout);
        auto y = c.op(x);
        EXPECT_EQ(y.dtype(), dtype);
        EXPECT_TRUE(matches(y, map_unary(ref_of(x), c.ref), kExact));
      }
    }
  }
}

TEST_P(UnaryOps, HalfDTypesComputeAndRoundOnce) {
  const char* names[] = {"neg", "abs", "exp", "sqrt", "tanh", "sigmoid", "relu", "gelu"};
  for (const UnaryCase& c : unary_cases()) {
    if (std::find_if(std::begin(names), std::end(names),
                     [&](const char* n) { return c.name == std::string(n); }) == std::end(names))
      continue;
    for (DType dtype : {float16, bfloat16}) {
      SCOPED_TRACE(std::string(c.name) + " " + std::string(dtype_name(dtype)));
      const double lo = std::max(c.lo, -2.0), hi = std::min(c.hi, 2.0);
      auto x = make(random_grid(16, 11, lo, hi, 16), {4, 4}, dtype, Layout::Strided);
      auto y = c.op(x);
      EXPECT_EQ(y.dtype(), dtype);
      EXPECT_TRUE(matches(y, map_unary(ref_of(x), c.ref), tolerance_for(dtype)));
    }
  }
}

TEST_P(UnaryOps, LogicalNotGivesBool) {
  auto f = make({0, 1.5, -2, 0, kNaN}, {5});
  auto y = logical_not(f);
  EXPECT_EQ(y.dtype(), kbool);
  EXPECT_EQ(y.device(), device());
  EXPECT_EQ(y.to_vector<bool>(), (std::vector<bool>{true, false, false, true, false}));
  auto i = make({0, 3, -1}, {3}, int64, Layout::Strided);
  EXPECT_EQ(logical_not(i).to_vector<bool>(), (std::vector<bool>{true, false, false}));
  auto b = make({1, 0, 1, 1}, {2, 2}, kbool, Layout::Transposed);
  EXPECT_EQ(b.logical_not().to_vector<bool>(), (std::vector<bool>{false, true, false, false}));
  auto u = make({0, 255}, {2}, uint8);
  EXPECT_EQ(logical_not(u).to_vector<bool>(), (std::vector<bool>{true, false}));
  EXPECT_EQ(logical_not(zeros({0}, opts())).numel(), 0);
}

TEST_P(UnaryOps, MethodsMatchFreeFunctions) {
  auto x = random({2, 3}, 5, float32, Layout::Contiguous, 0.1, 2);
  auto same = [](const Tensor& a, const Tensor& b) {
    return a.shape() == b.shape() && a.to_vector<float>() == b.to_vector<float>();
  };
  EXPECT_TRUE(same(x.neg(), neg(x)));
  EXPECT_TRUE(same(-x, neg(x)));
  EXPECT_TRUE(same(x.abs(), abs(x)));
  EXPECT_TRUE(same(x.sign(), sign(x)));
  EXPECT_TRUE(same(x.exp(), exp(x)));
  EXPECT_TRUE(same(x.log(), log(x)));
  EXPECT_TRUE(same(x.sqrt(), sqrt(x)));
  EXPECT_TRUE(same(x.rsqrt(), rsqrt(x)));
  EXPECT_TRUE(same(x.sin(), sin(x)));
  EXPECT_TRUE(same(x.cos(), cos(x)));
  EXPECT_TRUE(same(x.tanh(), tanh(x)));
  EXPECT_TRUE(same(x.sigmoid(), sigmoid(x)));
  EXPECT_TRUE(same(x.relu(), relu(x)));
  EXPECT_TRUE(same(x.gelu(), gelu(x)));
  EXPECT_TRUE(same(x.gelu("tanh"), gelu(x, "tanh")));
  EXPECT_FALSE(same(x.gelu("tanh"), gelu(x)));  // the approximation differs somewhere
}

TEST_P(UnaryOps, UnknownGeluApproximationThrows) {
  auto x = zeros({2}, opts());
  EXPECT_KILN_ERROR(gelu(x, "fast"), "fast");
}

// The dispatcher applies the catalogue's dtype rule before it looks for a kernel: a
// dtype the op does not take is an error naming the op and the dtypes it takes, on
// every device alike (not "no kernel on <device>"), and the device stays usable.
TEST_P(UnaryOps, DtypeOutsideTheCatalogueNamesTheAllowedDtypes) {
  // The in-place forms reach the kernel in the tensor's dtype (the out-of-place ones
  // answer uint8 in the frontend, as PyTorch: tests/ops/pytorch_parity_test.cpp).
  auto u = make({0, 3}, {2}, uint8);
  EXPECT_KILN_ERROR(u.relu_(), "kiln.relu", "uint8",
                    "float32, float64, float16, bfloat16, int32, int64");
  EXPECT_KILN_ERROR(u.abs_(), "kiln.abs", "uint8");
  EXPECT_EQ(relu(make({-1, 2}, {2}, int32)).to_vector<int32_t>(), (std::vector<int32_t>{0, 2}));
}

// Every generated op with an in-place spelling (its catalogue entry's "inplace": x.exp_())
// leaves in x exactly what the out-of-place op returns for it, in each of its dtypes,
// through a transposed view, with values from its test domain: no list to keep.
TEST_P(UnaryOps, EveryInPlaceSpellingMatchesTheOutOfPlaceOp) {
  int checked = 0;
  for (const kiln::testing::PointwiseOp& p : kiln::testing::kPointwiseOps) {
    if (p.unary_inplace == nullptr) continue;
    SCOPED_TRACE(p.op);
    for (DType dtype : {float32, float64, float16, bfloat16, int32, int64}) {
      if (!((p.dtypes >> static_cast<int>(dtype)) & 1u)) continue;
      SCOPED_TRACE(dtype_name(dtype));
      Tensor view =
          make(domain_values(p.domain[0], dtype, 12, 3), {3, 4}, dtype, Layout::Transposed);
      const std::vector<double> expected = p.unary(view).to_vector<double>();
      Tensor& same = p.unary_inplace(view);
      EXPECT_EQ(&same, &view);
      EXPECT_TRUE(matches(view, {3, 4}, expected, kExact));
      ++checked;
    }
  }
  EXPECT_GE(checked, 14 * 2);  // neg ... relu and log1p, each in two dtypes at least
}

TEST_P(UnaryOps, InputIsNotModified) {
  auto x = make({-1, 4, 9}, {3});
  (void)sqrt(x);
  (void)relu(x);
  (void)neg(x);
  EXPECT_TRUE(matches(x, {3}, {-1, 4, 9}));
}

// relu's gradient runs kiln.relu_backward: grad_x = grad_y where y = relu(x) > 0, else
// exactly 0 (a select, so NaN/inf gradients where the unit is off still give 0, and a
// NaN input gives 0). The reference is computed in float64 from the values the
// tensors hold; a select is exact, so every dtype must match exactly. The incoming
// gradient takes every layout (strided, transposed, offset views reach the kernel as
// they are), and so does x.
TEST_P(UnaryOps, ReluBackwardSelectsTheGradient) {
  std::vector<double> xs = random_floats(15, 41, -2, 2);
  std::vector<double> gs = random_floats(15, 42, -3, 3);
  // Specials in x: NaN, ±inf, ±0; in g: NaN and ±inf both where the unit is on and off.
  xs[0] = kNaN, xs[1] = kInf, xs[2] = -kInf, xs[3] = 0.0, xs[4] = -0.0;
  xs[5] = 1.5, gs[5] = kNaN;   // on: NaN passes
  xs[6] = -1.5, gs[6] = kNaN;  // off: 0
  xs[7] = 0.25, gs[7] = kInf;
  xs[8] = -0.25, gs[8] = -kInf;
  gs[0] = 2.0, gs[1] = -3.0, gs[2] = 4.0;
  int case_index = 0;
  for (DType dtype : {float32, float64, float16, bfloat16}) {
    for (Layout x_layout : kAllLayouts) {
      for (Layout g_layout : kAllLayouts) {
        SCOPED_TRACE(std::string(dtype_name(dtype)) + " x " + layout_name(x_layout) + ", grad " +
                     layout_name(g_layout));
        auto x = make(xs, {3, 5}, dtype, x_layout);
        x.requires_grad_();
        auto g = make(gs, {3, 5}, dtype, g_layout);
        if (g_layout == Layout::Strided || g_layout == Layout::Transposed) {
          ASSERT_FALSE(g.is_contiguous());
        }
        auto y = relu(x);
        y.backward(g);
        const Ref xr = ref_of(x.detach()), gr = ref_of(g);
        Ref expected = gr;
        for (size_t i = 0; i < expected.values.size(); ++i) {
          const double yi = std::isnan(xr.values[i]) ? xr.values[i] : std::max(xr.values[i], 0.0);
          expected.values[i] = yi <= 0 ? 0.0 : gr.values[i];  // NaN passes, as in PyTorch
        }
        ASSERT_TRUE(x.grad().defined());
        EXPECT_EQ(x.grad().dtype(), dtype);
        EXPECT_EQ(x.grad().device(), device());
        EXPECT_TRUE(matches(x.grad(), expected, kExact));
        ++case_index;
      }
    }
  }
  EXPECT_EQ(case_index, 64);
}

TEST_P(UnaryOps, ReluBackwardLargeInputUsesEveryThread) {
  // Above the CPU plugin's parallel grain (32768 elements), on a strided gradient.
  const int64_t rows = 300, cols = 257;
  auto x = random({rows, cols}, 43, float32, Layout::Transposed);
  x.requires_grad_();
  auto g = random({rows, cols}, 44, float32, Layout::Strided);
  relu(x).backward(g);
  const Ref xr = ref_of(x.detach()), gr = ref_of(g);
  Ref expected = gr;
  for (size_t i = 0; i < expected.values.size(); ++i)
    expected.values[i] = xr.values[i] > 0 ? gr.values[i] : 0.0;
  EXPECT_TRUE(matches(x.grad(), expected, kExact));
}

TEST_P(UnaryOps, ReluBackwardRunsTheCatalogueKernel) {
  // On a device without the kernel (the minimal fixture) it falls back to the CPU
  // plugin, visibly; native devices report nothing for it.
  auto x = make({-1, 2, 0, 3}, {4});
  x.requires_grad_();
  reset_fallback_report();
  relu(x).sum().backward();
  EXPECT_TRUE(matches(x.grad(), {4}, {0, 1, 0, 1}));
  bool fell_back = false;
  for (const FallbackEntry& e : fallback_report().entries)
    fell_back |= e.op == "kiln.relu_backward" && e.device == device().str();
  EXPECT_EQ(fell_back, device().backend() == "minimal") << fallback_report().str();
}

KILN_INSTANTIATE_FOR_EVERY_DEVICE(UnaryOps);

}  // namespace
}  // namespace kiln::test
