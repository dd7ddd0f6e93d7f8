// kiln.matmul (direct BLAS layouts, packed layouts, batches, half types) and the
// indexing ops (index_select, gather) through the ABI.
#include <cmath>
#include <type_traits>

#include "kiln/sdk/half.h"
#include "plugin_fixture.h"

namespace kiln::test {
namespace {

std::vector<float> values(size_t n, uint32_t seed) {
  std::vector<float> v(n);
  uint32_t s = seed;
  for (size_t i = 0; i < n; ++i) {
    s = s * 1664525u + 1013904223u;
    v[i] = static_cast<float>(static_cast<int32_t>(s >> 9) % 2001) / 1000.0f - 1.0f;
  }
  return v;
}

// Element (i, j) of a 2-D view over `data`.
template <class T>
double at(const std::vector<T>& data, const View& v, int64_t i, int64_t j,
          int64_t batch_offset = 0) {
  const int64_t nd = static_cast<int64_t>(v.shape.size());
  const int64_t offset = v.view.byte_offset / static_cast<int64_t>(sizeof(T)) + batch_offset +
                         i * v.strides[static_cast<size_t>(nd - 2)] +
                         j * v.strides[static_cast<size_t>(nd - 1)];
  return static_cast<double>(data[static_cast<size_t>(offset)]);
}

template <class Y>
double to_double(Y v) {
  if constexpr (std::is_arithmetic_v<Y>)
    return static_cast<double>(v);
  else
    return static_cast<double>(static_cast<float>(v));
}

// Checks y (contiguous [M, N]) = a @ b against a double reference; the tolerance
// scales with K and the magnitudes (|a|, |b| <= 1 here).
template <class T, class Y>
void expect_matmul(const std::vector<T>& a, const View& va, const std::vector<T>& b, const View& vb,
                   const std::vector<Y>& y, int64_t m, int64_t n, int64_t k, double eps,
                   int64_t a_batch = 0, int64_t b_batch = 0, int64_t y_batch = 0) {
  for (int64_t i = 0; i < m; ++i) {
    for (int64_t j = 0; j < n; ++j) {
      double expected = 0;
      for (int64_t p = 0; p < k; ++p)
        expected += at(a, va, i, p, a_batch) * at(b, vb, p, j, b_batch);
      const double got = to_double(y[static_cast<size_t>(y_batch + i * n + j)]);
      ASSERT_NEAR(got, expected, eps * static_cast<double>(k)) << "(" << i << ", " << j << ")";
    }
  }
}

TEST(MatmulKernel, TransposedViewsMatchANaiveDoubleReference) {
  const int64_t m = 37, k = 53, n = 29;
  std::vector<float> a = values(static_cast<size_t>(m * k), 1),
                     b = values(static_cast<size_t>(k * n), 2);
  std::vector<float> y(static_cast<size_t>(m * n));
  View vy = view_of(y, KILN_DTYPE_FLOAT32, {m, n});
  // a is a [K, M] row-major matrix read transposed, b plain row-major.
  View va_t = view_of(a, KILN_DTYPE_FLOAT32, {m, k}, {1, m});
  View vb = view_of(b, KILN_DTYPE_FLOAT32, {k, n});
  ASSERT_TRUE(run_op("kiln.matmul", {&va_t, &vb}, {&vy}).ok());
  expect_matmul(a, va_t, b, vb, y, m, n, k, 1e-6);
  // Both transposed.
  View vb_t = view_of(b, KILN_DTYPE_FLOAT32, {k, n}, {1, k});
  ASSERT_TRUE(run_op("kiln.matmul", {&va_t, &vb_t}, {&vy}).ok());
  expect_matmul(a, va_t, b, vb_t, y, m, n, k, 1e-6);
}

TEST(MatmulKernel, StridesBlasCannotTakeArePacked) {
  const int64_t m = 8, k = 6, n = 5;
  std::vector<double> a(static_cast<size_t>(m * k * 2)), b(static_cast<size_t>(k * n));
  for (size_t i = 0; i < a.size(); ++i) a[i] = std::sin(static_cast<double>(i));
  for (size_t i = 0; i < b.size(); ++i) b[i] = std::cos(static_cast<double>(i));
  std::vector<double> y(static_cast<size_t>(m * n));
  // Every other column of a wider matrix, and b read backwards along its rows.
  View va = view_of(a, KILN_DTYPE_FLOAT64, {m, k}, {2 * k, 2});
  View vb = view_of(b, KILN_DTYPE_FLOAT64, {k, n}, {-n, 1}, (k - 1) * n);
  View vy = view_of(y, KILN_DTYPE_FLOAT64, {m, n});
  ASSERT_TRUE(run_op("kiln.matmul", {&va, &vb}, {&vy}).ok());
  expect_matmul(a, va, b, vb, y, m, n, k, 1e-15);
}

TEST(MatmulKernel, BatchedWithABroadcastOperand) {
  const int64_t batch = 3, m = 4, k = 7, n = 6;
  std::vector<float> a = values(static_cast<size_t>(batch * m * k), 3),
                     b = values(static_cast<size_t>(k * n), 4);
  std::vector<float> y(static_cast<size_t>(batch * m * n));
  View va = view_of(a, KILN_DTYPE_FLOAT32, {batch, m, k});
  View vb = view_of(b, KILN_DTYPE_FLOAT32, {batch, k, n}, {0, n, 1});  // one b for every batch
  View vy = view_of(y, KILN_DTYPE_FLOAT32, {batch, m, n});
  ASSERT_TRUE(run_op("kiln.matmul", {&va, &vb}, {&vy}).ok());
  for (int64_t i = 0; i < batch; ++i) {
    SCOPED_TRACE("batch " + std::to_string(i));
    expect_matmul(a, va, b, vb, y, m, n, k, 1e-6, i * m * k, 0, i * m * n);
  }
}

TEST(MatmulKernel, VectorShapesAndEmptyInnerDim) {
  std::vector<float> a = {1, 2, 3}, b = {4, 5, 6}, y(1, -1);
  View va = view_of(a, KILN_DTYPE_FLOAT32, {1, 3}), vb = view_of(b, KILN_DTYPE_FLOAT32, {3, 1});
  View vy = view_of(y, KILN_DTYPE_FLOAT32, {1, 1});
  ASSERT_TRUE(run_op("kiln.matmul", {&va, &vb}, {&vy}).ok());
  EXPECT_EQ(y[0], 32);
  std::vector<float> none(1), zeros(6, -1);
  View va0 = view_of(none, KILN_DTYPE_FLOAT32, {2, 0}),
       vb0 = view_of(none, KILN_DTYPE_FLOAT32, {0, 3});
  View vz = view_of(zeros, KILN_DTYPE_FLOAT32, {2, 3});
  ASSERT_TRUE(run_op("kiln.matmul", {&va0, &vb0}, {&vz}).ok());
  EXPECT_EQ(zeros, std::vector<float>(6, 0));
  // An empty output may come with any strides.
  std::vector<float> a34(12, 1);
  View va34 = view_of(a34, KILN_DTYPE_FLOAT32, {3, 4}),
       vb40 = view_of(none, KILN_DTYPE_FLOAT32, {4, 0});
  View vempty = view_of(none, KILN_DTYPE_FLOAT32, {3, 0}, {1, 1});
  EXPECT_TRUE(run_op("kiln.matmul", {&va34, &vb40}, {&vempty}).ok());
}

TEST(MatmulKernel, HalfTypesComputeInFloat32) {
  const int64_t m = 9, k = 40, n = 7;
  const std::vector<float> af = values(static_cast<size_t>(m * k), 5),
                           bf = values(static_cast<size_t>(k * n), 6);
  std::vector<sdk::bfloat16> a(af.size()), b(bf.size()), y(static_cast<size_t>(m * n));
  for (size_t i = 0; i < af.size(); ++i) a[i] = sdk::bfloat16(af[i]);
  for (size_t i = 0; i < bf.size(); ++i) b[i] = sdk::bfloat16(bf[i]);
  View va = view_of(a, KILN_DTYPE_BFLOAT16, {m, k}), vb = view_of(b, KILN_DTYPE_BFLOAT16, {k, n});
  View vy = view_of(y, KILN_DTYPE_BFLOAT16, {m, n});
  ASSERT_TRUE(run_op("kiln.matmul", {&va, &vb}, {&vy}).ok());
  std::vector<float> a_wide(a.size()), b_wide(b.size());
  for (size_t i = 0; i < a.size(); ++i) a_wide[i] = static_cast<float>(a[i]);
  for (size_t i = 0; i < b.size(); ++i) b_wide[i] = static_cast<float>(b[i]);
  View va_wide = view_of(a_wide, KILN_DTYPE_FLOAT32, {m, k}),
       vb_wide = view_of(b_wide, KILN_DTYPE_FLOAT32, {k, n});
  // One bfloat16 rounding of results up to ~k in size: 2^-8 relative, i.e. k * 4e-3 absolute.
  expect_matmul(a_wide, va_wide, b_wide, vb_wide, y, m, n, k, 4e-3);
}

TEST(MatmulKernel, IntegerMatmulIsNotSupported) {
  std::vector<int32_t> x(4);
  View vx = view_of(x, KILN_DTYPE_INT32, {2, 2});
  EXPECT_EQ(op_supports("kiln.matmul", {&vx, &vx}, {&vx}), 0);
  EXPECT_EQ(run_op("kiln.matmul", {&vx, &vx}, {&vx}).code, KILN_STATUS_UNSUPPORTED);
}

TEST(IndexKernels, IndexSelectAlongEachDim) {
  std::vector<float> x(20);
  for (size_t i = 0; i < x.size(); ++i) x[i] = static_cast<float>(i);
  View vx = view_of(x, KILN_DTYPE_FLOAT32, {4, 5});
  std::vector<int64_t> index = {4, 0, 0, 2};
  View vi = view_of(index, KILN_DTYPE_INT64, {4});
  std::vector<float> y(16);
  View vy = view_of(y, KILN_DTYPE_FLOAT32, {4, 4});
  ASSERT_TRUE(run_op("kiln.index_select", {&vx, &vi}, {&vy}, {int_attr("dim", 1)}).ok());
  for (int64_t r = 0; r < 4; ++r) {
    for (int64_t c = 0; c < 4; ++c) {
      EXPECT_EQ(y[static_cast<size_t>(r * 4 + c)],
                x[static_cast<size_t>(r * 5 + index[static_cast<size_t>(c)])]);
    }
  }
  // Rows (the embedding lookup), with a strided index: every other element of {3,9,1,9,2}.
  std::vector<int64_t> sparse = {3, 9, 1, 9, 2};
  View vsparse = view_of(sparse, KILN_DTYPE_INT64, {3}, {2});
  std::vector<float> rows(15);
  View vrows = view_of(rows, KILN_DTYPE_FLOAT32, {3, 5});
  ASSERT_TRUE(run_op("kiln.index_select", {&vx, &vsparse}, {&vrows}, {int_attr("dim", 0)}).ok());
  const int64_t picked[] = {3, 1, 2};
  for (int64_t r = 0; r < 3; ++r) {
    for (int64_t c = 0; c < 5; ++c) {
      EXPECT_EQ(rows[static_cast<size_t>(r * 5 + c)], x[static_cast<size_t>(picked[r] * 5 + c)]);
    }
  }
}

TEST(IndexKernels, IndexSelectOutOfRangeNamesIndexAndBound) {
  std::vector<float> x(20), y(8, -1);
  View vx = view_of(x, KILN_DTYPE_FLOAT32, {4, 5});
  std::vector<int64_t> index = {1, 7};
  View vi = view_of(index, KILN_DTYPE_INT64, {2});
  View vy = view_of(y, KILN_DTYPE_FLOAT32, {4, 2});
  const Outcome o = run_op("kiln.index_select", {&vx, &vi}, {&vy}, {int_attr("dim", 1)});
  EXPECT_EQ(o.code, KILN_STATUS_INVALID_ARGUMENT);
  EXPECT_NE(o.message.find("index 7"), std::string::npos) << o.message;
  EXPECT_NE(o.message.find("size 5"), std::string::npos) << o.message;
  EXPECT_EQ(y, std::vector<float>(8, -1)) << "nothing written before the check";
  index[1] = -1;
  EXPECT_EQ(run_op("kiln.index_select", {&vx, &vi}, {&vy}, {int_attr("dim", 1)}).code,
            KILN_STATUS_INVALID_ARGUMENT);
}

TEST(IndexKernels, GatherLikePyTorch) {
  std::vector<int32_t> x = {10, 11, 12, 13, 20, 21, 22, 23, 30, 31, 32, 33};  // [3, 4]
  View vx = view_of(x, KILN_DTYPE_INT32, {3, 4});
  std::vector<int64_t> index = {3, 0, 1, 1, 2, 0};  // [3, 2]
  View vi = view_of(index, KILN_DTYPE_INT64, {3, 2});
  std::vector<int32_t> y(6);
  View vy = view_of(y, KILN_DTYPE_INT32, {3, 2});
  ASSERT_TRUE(run_op("kiln.gather", {&vx, &vi}, {&vy}, {int_attr("dim", 1)}).ok());
  EXPECT_EQ(y, (std::vector<int32_t>{13, 10, 21, 21, 32, 30}));
  // dim 0 with a [2, 3] index: y[i][j] = x[index[i][j]][j].
  std::vector<int64_t> rows = {2, 0, 1, 0, 0, 2};
  View vrows = view_of(rows, KILN_DTYPE_INT64, {2, 3});
  std::vector<int32_t> y0(6);
  View vy0 = view_of(y0, KILN_DTYPE_INT32, {2, 3});
  ASSERT_TRUE(run_op("kiln.gather", {&vx, &vrows}, {&vy0}, {int_attr("dim", 0)}).ok());
  EXPECT_EQ(y0, (std::vector<int32_t>{30, 11, 22, 10, 11, 32}));
  rows[4] = 3;
  const Outcome o = run_op("kiln.gather", {&vx, &vrows}, {&vy0}, {int_attr("dim", 0)});
  EXPECT_EQ(o.code, KILN_STATUS_INVALID_ARGUMENT);
  EXPECT_NE(o.message.find("index 3"), std::string::npos) << o.message;
  EXPECT_NE(o.message.find("size 3"), std::string::npos) << o.message;
}

}  // namespace
}  // namespace kiln::test
