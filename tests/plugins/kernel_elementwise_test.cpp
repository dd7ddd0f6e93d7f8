// Elementwise kernels called directly through the ABI: broadcast (stride 0), strided
// and negative-stride views, in-place, parallel sizes, dtypes and `supports`.
#include <algorithm>
#include <atomic>
#include <cmath>
#include <thread>

#include "kiln/sdk/half.h"
#include "plugin_fixture.h"

namespace kiln::test {
namespace {

using sdk::bfloat16;
using sdk::float16;

std::vector<float> ramp(size_t n, float scale = 0.25f, float shift = -3.0f) {
  std::vector<float> v(n);
  for (size_t i = 0; i < n; ++i) v[i] = static_cast<float>(i % 97) * scale + shift;
  return v;
}

TEST(ElementwiseKernels, AddBroadcastsStrideZeroInputs) {
  std::vector<float> a = ramp(12), row = {10, 20, 30, 40}, scalar = {0.5f}, y(12, -1);
  View va = view_of(a, KILN_DTYPE_FLOAT32, {3, 4});
  View vrow = view_of(row, KILN_DTYPE_FLOAT32, {3, 4}, {0, 1});        // [4] expanded over rows
  View vscalar = view_of(scalar, KILN_DTYPE_FLOAT32, {3, 4}, {0, 0});  // 0-d expanded
  View vy = view_of(y, KILN_DTYPE_FLOAT32, {3, 4});
  ASSERT_TRUE(run_op("kiln.add", {&va, &vrow}, {&vy}).ok());
  for (int i = 0; i < 3; ++i) {
    for (int j = 0; j < 4; ++j) EXPECT_EQ(y[i * 4 + j], a[i * 4 + j] + row[j]) << i << "," << j;
  }
  ASSERT_TRUE(run_op("kiln.sub", {&vscalar, &va}, {&vy}).ok());  // scalar on the left
  for (int i = 0; i < 12; ++i) EXPECT_EQ(y[i], 0.5f - a[i]) << i;
  // A column vector [3,1] expanded to [3,4]: stride 0 on the inner dim.
  std::vector<float> column = {1, 2, 3};
  View vcolumn = view_of(column, KILN_DTYPE_FLOAT32, {3, 4}, {1, 0});
  ASSERT_TRUE(run_op("kiln.mul", {&va, &vcolumn}, {&vy}).ok());
  for (int i = 0; i < 12; ++i) EXPECT_EQ(y[i], a[i] * column[i / 4]) << i;
}

TEST(ElementwiseKernels, ZeroDimensionalOperands) {
  std::vector<float> a = {1.5f}, b = {2.25f}, y = {0};
  View va = view_of(a, KILN_DTYPE_FLOAT32, {}), vb = view_of(b, KILN_DTYPE_FLOAT32, {});
  View vy = view_of(y, KILN_DTYPE_FLOAT32, {});
  ASSERT_TRUE(run_op("kiln.add", {&va, &vb}, {&vy}).ok());
  EXPECT_EQ(y[0], 3.75f);
}

TEST(ElementwiseKernels, EmptyTensorsWriteNothing) {
  std::vector<float> a(4, 1), y(4, 7);
  View va = view_of(a, KILN_DTYPE_FLOAT32, {0, 4}), vy = view_of(y, KILN_DTYPE_FLOAT32, {0, 4});
  ASSERT_TRUE(run_op("kiln.exp", {&va}, {&vy}).ok());
  EXPECT_EQ(y, std::vector<float>(4, 7));
}

TEST(ElementwiseKernels, LargeTensorsMatchTheReferenceOnEveryThread) {
  // Above the parallel threshold, with an odd size so chunks end mid-vector.
  const size_t n = (size_t{1} << 20) + 3;
  std::vector<float> a = ramp(n), b = ramp(n, -0.5f, 7.0f), y(n);
  View va = view_of(a, KILN_DTYPE_FLOAT32, {static_cast<int64_t>(n)});
  View vb = view_of(b, KILN_DTYPE_FLOAT32, {static_cast<int64_t>(n)});
  View vy = view_of(y, KILN_DTYPE_FLOAT32, {static_cast<int64_t>(n)});
  ASSERT_TRUE(run_op("kiln.mul", {&va, &vb}, {&vy}).ok());
  for (size_t i = 0; i < n; ++i) ASSERT_EQ(y[i], a[i] * b[i]) << i;
  ASSERT_TRUE(run_op("kiln.tanh", {&va}, {&vy}).ok());
  for (size_t i = 0; i < n; i += 101)
    ASSERT_NEAR(y[i], std::tanh(static_cast<double>(a[i])), 2e-7) << i;
}

TEST(ElementwiseKernels, ConcurrentCallersGetCorrectResults) {
  // Ops may be called from many threads at once; whoever finds the pool busy runs
  // inline. Every thread checks its own results.
  std::vector<std::thread> threads;
  std::atomic<int> failures{0};
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([t, &failures] {
      const size_t n = 200000 + static_cast<size_t>(t) * 1000;
      std::vector<float> a = ramp(n, 0.5f, static_cast<float>(t)), b = ramp(n, 0.25f, 1.0f), y(n);
      View va = view_of(a, KILN_DTYPE_FLOAT32, {static_cast<int64_t>(n)});
      View vb = view_of(b, KILN_DTYPE_FLOAT32, {static_cast<int64_t>(n)});
      View vy = view_of(y, KILN_DTYPE_FLOAT32, {static_cast<int64_t>(n)});
      for (int round = 0; round < 20; ++round) {
        if (!run_op("kiln.add", {&va, &vb}, {&vy}).ok()) ++failures;
        for (size_t i = 0; i < n; i += 97) {
          if (y[i] != a[i] + b[i]) ++failures;
        }
      }
    });
  }
  for (auto& thread : threads) thread.join();
  EXPECT_EQ(failures.load(), 0);
}

TEST(ElementwiseKernels, TransposedNegativeAndOffsetViews) {
  // x: a [33, 64] matrix read transposed ([64, 33], strides (1, 64)) and backwards along
  // its first dim; y: written through a transposed view too.
  const int64_t rows = 33, cols = 64;
  std::vector<float> x = ramp(static_cast<size_t>(rows * cols) + 5),
                     y(static_cast<size_t>(rows * cols), 0);
  // x_view[i][j] = x[5 + (cols - 1 - i) + j * cols]
  View vx = view_of(x, KILN_DTYPE_FLOAT32, {cols, rows}, {-1, cols}, 5 + cols - 1);
  View vy =
      view_of(y, KILN_DTYPE_FLOAT32, {cols, rows}, {1, cols});  // y_view[i][j] = y[i + j*cols]
  ASSERT_TRUE(run_op("kiln.neg", {&vx}, {&vy}).ok());
  for (int64_t i = 0; i < cols; ++i) {
    for (int64_t j = 0; j < rows; ++j) {
      ASSERT_EQ(y[static_cast<size_t>(i + j * cols)],
                -x[static_cast<size_t>(5 + (cols - 1 - i) + j * cols)])
          << i << "," << j;
    }
  }
}

TEST(ElementwiseKernels, InPlaceAddUsesTheSameView) {
  std::vector<float> a = ramp(100000), b = ramp(100000, 2.0f, 1.0f), expected(100000);
  for (size_t i = 0; i < a.size(); ++i) expected[i] = a[i] + b[i];
  View va = view_of(a, KILN_DTYPE_FLOAT32, {100, 1000}),
       vb = view_of(b, KILN_DTYPE_FLOAT32, {100, 1000});
  ASSERT_TRUE(run_op("kiln.add", {&va, &vb}, {&va}).ok());
  EXPECT_EQ(a, expected);
}

TEST(ElementwiseKernels, HalfTypesComputeInFloatAndRoundOnce) {
  std::vector<float> fa = ramp(1000, 0.37f, -11.0f), fb = ramp(1000, -0.11f, 2.0f);
  std::vector<float16> a(1000), b(1000), y(1000);
  std::vector<bfloat16> ba(1000), bb(1000), by(1000);
  for (size_t i = 0; i < 1000; ++i) {
    a[i] = float16(fa[i]);
    b[i] = float16(fb[i]);
    ba[i] = bfloat16(fa[i]);
    bb[i] = bfloat16(fb[i]);
  }
  View va = view_of(a, KILN_DTYPE_FLOAT16, {1000}), vb = view_of(b, KILN_DTYPE_FLOAT16, {1000});
  View vy = view_of(y, KILN_DTYPE_FLOAT16, {1000});
  ASSERT_TRUE(run_op("kiln.div", {&va, &vb}, {&vy}).ok());
  for (size_t i = 0; i < 1000; ++i) {
    // float32 division is correctly rounded and float16's 11 bits are far below its 24,
    // so rounding the float32 quotient gives the exactly rounded half result here.
    const float expected =
        static_cast<float>(float16(static_cast<float>(a[i]) / static_cast<float>(b[i])));
    ASSERT_EQ(static_cast<float>(y[i]), expected) << i;
  }
  View vba = view_of(ba, KILN_DTYPE_BFLOAT16, {1000}),
       vbb = view_of(bb, KILN_DTYPE_BFLOAT16, {1000});
  View vby = view_of(by, KILN_DTYPE_BFLOAT16, {1000});
  ASSERT_TRUE(run_op("kiln.sub", {&vba, &vbb}, {&vby}).ok());
  for (size_t i = 0; i < 1000; ++i) {
    const float expected =
        static_cast<float>(bfloat16(static_cast<float>(ba[i]) - static_cast<float>(bb[i])));
    ASSERT_EQ(static_cast<float>(by[i]), expected) << i;
  }
}

struct UnaryCase {
  const char* name;
  double (*reference)(double);
  double tolerance;  // relative to max(1, |expected|); float32 results
  bool positive_domain;
};

TEST(ElementwiseKernels, UnaryFloatOpsMatchADoubleReference) {
  const UnaryCase cases[] = {
      {"kiln.exp", [](double x) { return std::exp(x); }, 1e-6, false},
      {"kiln.log", [](double x) { return std::log(x); }, 1e-6, true},
      {"kiln.sqrt", [](double x) { return std::sqrt(x); }, 1e-6, true},
      {"kiln.rsqrt", [](double x) { return 1 / std::sqrt(x); }, 1e-6, true},
      {"kiln.sin", [](double x) { return std::sin(x); }, 1e-6, false},
      {"kiln.cos", [](double x) { return std::cos(x); }, 1e-6, false},
      {"kiln.tanh", [](double x) { return std::tanh(x); }, 1e-6, false},
      {"kiln.sigmoid", [](double x) { return 1 / (1 + std::exp(-x)); }, 1e-6, false},
      {"kiln.relu", [](double x) { return x < 0 ? 0.0 : x; }, 0, false},
      {"kiln.abs", [](double x) { return std::fabs(x); }, 0, false},
      {"kiln.neg", [](double x) { return -x; }, 0, false},
      {"kiln.sign", [](double x) { return x > 0 ? 1.0 : (x < 0 ? -1.0 : 0.0); }, 0, false},
  };
  for (const UnaryCase& c : cases) {
    std::vector<float> x = ramp(2000, 0.013f, -12.0f);
    if (c.positive_domain) {
      for (float& v : x) v = std::fabs(v) + 0.1f;
    }
    std::vector<float> y(x.size());
    View vx = view_of(x, KILN_DTYPE_FLOAT32, {40, 50}),
         vy = view_of(y, KILN_DTYPE_FLOAT32, {40, 50});
    ASSERT_TRUE(run_op(c.name, {&vx}, {&vy}).ok()) << c.name;
    for (size_t i = 0; i < y.size(); ++i) {
      const double expected = c.reference(x[i]);
      ASSERT_NEAR(y[i], expected, c.tolerance * std::max(1.0, std::fabs(expected)))
          << c.name << " at x = " << x[i];
    }
  }
}

// The values of integer wrap-around, NaN propagation, clamp bounds, comparisons and
// both GELU formulas are known-answer cases of the op suites (sdk/conformance), run
// on every device. What is left here is the kernels' side of the ABI.
TEST(ElementwiseKernels, GeluRefusesAnUnknownApproximation) {
  std::vector<double> x = {-1, 0, 1}, y(3);
  View vx = view_of(x, KILN_DTYPE_FLOAT64, {3}), vy = view_of(y, KILN_DTYPE_FLOAT64, {3});
  const Outcome o = run_op("kiln.gelu", {&vx}, {&vy}, {string_attr("approximate", "erf")});
  EXPECT_EQ(o.code, KILN_STATUS_INVALID_ARGUMENT);
  EXPECT_NE(o.message.find("approximate must be"), std::string::npos) << o.message;
}

TEST(ElementwiseKernels, WhereWithABroadcastCondition) {
  std::vector<uint8_t> condition = {1, 0, 1};
  std::vector<int64_t> a(12), b(1, -1), y(12);
  for (size_t i = 0; i < 12; ++i) a[i] = static_cast<int64_t>(i * 10);
  View vc = view_of(condition, KILN_DTYPE_BOOL, {4, 3}, {0, 1});
  View va = view_of(a, KILN_DTYPE_INT64, {4, 3});
  View vb = view_of(b, KILN_DTYPE_INT64, {4, 3}, {0, 0});
  View vy = view_of(y, KILN_DTYPE_INT64, {4, 3});
  ASSERT_TRUE(run_op("kiln.where", {&vc, &va, &vb}, {&vy}).ok());
  for (size_t i = 0; i < 12; ++i) EXPECT_EQ(y[i], condition[i % 3] ? a[i] : -1) << i;
}

TEST(ElementwiseKernels, SupportsRejectsDtypesOutsideTheCatalogue) {
  std::vector<uint8_t> bytes(4);
  std::vector<int32_t> ints(4);
  std::vector<float> floats(4);
  View vbool = view_of(bytes, KILN_DTYPE_BOOL, {4}), vint = view_of(ints, KILN_DTYPE_INT32, {4});
  View vfloat = view_of(floats, KILN_DTYPE_FLOAT32, {4}),
       vu8 = view_of(bytes, KILN_DTYPE_UINT8, {4});
  EXPECT_EQ(op_supports("kiln.add", {&vbool, &vbool}, {&vbool}), 0);
  EXPECT_EQ(op_supports("kiln.add", {&vint, &vint}, {&vint}), 1);
  EXPECT_EQ(op_supports("kiln.add", {&vfloat, &vfloat}, {&vfloat}), 1);
  EXPECT_EQ(op_supports("kiln.div", {&vint, &vint}, {&vint}), 0);
  EXPECT_EQ(op_supports("kiln.exp", {&vint}, {&vint}), 0);
  EXPECT_EQ(op_supports("kiln.neg", {&vu8}, {&vu8}), 0);
  EXPECT_EQ(op_supports("kiln.neg", {&vint}, {&vint}), 1);
  EXPECT_EQ(op_supports("kiln.eq", {&vbool, &vbool}, {&vbool}), 1);
  // And run() itself refuses cleanly rather than computing garbage.
  EXPECT_EQ(run_op("kiln.add", {&vbool, &vbool}, {&vbool}).code, KILN_STATUS_UNSUPPORTED);
}

TEST(ElementwiseKernels, MismatchedShapesAreRejected) {
  std::vector<float> a(6), b(6), y(6);
  View va = view_of(a, KILN_DTYPE_FLOAT32, {2, 3}), vb = view_of(b, KILN_DTYPE_FLOAT32, {3, 2});
  View vy = view_of(y, KILN_DTYPE_FLOAT32, {2, 3});
  const Outcome o = run_op("kiln.add", {&va, &vb}, {&vy});
  EXPECT_EQ(o.code, KILN_STATUS_INVALID_ARGUMENT);
  EXPECT_NE(o.message.find("[3,2]"), std::string::npos) << o.message;
}

}  // namespace
}  // namespace kiln::test
