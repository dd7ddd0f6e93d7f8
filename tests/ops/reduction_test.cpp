// Reductions on every device: sum, mean, prod, amax/max, amin/min, var (correction 0
// and 1) over single, multiple, negative and all dims, with and without keepdim, on
// every layout; argmax/argmin with ties and NaN; empty and 0-d inputs. References are
// float64 loops (support/reference.h); float32 results within 1e-5 relative.
#include <cmath>
#include <functional>
#include <limits>

#include "ops/conformance.h"

namespace kiln::test {
namespace {

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

struct ReductionCase {
  const char* name;
  std::function<Tensor(const Tensor&, IntArrayRef, bool)> op;
  std::function<double(const std::vector<double>&)> ref;
  bool integer_ok;
};

const std::vector<ReductionCase>& reduction_cases() {
  static const std::vector<ReductionCase> cases = {
      {"sum", [](const Tensor& x, IntArrayRef d, bool k) { return sum(x, d, k); }, ref_sum, true},
      {"mean", [](const Tensor& x, IntArrayRef d, bool k) { return mean(x, d, k); }, ref_mean,
       false},
      {"prod", [](const Tensor& x, IntArrayRef d, bool k) { return prod(x, d, k); }, ref_prod,
       true},
      {"amax", [](const Tensor& x, IntArrayRef d, bool k) { return amax(x, d, k); }, ref_max, true},
      {"amin", [](const Tensor& x, IntArrayRef d, bool k) { return amin(x, d, k); }, ref_min, true},
      {"Tensor::amax", [](const Tensor& x, IntArrayRef d, bool k) { return x.amax(d, k); }, ref_max,
       true},
      {"Tensor::amin", [](const Tensor& x, IntArrayRef d, bool k) { return x.amin(d, k); }, ref_min,
       true},
      {"Tensor::sum", [](const Tensor& x, IntArrayRef d, bool k) { return x.sum(d, k); }, ref_sum,
       true},
      {"var(correction=1)", [](const Tensor& x, IntArrayRef d, bool k) { return var(x, d, 1, k); },
       [](const std::vector<double>& v) { return ref_var(v, 1); }, false},
      {"var(correction=0)", [](const Tensor& x, IntArrayRef d, bool k) { return x.var(d, 0, k); },
       [](const std::vector<double>& v) { return ref_var(v, 0); }, false},
  };
  return cases;
}

const std::vector<Shape>& dim_sets() {
  static const std::vector<Shape> sets = {{},     {0},      {1},    {2},       {-1},
                                          {0, 2}, {-1, -3}, {2, 0}, {0, 1, 2}, {1, -1}};
  return sets;
}

class Reductions : public DeviceTest {};

TEST_P(Reductions, EveryOpEveryDimSetKeepdimAndLayoutFloat32) {
  uint32_t seed = 500;
  for (Layout layout : kAllLayouts) {
    auto x = random({2, 3, 4}, ++seed, float32, layout, 0.5, 1.5);
    const Ref rx = ref_of(x);
    for (const ReductionCase& c : reduction_cases()) {
      for (const Shape& dims : dim_sets()) {
        for (bool keepdim : {false, true}) {
          SCOPED_TRACE(std::string(c.name) + " dims " + shape_str(dims) +
                       (keepdim ? " keepdim " : " ") + layout_name(layout));
          auto y = c.op(x, dims, keepdim);
          EXPECT_EQ(y.dtype(), float32);
          EXPECT_EQ(y.device(), device());
          EXPECT_TRUE(matches(y, reduce(rx, dims, keepdim, c.ref), kFloat32Tol));
        }
      }
    }
  }
}

TEST_P(Reductions, Float64) {
  auto x = random({3, 5}, 77, float64, Layout::Transposed);
  for (const ReductionCase& c : reduction_cases()) {
    for (const Shape& dims : std::vector<Shape>{{}, {0}, {-1}}) {
      SCOPED_TRACE(std::string(c.name) + " dims " + shape_str(dims));
      auto y = c.op(x, dims, false);
      EXPECT_EQ(y.dtype(), float64);
      EXPECT_TRUE(matches(y, reduce(ref_of(x), dims, false, c.ref), kFloat64Tol));
    }
  }
}

TEST_P(Reductions, ExpandedInput) {
  auto x = make({1, 2, 3}, {3, 1}).expand({3, 4});
  EXPECT_TRUE(matches(sum(x, {1}), {3}, {4, 8, 12}));
  EXPECT_TRUE(matches(sum(x, {0}), {4}, {6, 6, 6, 6}));
  EXPECT_TRUE(matches(mean(x), {}, {2}));
  EXPECT_TRUE(matches(var(x, {1}), {3}, {0, 0, 0}));
}

TEST_P(Reductions, IntegerInputs) {
  for (DType dtype : {int32, int64}) {
    auto x = make(random_ints(24, 8, -5, 5), {2, 3, 4}, dtype, Layout::Transposed);
    for (const ReductionCase& c : reduction_cases()) {
      if (!c.integer_ok) continue;
      for (const Shape& dims : std::vector<Shape>{{}, {1}, {0, 2}}) {
        SCOPED_TRACE(std::string(c.name) + " " + std::string(dtype_name(dtype)) + " dims " +
                     shape_str(dims));
        auto y = c.op(x, dims, false);
        EXPECT_TRUE(is_integral(y.dtype())) << y.dtype();
        EXPECT_TRUE(matches(y, reduce(ref_of(x), dims, false, c.ref), kExact));
      }
    }
  }
  // int64 sums are exact beyond 2^53.
  auto big = from_vector<int64_t>({int64_t{1} << 60, 1, 2}, {3}, opts(int64));
  EXPECT_EQ(sum(big).item<int64_t>(), (int64_t{1} << 60) + 3);
}

TEST_P(Reductions, HalfDTypes) {
  for (DType dtype : {float16, bfloat16}) {
    auto x = make(random_grid(12, 5, -2, 2, 16), {3, 4}, dtype, Layout::Strided);
    for (const char* name : {"sum", "mean", "amax", "amin"}) {
      for (const ReductionCase& c : reduction_cases()) {
        if (c.name != std::string(name)) continue;
        SCOPED_TRACE(std::string(name) + " " + std::string(dtype_name(dtype)));
        auto y = c.op(x, {1}, false);
        EXPECT_EQ(y.dtype(), dtype);
        EXPECT_TRUE(matches(y, reduce(ref_of(x), {1}, false, c.ref), tolerance_for(dtype)));
      }
    }
  }
}

TEST_P(Reductions, FloatSumsAccumulateInFloat64) {
  // 100000 x 0.1f: a float32 running sum drifts to ~9998.6; float64 accumulation
  // gives 10000.00015, which rounds to 10000.
  auto x = full({100000}, 0.1, opts());
  EXPECT_NEAR(sum(x).item<float>(), 10000.0f, 0.01f);
  EXPECT_NEAR(mean(x).item<float>(), 0.1f, 1e-7f);
  auto m = full({400, 250}, 0.1, opts());
  EXPECT_NEAR(sum(m, {0, 1}).item<float>(), 10000.0f, 0.01f);
}

TEST_P(Reductions, ReductionResultShapes) {
  auto x = zeros({2, 3, 4}, opts());
  EXPECT_EQ(sum(x).dim(), 0);
  EXPECT_EQ(sum(x, {}, true).shape(), IntArrayRef({1, 1, 1}));
  EXPECT_EQ(sum(x, {1}).shape(), IntArrayRef({2, 4}));
  EXPECT_EQ(sum(x, {1}, true).shape(), IntArrayRef({2, 1, 4}));
  EXPECT_EQ(amax(x, {0, -1}, true).shape(), IntArrayRef({1, 3, 1}));
  EXPECT_EQ(var(x, {2}).shape(), IntArrayRef({2, 3}));
  auto one = zeros({3, 1}, opts());
  EXPECT_EQ(sum(one, {1}).shape(), IntArrayRef({3}));  // reducing a size-1 dim
}

TEST_P(Reductions, VarianceEdgeCases) {
  auto single = make({4}, {1});
  EXPECT_TRUE(matches(var(single), {}, {kNaN}));  // n <= correction
  EXPECT_TRUE(matches(var(single, {}, 0), {}, {0}));
  auto x = make({1, 2, 3, 4}, {4});
  EXPECT_TRUE(matches(var(x), {}, {5.0 / 3}, kFloat32Tol));
  EXPECT_TRUE(matches(var(x, {}, 0), {}, {1.25}, kFloat32Tol));
  // Two-pass: a large offset does not destroy the variance.
  auto shifted = make({1e4 + 1, 1e4 + 2, 1e4 + 3, 1e4 + 4}, {4});
  EXPECT_TRUE(matches(var(shifted, {}, 0), {}, {1.25}, kFloat32Tol));
}

TEST_P(Reductions, NaNPropagates) {
  auto x = make({1, kNaN, 3, 4, 5, 6}, {2, 3});
  EXPECT_TRUE(matches(amax(x, {1}), {2}, {kNaN, 6}));
  EXPECT_TRUE(matches(amin(x, {1}), {2}, {kNaN, 4}));
  EXPECT_TRUE(matches(sum(x, {1}), {2}, {kNaN, 15}));
  EXPECT_TRUE(std::isnan(amax(x).item<float>()));
}

TEST_P(Reductions, ArgmaxArgminAlongDims) {
  for (Layout layout : kAllLayouts) {
    SCOPED_TRACE(layout_name(layout));
    auto x = random({3, 4, 5}, 31, float32, layout);
    const Ref rx = ref_of(x);
    for (int64_t dim : {0, 1, 2, -1, -3}) {
      for (bool keepdim : {false, true}) {
        SCOPED_TRACE("dim " + std::to_string(dim) + (keepdim ? " keepdim" : ""));
        auto a = argmax(x, dim, keepdim);
        EXPECT_EQ(a.dtype(), int64);
        EXPECT_TRUE(matches(a, reduce(rx, {dim}, keepdim, ref_argmax), kExact));
        auto b = x.argmin(dim, keepdim);
        EXPECT_EQ(b.dtype(), int64);
        EXPECT_TRUE(matches(b, reduce(rx, {dim}, keepdim, ref_argmin), kExact));
      }
    }
    // No dim: the index into the flattened tensor, as a 0-d int64.
    auto flat = argmax(x);
    EXPECT_EQ(flat.dim(), 0);
    EXPECT_EQ(flat.dtype(), int64);
    Ref flat_ref = rx;
    flat_ref.shape = {rx.numel()};
    EXPECT_EQ(flat.item<int64_t>(),
              static_cast<int64_t>(reduce(flat_ref, {0}, false, ref_argmax).values[0]));
    EXPECT_EQ(x.argmin().item<int64_t>(),
              static_cast<int64_t>(reduce(flat_ref, {0}, false, ref_argmin).values[0]));
  }
}

TEST_P(Reductions, ArgmaxTiesGiveTheFirstIndex) {
  auto x = make({1, 3, 3, 2, 2, 1}, {2, 3});
  EXPECT_EQ(argmax(x, 1).to_vector<int64_t>(), (std::vector<int64_t>{1, 0}));
  EXPECT_EQ(argmin(x, 1).to_vector<int64_t>(), (std::vector<int64_t>{0, 2}));
  EXPECT_EQ(argmax(x, 0).to_vector<int64_t>(), (std::vector<int64_t>{1, 0, 0}));
  EXPECT_EQ(argmin(x, 0).to_vector<int64_t>(), (std::vector<int64_t>{0, 1, 1}));
  EXPECT_EQ(argmax(x).item<int64_t>(), 1);
  EXPECT_EQ(argmin(x).item<int64_t>(), 0);
  auto all_same = full({7}, 5.0, opts());
  EXPECT_EQ(argmax(all_same).item<int64_t>(), 0);
  EXPECT_EQ(argmin(all_same).item<int64_t>(), 0);
  auto ints = make({4, 9, 9, -1}, {4}, int32, Layout::Strided);
  EXPECT_EQ(argmax(ints).item<int64_t>(), 1);
  EXPECT_EQ(argmin(ints).item<int64_t>(), 3);
  EXPECT_EQ(argmax(x, 1, true).shape(), IntArrayRef({2, 1}));
}

TEST_P(Reductions, ArgmaxCountsNaNAsExtreme) {
  auto x = make({1, kNaN, 3, kNaN}, {4});
  EXPECT_EQ(argmax(x).item<int64_t>(), 1);
  EXPECT_EQ(argmin(x).item<int64_t>(), 1);
}

TEST_P(Reductions, EmptyReductionsGiveTheIdentity) {
  auto e = zeros({0, 3}, opts());
  EXPECT_TRUE(matches(sum(e, {0}), {3}, {0, 0, 0}));
  EXPECT_TRUE(matches(prod(e, {0}), {3}, {1, 1, 1}));
  EXPECT_TRUE(matches(mean(e, {0}), {3}, {kNaN, kNaN, kNaN}));
  EXPECT_TRUE(matches(var(e, {0}), {3}, {kNaN, kNaN, kNaN}));
  EXPECT_TRUE(matches(sum(e), {}, {0}));
  EXPECT_TRUE(matches(sum(e, {0}, true), {1, 3}, {0, 0, 0}));
  EXPECT_EQ(sum(zeros({0}, opts(int64))).item<int64_t>(), 0);
}

TEST_P(Reductions, ReducingANonEmptyDimOfAnEmptyTensorGivesAnEmptyResult) {
  auto e = zeros({0, 3}, opts());
  EXPECT_EQ(sum(e, {1}).shape(), IntArrayRef({0}));
  EXPECT_EQ(amax(e, {1}).shape(), IntArrayRef({0}));
  EXPECT_EQ(amin(e, {1}, true).shape(), IntArrayRef({0, 1}));
  // Dim 1 has 3 elements: nothing to refuse, the result just has no rows.
  EXPECT_NO_THROW(EXPECT_EQ(argmax(e, 1).shape(), IntArrayRef({0})));
  EXPECT_NO_THROW(EXPECT_EQ(argmin(e, -1, true).shape(), IntArrayRef({0, 1})));
}

TEST_P(Reductions, EmptyMaxMinArgmaxAreRefused) {
  auto e = zeros({0, 3}, opts());
  EXPECT_KILN_ERROR(amax(e, {0}), "max", "[0, 3]");
  EXPECT_KILN_ERROR(amin(e), "min", "[0, 3]");
  EXPECT_KILN_ERROR(e.max());
  EXPECT_KILN_ERROR(argmax(e));
  EXPECT_KILN_ERROR(argmin(e, 0));
}

TEST_P(Reductions, ZeroDimInputs) {
  auto s = make({2.5}, {});
  EXPECT_TRUE(matches(sum(s), {}, {2.5}));
  EXPECT_TRUE(matches(mean(s), {}, {2.5}));
  EXPECT_TRUE(matches(prod(s), {}, {2.5}));
  EXPECT_TRUE(matches(amax(s), {}, {2.5}));
  EXPECT_TRUE(matches(var(s, {}, 0), {}, {0}));
  EXPECT_EQ(argmax(s).item<int64_t>(), 0);
}

TEST_P(Reductions, PyTorchSpellings) {
  // x.sum(1) takes one dim; x.max(dim) gives values and indices; x.max() one value.
  auto x = make({3, 9, 2, 4, 8, 1}, {2, 3});
  EXPECT_TRUE(matches(x.sum(1), {2}, {14, 13}));
  EXPECT_TRUE(matches(x.mean(0), {3}, {3.5, 8.5, 1.5}));
  EXPECT_TRUE(matches(x.amax(1, true), {2, 1}, {9, 8}));
  auto [values, indices] = x.max(1);
  EXPECT_TRUE(matches(values, {2}, {9, 8}));
  EXPECT_EQ(indices.to_vector<int64_t>(), (std::vector<int64_t>{1, 1}));
  auto [low, where] = x.min(0, /*keepdim=*/true);
  EXPECT_TRUE(matches(low, {1, 3}, {3, 8, 1}));
  EXPECT_EQ(where.to_vector<int64_t>(), (std::vector<int64_t>{0, 1, 1}));
  EXPECT_TRUE(matches(x.max(), {}, {9}));
  EXPECT_TRUE(matches(x.min(), {}, {1}));
}

KILN_INSTANTIATE_FOR_EVERY_DEVICE(Reductions);

}  // namespace
}  // namespace kiln::test
