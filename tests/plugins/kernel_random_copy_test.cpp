// Creation and conversion kernels: Philox random numbers (bit-exact against the SDK's
// definition), copy between every dtype pair, fill, arange and linspace.
#include <cmath>
#include <cstring>
#include <limits>

#include "kiln/sdk/half.h"
#include "kiln/sdk/philox.h"
#include "plugin_fixture.h"

namespace kiln::test {
namespace {

using sdk::bfloat16;
using sdk::float16;

Outcome run_random(const char* name, View& y, int64_t seed, int64_t offset, double a, double b) {
  const bool uniform = std::string(name) == "kiln.random_uniform";
  return run_op(name, {}, {&y},
                {int_attr("seed", seed), int_attr("offset", offset),
                 float_attr(uniform ? "low" : "mean", a), float_attr(uniform ? "high" : "std", b)});
}

TEST(RandomKernels, UniformFloat32IsTheSdkDefinitionAndInRange) {
  const int64_t n = 100003;  // parallel, and not a multiple of 4
  std::vector<float> y(n), again(n);
  View vy = view_of(y, KILN_DTYPE_FLOAT32, {n}), vagain = view_of(again, KILN_DTYPE_FLOAT32, {n});
  ASSERT_TRUE(run_random("kiln.random_uniform", vy, 1234, 7, -2.0, 3.0).ok());
  ASSERT_TRUE(run_random("kiln.random_uniform", vagain, 1234, 7, -2.0, 3.0).ok());
  EXPECT_EQ(std::memcmp(y.data(), again.data(), y.size() * sizeof(float)), 0) << "reproducible";
  double sum = 0;
  for (int64_t i = 0; i < n; ++i) {
    ASSERT_EQ(y[static_cast<size_t>(i)],
              sdk::random_uniform_f32(1234, 7, static_cast<uint64_t>(i), -2.0f, 3.0f))
        << i;
    ASSERT_GE(y[static_cast<size_t>(i)], -2.0f);
    ASSERT_LT(y[static_cast<size_t>(i)], 3.0f);
    sum += y[static_cast<size_t>(i)];
  }
  EXPECT_NEAR(sum / static_cast<double>(n), 0.5, 0.02);
  // One block further on = four elements further on.
  ASSERT_TRUE(run_random("kiln.random_uniform", vagain, 1234, 8, -2.0, 3.0).ok());
  EXPECT_EQ(again[0], y[4]);
  EXPECT_EQ(again[100], y[104]);
  // Another seed, other numbers.
  ASSERT_TRUE(run_random("kiln.random_uniform", vagain, 1235, 7, -2.0, 3.0).ok());
  EXPECT_NE(std::memcmp(y.data(), again.data(), 64), 0);
}

TEST(RandomKernels, UniformFloat64AndHalfTypes) {
  std::vector<double> d(1001);
  View vd = view_of(d, KILN_DTYPE_FLOAT64, {7, 143});
  ASSERT_TRUE(run_random("kiln.random_uniform", vd, -5, 3, 0.0, 1.0).ok());
  for (size_t i = 0; i < d.size(); ++i) {
    ASSERT_EQ(d[i], sdk::random_uniform_f64(static_cast<uint64_t>(int64_t{-5}), 3, i, 0.0, 1.0))
        << i;
    ASSERT_GE(d[i], 0.0);
    ASSERT_LT(d[i], 1.0);
  }
  std::vector<float16> h(999);
  View vh = view_of(h, KILN_DTYPE_FLOAT16, {999});
  ASSERT_TRUE(run_random("kiln.random_uniform", vh, 42, 0, 10.0, 20.0).ok());
  for (size_t i = 0; i < h.size(); ++i) {
    ASSERT_EQ(h[i].bits, float16(sdk::random_uniform_f32(42, 0, i, 10.0f, 20.0f)).bits) << i;
  }
}

TEST(RandomKernels, NormalMatchesTheSdkAndHasTheRightMoments) {
  const int64_t n = 200001;
  std::vector<float> y(n);
  View vy = view_of(y, KILN_DTYPE_FLOAT32, {n});
  ASSERT_TRUE(run_random("kiln.random_normal", vy, 99, 1000, 1.5, 2.0).ok());
  double sum = 0, sum_sq = 0;
  for (int64_t i = 0; i < n; ++i) {
    const float expected =
        static_cast<float>(sdk::random_normal(99, 1000, static_cast<uint64_t>(i), 1.5, 2.0));
    ASSERT_EQ(y[static_cast<size_t>(i)], expected) << i;
    sum += y[static_cast<size_t>(i)];
    sum_sq += static_cast<double>(y[static_cast<size_t>(i)]) * y[static_cast<size_t>(i)];
  }
  const double mean = sum / static_cast<double>(n);
  const double std_dev = std::sqrt(sum_sq / static_cast<double>(n) - mean * mean);
  // Standard errors: 2/sqrt(n) ~ 0.0045 for the mean, ~0.003 for the std.
  EXPECT_NEAR(mean, 1.5, 0.025);
  EXPECT_NEAR(std_dev, 2.0, 0.02);
}

TEST(RandomKernels, OnlyFloatDtypes) {
  std::vector<int32_t> ints(4);
  View vi = view_of(ints, KILN_DTYPE_INT32, {4});
  EXPECT_EQ(op_supports("kiln.random_uniform", {}, {&vi}), 0);
  EXPECT_EQ(run_random("kiln.random_uniform", vi, 1, 0, 0, 1).code, KILN_STATUS_UNSUPPORTED);
}

TEST(CopyKernel, Float32ToFloat16AndBackRoundTrips) {
  std::vector<float> x = {0.0f,
                          -0.0f,
                          1.0f,
                          -2.5f,
                          65504.0f,
                          1e-7f,
                          3.14159265f,
                          1e6f,
                          std::numeric_limits<float>::infinity(),
                          std::numeric_limits<float>::quiet_NaN(),
                          6.1e-5f,
                          0.1f};
  const int64_t n = static_cast<int64_t>(x.size());
  std::vector<float16> h(x.size());
  std::vector<float> back(x.size());
  View vx = view_of(x, KILN_DTYPE_FLOAT32, {n}), vh = view_of(h, KILN_DTYPE_FLOAT16, {n});
  View vback = view_of(back, KILN_DTYPE_FLOAT32, {n});
  ASSERT_TRUE(run_op("kiln.copy", {&vx}, {&vh}).ok());
  ASSERT_TRUE(run_op("kiln.copy", {&vh}, {&vback}).ok());
  for (size_t i = 0; i < x.size(); ++i) {
    if (std::isnan(x[i])) {
      EXPECT_TRUE(std::isnan(back[i]));
    } else if (std::fabs(x[i]) > 65519.0f) {
      EXPECT_EQ(back[i], std::copysign(std::numeric_limits<float>::infinity(), x[i])) << x[i];
    } else {
      // Representable values come back exactly; others within half an ulp of float16
      // (2^-11 relative for normals, 2^-25 absolute for subnormals).
      EXPECT_NEAR(back[i], x[i], std::max(std::fabs(x[i]) * 0x1p-11f, 0x1p-25f)) << x[i];
    }
  }
  EXPECT_EQ(back[0], 0.0f);
  EXPECT_TRUE(std::signbit(back[1]));
  EXPECT_EQ(back[2], 1.0f);
  EXPECT_EQ(back[3], -2.5f);
  EXPECT_EQ(back[4], 65504.0f);
  EXPECT_EQ(back[6], 3.140625f);
}

TEST(CopyKernel, Float64ToHalfRoundsOnce) {
  // Just above the midpoint between 1 and the next float16: rounding through float32
  // first would land exactly on the midpoint and tie to 1.0.
  std::vector<double> x = {1.0 + 0x1p-11 + 0x1p-40};
  std::vector<float16> h(1);
  View vx = view_of(x, KILN_DTYPE_FLOAT64, {1}), vh = view_of(h, KILN_DTYPE_FLOAT16, {1});
  ASSERT_TRUE(run_op("kiln.copy", {&vx}, {&vh}).ok());
  EXPECT_EQ(static_cast<float>(h[0]), 1.0f + 0x1p-10f);
}

// Writes `values` as dtype `to`, then reads them back as float64.
std::vector<double> convert_through(const std::vector<float>& values, kiln_dtype to) {
  const int64_t n = static_cast<int64_t>(values.size());
  std::vector<uint64_t> middle(values.size());  // 8 bytes per element: room for any dtype
  std::vector<float> source = values;
  std::vector<double> out(values.size());
  View vsource = view_of(source, KILN_DTYPE_FLOAT32, {n});
  View vmiddle(middle.data(), to, {n});
  View vout = view_of(out, KILN_DTYPE_FLOAT64, {n});
  EXPECT_TRUE(run_op("kiln.copy", {&vsource}, {&vmiddle}).ok());
  EXPECT_TRUE(run_op("kiln.copy", {&vmiddle}, {&vout}).ok());
  return out;
}

TEST(CopyKernel, EveryDtypeBothWays) {
  const std::vector<float> values = {0, 1, 2.75f, 3.5f, 100, 0.5f};
  const std::vector<double> exact = {0, 1, 2.75, 3.5, 100, 0.5};
  const std::vector<double> truncated = {0, 1, 2, 3, 100, 0};
  EXPECT_EQ(convert_through(values, KILN_DTYPE_FLOAT32), exact);
  EXPECT_EQ(convert_through(values, KILN_DTYPE_FLOAT64), exact);
  EXPECT_EQ(convert_through(values, KILN_DTYPE_FLOAT16), exact);
  EXPECT_EQ(convert_through(values, KILN_DTYPE_BFLOAT16), exact);
  EXPECT_EQ(convert_through(values, KILN_DTYPE_INT32), truncated);
  EXPECT_EQ(convert_through(values, KILN_DTYPE_INT64), truncated);
  EXPECT_EQ(convert_through(values, KILN_DTYPE_UINT8), truncated);
  EXPECT_EQ(convert_through(values, KILN_DTYPE_BOOL), (std::vector<double>{0, 1, 1, 1, 1, 1}));
  // Negative values truncate toward zero.
  EXPECT_EQ(convert_through({-2.75f, -0.5f}, KILN_DTYPE_INT32), (std::vector<double>{-2, 0}));
  // And every pair directly, without float in between, on small integers and bools.
  const kiln_dtype all[] = {KILN_DTYPE_FLOAT32,  KILN_DTYPE_FLOAT64, KILN_DTYPE_FLOAT16,
                            KILN_DTYPE_BFLOAT16, KILN_DTYPE_INT32,   KILN_DTYPE_INT64,
                            KILN_DTYPE_UINT8,    KILN_DTYPE_BOOL};
  for (kiln_dtype from : all) {
    for (kiln_dtype to : all) {
      std::vector<uint64_t> a(3), b(3);
      std::vector<double> out(3);
      std::vector<float> seed = {0, 1, 3};
      View vseed = view_of(seed, KILN_DTYPE_FLOAT32, {3});
      View va(a.data(), from, {3}), vb(b.data(), to, {3});
      View vout = view_of(out, KILN_DTYPE_FLOAT64, {3});
      ASSERT_TRUE(run_op("kiln.copy", {&vseed}, {&va}).ok());
      ASSERT_TRUE(run_op("kiln.copy", {&va}, {&vb}).ok()) << from << " -> " << to;
      ASSERT_TRUE(run_op("kiln.copy", {&vb}, {&vout}).ok());
      const bool boolean = from == KILN_DTYPE_BOOL || to == KILN_DTYPE_BOOL;
      EXPECT_EQ(out, (std::vector<double>{0, 1, boolean ? 1.0 : 3.0})) << from << " -> " << to;
    }
  }
}

TEST(CopyKernel, StridedInAndOut) {
  // Transpose a [3, 5] int64 matrix into a contiguous [5, 3], then write it back
  // through a transposed output view.
  std::vector<int64_t> x(15), t(15), back(15);
  for (size_t i = 0; i < 15; ++i) x[i] = static_cast<int64_t>(i);
  View vx_t = view_of(x, KILN_DTYPE_INT64, {5, 3}, {1, 5}),
       vt = view_of(t, KILN_DTYPE_INT64, {5, 3});
  ASSERT_TRUE(run_op("kiln.copy", {&vx_t}, {&vt}).ok());
  for (int64_t i = 0; i < 5; ++i) {
    for (int64_t j = 0; j < 3; ++j)
      EXPECT_EQ(t[static_cast<size_t>(i * 3 + j)], x[static_cast<size_t>(j * 5 + i)]);
  }
  View vback_t = view_of(back, KILN_DTYPE_INT64, {5, 3}, {1, 5});
  ASSERT_TRUE(run_op("kiln.copy", {&vt}, {&vback_t}).ok());
  EXPECT_EQ(back, x);
}

TEST(CopyKernel, LargeBatchedTransposeWithConversion) {
  // [3, 70, 100] read as its per-batch transpose [3, 100, 70]: the tiled path, with
  // edge tiles on both dims, and with a dtype change.
  const int64_t batch = 3, rows = 70, cols = 100;
  std::vector<float> x(static_cast<size_t>(batch * rows * cols));
  for (size_t i = 0; i < x.size(); ++i) x[i] = static_cast<float>(i) * 0.5f;
  View vx_t = view_of(x, KILN_DTYPE_FLOAT32, {batch, cols, rows}, {rows * cols, 1, cols});
  std::vector<float> same(x.size());
  std::vector<double> wide(x.size());
  View vsame = view_of(same, KILN_DTYPE_FLOAT32, {batch, cols, rows});
  View vwide = view_of(wide, KILN_DTYPE_FLOAT64, {batch, cols, rows});
  ASSERT_TRUE(run_op("kiln.copy", {&vx_t}, {&vsame}).ok());
  ASSERT_TRUE(run_op("kiln.copy", {&vx_t}, {&vwide}).ok());
  for (int64_t b = 0; b < batch; ++b) {
    for (int64_t i = 0; i < cols; ++i) {
      for (int64_t j = 0; j < rows; ++j) {
        const size_t out = static_cast<size_t>((b * cols + i) * rows + j);
        const float expected = x[static_cast<size_t>(b * rows * cols + j * cols + i)];
        ASSERT_EQ(same[out], expected) << b << "," << i << "," << j;
        ASSERT_EQ(wide[out], static_cast<double>(expected)) << b << "," << i << "," << j;
      }
    }
  }
}

TEST(FillKernel, ConvertsTheValueLikeCopy) {
  std::vector<float> f(5);
  std::vector<int32_t> i(5);
  std::vector<uint8_t> b(5);
  std::vector<bfloat16> h(5);
  View vf = view_of(f, KILN_DTYPE_FLOAT32, {5}), vi = view_of(i, KILN_DTYPE_INT32, {5});
  View vb = view_of(b, KILN_DTYPE_BOOL, {5}), vh = view_of(h, KILN_DTYPE_BFLOAT16, {5});
  for (View* v : {&vf, &vi, &vb, &vh})
    ASSERT_TRUE(run_op("kiln.fill", {}, {v}, {float_attr("value", -2.5)}).ok());
  EXPECT_EQ(f, std::vector<float>(5, -2.5f));
  EXPECT_EQ(i, std::vector<int32_t>(5, -2));
  EXPECT_EQ(b, std::vector<uint8_t>(5, 1));
  for (const bfloat16& v : h) EXPECT_EQ(static_cast<float>(v), -2.5f);
  // A strided output: every other element of a column.
  std::vector<double> d(10, 0);
  View vd = view_of(d, KILN_DTYPE_FLOAT64, {5}, {2});
  ASSERT_TRUE(run_op("kiln.fill", {}, {&vd}, {float_attr("value", 7)}).ok());
  EXPECT_EQ(d, (std::vector<double>{7, 0, 7, 0, 7, 0, 7, 0, 7, 0}));
}

TEST(CreationKernels, ArangeAndLinspace) {
  std::vector<int32_t> i(5);
  View vi = view_of(i, KILN_DTYPE_INT32, {5});
  ASSERT_TRUE(
      run_op("kiln.arange", {}, {&vi}, {float_attr("start", 3), float_attr("step", -2)}).ok());
  EXPECT_EQ(i, (std::vector<int32_t>{3, 1, -1, -3, -5}));
  std::vector<double> d(7);
  View vd = view_of(d, KILN_DTYPE_FLOAT64, {7});
  ASSERT_TRUE(
      run_op("kiln.linspace", {}, {&vd}, {float_attr("start", 0.1), float_attr("end", 0.7)}).ok());
  EXPECT_EQ(d.front(), 0.1);
  EXPECT_EQ(d.back(), 0.7) << "endpoints are exact";
  for (size_t k = 0; k < d.size(); ++k)
    EXPECT_NEAR(d[k], 0.1 + 0.1 * static_cast<double>(k), 1e-15);
  std::vector<float> one(1);
  View vone = view_of(one, KILN_DTYPE_FLOAT32, {1});
  ASSERT_TRUE(
      run_op("kiln.linspace", {}, {&vone}, {float_attr("start", 4), float_attr("end", 9)}).ok());
  EXPECT_EQ(one[0], 4.0f);
  std::vector<uint8_t> flags(2);
  View vflags = view_of(flags, KILN_DTYPE_BOOL, {2});
  EXPECT_EQ(op_supports("kiln.arange", {}, {&vflags}), 0);
  EXPECT_EQ(op_supports("kiln.linspace", {}, {&vi}), 0);
}

}  // namespace
}  // namespace kiln::test
