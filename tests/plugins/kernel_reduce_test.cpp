// Reductions through the ABI: every layout path (inner, outer, multi-dim, strided,
// full, long-and-split), against double-precision references, plus determinism.
#include <cmath>
#include <cstring>
#include <numeric>

#include "kiln/sdk/half.h"
#include "plugin_fixture.h"

namespace kiln::test {
namespace {

// Deterministic values of mixed sign and magnitude.
std::vector<float> values(size_t n, uint32_t seed = 1) {
  std::vector<float> v(n);
  uint32_t s = seed;
  for (size_t i = 0; i < n; ++i) {
    s = s * 1664525u + 1013904223u;
    v[i] = static_cast<float>(static_cast<int32_t>(s >> 8) % 20001) / 1000.0f - 10.0f;
  }
  return v;
}

// Reference: sum over the dims marked in `reduce` of a contiguous tensor, in double.
std::vector<double> reference_sum(const std::vector<float>& x, const std::vector<int64_t>& shape,
                                  const std::vector<bool>& reduce) {
  std::vector<int64_t> out_shape = shape;
  for (size_t d = 0; d < shape.size(); ++d) {
    if (reduce[d]) out_shape[d] = 1;
  }
  const std::vector<int64_t> out_strides = contiguous_strides(out_shape);
  std::vector<double> out(static_cast<size_t>(std::accumulate(out_shape.begin(), out_shape.end(),
                                                              int64_t{1}, std::multiplies<>())),
                          0.0);
  std::vector<int64_t> index(shape.size(), 0);
  for (size_t flat = 0; flat < x.size(); ++flat) {
    int64_t rest = static_cast<int64_t>(flat), o = 0;
    for (size_t d = shape.size(); d-- > 0;) {
      index[d] = rest % shape[d];
      rest /= shape[d];
      o += (reduce[d] ? 0 : index[d]) * out_strides[d];
    }
    out[static_cast<size_t>(o)] += x[flat];
  }
  return out;
}

void expect_close(const std::vector<float>& y, const std::vector<double>& expected, double rel,
                  const std::string& what) {
  ASSERT_EQ(y.size(), expected.size()) << what;
  for (size_t i = 0; i < y.size(); ++i) {
    ASSERT_NEAR(y[i], expected[i], rel * std::max(1.0, std::fabs(expected[i])))
        << what << " [" << i << "]";
  }
}

TEST(ReduceKernels, SumOverEveryDimSetMatchesDouble) {
  const std::vector<int64_t> shape = {7, 129, 33};
  std::vector<float> x = values(7 * 129 * 33);
  View vx = view_of(x, KILN_DTYPE_FLOAT32, shape);
  for (int mask = 1; mask < 8; ++mask) {
    std::vector<bool> reduce = {(mask & 1) != 0, (mask & 2) != 0, (mask & 4) != 0};
    std::vector<int64_t> out_shape = shape;
    for (size_t d = 0; d < 3; ++d) {
      if (reduce[d]) out_shape[d] = 1;
    }
    const std::vector<double> expected = reference_sum(x, shape, reduce);
    std::vector<float> y(expected.size(), -1);
    View vy = view_of(y, KILN_DTYPE_FLOAT32, out_shape);
    ASSERT_TRUE(run_op("kiln.sum", {&vx}, {&vy}).ok());
    // Accumulated in float64, so only the final rounding to float32 remains.
    expect_close(y, expected, 1e-7, "mask " + std::to_string(mask));
  }
}

TEST(ReduceKernels, SumOfATransposedView) {
  // x is [50, 300] stored transposed: x[i][j] at j * 50 + i.
  std::vector<float> storage = values(50 * 300, 7), y(50);
  View vx = view_of(storage, KILN_DTYPE_FLOAT32, {50, 300}, {1, 50});
  View vy = view_of(y, KILN_DTYPE_FLOAT32, {50, 1});
  ASSERT_TRUE(run_op("kiln.sum", {&vx}, {&vy}).ok());
  for (int64_t i = 0; i < 50; ++i) {
    double expected = 0;
    for (int64_t j = 0; j < 300; ++j) expected += storage[static_cast<size_t>(j * 50 + i)];
    ASSERT_NEAR(y[static_cast<size_t>(i)], expected, 1e-7 * std::max(1.0, std::fabs(expected)))
        << i;
  }
}

TEST(ReduceKernels, LongReductionsAreAccurateAndDeterministic) {
  // One output over 3M elements (split into chunks) and three columns over 1M rows.
  const size_t n = 3000000;
  std::vector<float> x = values(n, 3);
  double expected = 0;
  for (float v : x) expected += v;
  View vx = view_of(x, KILN_DTYPE_FLOAT32, {static_cast<int64_t>(n)});
  std::vector<float> first(1), second(1);
  View v1 = view_of(first, KILN_DTYPE_FLOAT32, {1}), v2 = view_of(second, KILN_DTYPE_FLOAT32, {1});
  ASSERT_TRUE(run_op("kiln.sum", {&vx}, {&v1}).ok());
  for (int run = 0; run < 5; ++run) {
    ASSERT_TRUE(run_op("kiln.sum", {&vx}, {&v2}).ok());
    ASSERT_EQ(std::memcmp(first.data(), second.data(), sizeof(float)), 0) << "run " << run;
  }
  EXPECT_NEAR(first[0], expected, 1e-6 * std::fabs(expected) + 1e-3);

  View vcolumns = view_of(x, KILN_DTYPE_FLOAT32, {1000000, 3});
  std::vector<float> y(3);
  View vy = view_of(y, KILN_DTYPE_FLOAT32, {1, 3});
  ASSERT_TRUE(run_op("kiln.sum", {&vcolumns}, {&vy}).ok());
  expect_close(y, reference_sum(x, {1000000, 3}, {true, false}), 1e-7, "columns");
}

TEST(ReduceKernels, MeanAndVarWithCorrection) {
  const std::vector<int64_t> shape = {5, 1000};
  std::vector<float> xf = values(5000, 11);
  std::vector<double> x(xf.begin(), xf.end());
  View vx = view_of(x, KILN_DTYPE_FLOAT64, shape);
  std::vector<double> mean(5), var(5);
  View vmean = view_of(mean, KILN_DTYPE_FLOAT64, {5, 1}),
       vvar = view_of(var, KILN_DTYPE_FLOAT64, {5, 1});
  ASSERT_TRUE(run_op("kiln.mean", {&vx}, {&vmean}).ok());
  for (int64_t correction : {0, 1, 7}) {
    ASSERT_TRUE(run_op("kiln.var", {&vx}, {&vvar}, {int_attr("correction", correction)}).ok());
    for (size_t r = 0; r < 5; ++r) {
      double m = 0;
      for (size_t j = 0; j < 1000; ++j) m += x[r * 1000 + j];
      m /= 1000;
      double m2 = 0;
      for (size_t j = 0; j < 1000; ++j) m2 += (x[r * 1000 + j] - m) * (x[r * 1000 + j] - m);
      EXPECT_NEAR(mean[r], m, 1e-12);
      EXPECT_NEAR(var[r], m2 / static_cast<double>(1000 - correction), 1e-10)
          << "correction " << correction;
    }
  }
  // n <= correction, and empty reductions.
  std::vector<double> two = {1, 2}, out(1);
  View vtwo = view_of(two, KILN_DTYPE_FLOAT64, {2}), vout = view_of(out, KILN_DTYPE_FLOAT64, {1});
  ASSERT_TRUE(run_op("kiln.var", {&vtwo}, {&vout}, {int_attr("correction", 2)}).ok());
  EXPECT_TRUE(std::isnan(out[0]));
  View vempty = view_of(two, KILN_DTYPE_FLOAT64, {0});
  ASSERT_TRUE(run_op("kiln.mean", {&vempty}, {&vout}).ok());
  EXPECT_TRUE(std::isnan(out[0]));
}

// Empty reductions, integer wrap-around, NaN propagation and first-index ties are
// known-answer cases of the op suites (sdk/conformance), run on every device.
TEST(ReduceKernels, ArgmaxReducesExactlyOneDim) {
  std::vector<float> x(12, 1);
  std::vector<int64_t> y(1);
  View vx = view_of(x, KILN_DTYPE_FLOAT32, {3, 4}), vy = view_of(y, KILN_DTYPE_INT64, {1, 1});
  EXPECT_EQ(run_op("kiln.argmax", {&vx}, {&vy}).code, KILN_STATUS_INVALID_ARGUMENT);
}

TEST(ReduceKernels, Int32SumsAccumulateIn64Bits) {
  // int32 in, int32 out (the frontend itself sums int32 in int64): the partial sums
  // pass INT32_MAX, the result does not.
  std::vector<int32_t> ints = {2000000000, 2000000000, -2000000000, -1999999999};
  std::vector<int32_t> sum(1);
  View vints = view_of(ints, KILN_DTYPE_INT32, {4}), vsum = view_of(sum, KILN_DTYPE_INT32, {1});
  ASSERT_TRUE(run_op("kiln.sum", {&vints}, {&vsum}).ok());
  EXPECT_EQ(sum[0], 1);
}

TEST(ReduceKernels, HalfSumsAccumulateInFloat) {
  std::vector<float> xf = values(4096, 13);
  std::vector<sdk::float16> x(xf.size());
  double expected = 0;
  for (size_t i = 0; i < xf.size(); ++i) {
    x[i] = sdk::float16(xf[i]);
    expected += static_cast<float>(x[i]);
  }
  std::vector<sdk::float16> y(1);
  View vx = view_of(x, KILN_DTYPE_FLOAT16, {4096}), vy = view_of(y, KILN_DTYPE_FLOAT16, {1});
  ASSERT_TRUE(run_op("kiln.sum", {&vx}, {&vy}).ok());
  // float32 accumulation error is far below one float16 ulp (2^-10 relative).
  EXPECT_NEAR(static_cast<float>(y[0]), expected, std::fabs(expected) * 1e-3 + 1e-2);
}

TEST(ReduceKernels, SupportsFollowsTheCatalogue) {
  std::vector<uint8_t> bytes(4);
  std::vector<int32_t> ints(4);
  std::vector<int64_t> longs(1);
  View vu8 = view_of(bytes, KILN_DTYPE_UINT8, {4}), vu8_out = view_of(bytes, KILN_DTYPE_UINT8, {1});
  View vint = view_of(ints, KILN_DTYPE_INT32, {4}), vint_out = view_of(ints, KILN_DTYPE_INT32, {1});
  View vlong = view_of(longs, KILN_DTYPE_INT64, {1});
  EXPECT_EQ(op_supports("kiln.sum", {&vint}, {&vint_out}), 1);
  EXPECT_EQ(op_supports("kiln.sum", {&vu8}, {&vu8_out}), 0);
  EXPECT_EQ(op_supports("kiln.mean", {&vint}, {&vint_out}), 0);
  EXPECT_EQ(op_supports("kiln.amax", {&vu8}, {&vu8_out}), 1);
  EXPECT_EQ(op_supports("kiln.argmax", {&vu8}, {&vlong}), 1);
  EXPECT_EQ(op_supports("kiln.argmax", {&vu8}, {&vu8_out}), 0);
}

}  // namespace
}  // namespace kiln::test
