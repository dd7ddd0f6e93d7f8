// matmul on every device, with torch.matmul's rules: 1-D·1-D dot, 2-D·2-D, 1-D with
// 2-D on either side, batched with broadcast batch dims, transposed and strided
// operands, K = 0, M = 0, float64 and half types. Tolerance: a float32 dot product of
// length K may be off by about K·eps·Σ|a_ik·b_kj|, so each element is allowed
// 1e-5·Σ|a_ik·b_kj| + 1e-6 (float64: 1e-12·Σ|...|).
#include "ops/conformance.h"

namespace kiln::test {
namespace {

class Matmul : public DeviceTest {
 protected:
  /// Checks matmul(a, b) against the float64 reference with the scaled tolerance.
  void check(const Tensor& a, const Tensor& b, const Shape& expected_shape) {
    auto y = matmul(a, b);
    const DType dtype = a.dtype();
    EXPECT_EQ(y.dtype(), dtype);
    EXPECT_EQ(y.device(), device());
    Ref scale({}, {0});
    Ref expected = ref_matmul(ref_of(a), ref_of(b), &scale);
    ASSERT_EQ(expected.shape, expected_shape) << "test bug: reference shape";
    ASSERT_EQ(y.shape().vec(), expected_shape);
    const double rel = dtype == float64   ? 1e-12
                       : dtype == float32 ? 1e-5
                       : dtype == float16 ? 2e-3
                                          : 1.6e-2;
    auto got = y.to_vector<double>();
    for (size_t i = 0; i < got.size(); ++i)
      EXPECT_NEAR(got[i], expected.values[i],
                  rel * scale.values[i] + (dtype == float64 ? 1e-12 : 1e-6))
          << "element " << i;
  }
};

TEST_P(Matmul, VectorDotVectorIsZeroDim) { check(random({5}, 1), random({5}, 2), {}); }

TEST_P(Matmul, MatrixTimesMatrix) {
  check(random({3, 4}, 3), random({4, 2}, 4), {3, 2});
  check(random({1, 1}, 5), random({1, 1}, 6), {1, 1});
  check(random({17, 33}, 7), random({33, 9}, 8), {17, 9});  // past any small-size special case
}

TEST_P(Matmul, MatrixWithVector) {
  check(random({3, 4}, 9), random({4}, 10), {3});
  check(random({4}, 11), random({4, 2}, 12), {2});
}

TEST_P(Matmul, BatchedWithBroadcastBatchDims) {
  check(random({2, 3, 4}, 13), random({2, 4, 5}, 14), {2, 3, 5});
  check(random({2, 1, 3, 4}, 15), random({5, 4, 2}, 16), {2, 5, 3, 2});
  check(random({2, 3, 4}, 17), random({4, 5}, 18), {2, 3, 5});  // 2-D broadcast over the batch
  check(random({3, 4}, 19), random({2, 4, 5}, 20), {2, 3, 5});
  check(random({4}, 21), random({2, 4, 3}, 22), {2, 3});  // 1-D on the left of a batch
  check(random({2, 3, 4}, 23), random({4}, 24), {2, 3});  // 1-D on the right
  check(random({1, 3, 4}, 25).expand({3, 3, 4}), random({3, 4, 2}, 26),
        {3, 3, 2});  // stride-0 batch
}

TEST_P(Matmul, TransposedAndStridedOperands) {
  check(random({4, 3}, 27).t(), random({2, 4}, 28).t(), {3, 2});
  check(random({3, 4}, 29, float32, Layout::Transposed),
        random({4, 5}, 30, float32, Layout::Strided), {3, 5});
  check(random({2, 3, 4}, 31, float32, Layout::Offset), random({2, 5, 4}, 32).transpose(-1, -2),
        {2, 3, 5});
  check(random({5, 3, 4}, 33).permute({1, 0, 2}), random({4, 2}, 34), {3, 5, 2});
}

TEST_P(Matmul, LargeEnoughToSplitAcrossThreads) {
  // Above the CPU plugin's threshold for parallel GEMMs (2^19 multiply-adds): tall,
  // wide and short matrices (row blocks, column blocks), transposed operands, and a
  // batch of whole GEMMs per thread, in float32 and float64.
  for (DType dtype : {float32, float64}) {
    SCOPED_TRACE(std::string(dtype_name(dtype)));
    check(random({130, 70}, 40, dtype), random({70, 90}, 41, dtype), {130, 90});
    check(random({20, 300}, 42, dtype), random({300, 200}, 43, dtype), {20, 200});
    check(random({300, 64}, 44, dtype).t(), random({300, 100}, 45, dtype), {64, 100});
    check(random({4, 70, 64}, 46, dtype), random({4, 90, 64}, 47, dtype).transpose(-1, -2),
          {4, 70, 90});
  }
}

TEST_P(Matmul, EmptyDimensions) {
  auto k0 = matmul(zeros({3, 0}, opts()), zeros({0, 4}, opts()));  // K = 0: zeros
  EXPECT_TRUE(matches(k0, Ref::filled({3, 4}, 0), kExact));
  auto k0_dirty = matmul(empty({2, 0}, opts()), empty({0, 2}, opts()));
  EXPECT_TRUE(matches(k0_dirty, Ref::filled({2, 2}, 0), kExact));
  EXPECT_EQ(matmul(zeros({0, 4}, opts()), random({4, 3}, 35)).shape(), IntArrayRef({0, 3}));
  EXPECT_EQ(matmul(zeros({0, 2, 3}, opts()), random({3, 4}, 37)).shape(), IntArrayRef({0, 2, 4}));
  auto dot0 = matmul(zeros({0}, opts()), zeros({0}, opts()));
  EXPECT_EQ(dot0.dim(), 0);
  EXPECT_EQ(dot0.item<float>(), 0.0f);
}

TEST_P(Matmul, EmptyOutputColumns) {
  // N = 0: y is [3, 0], which is contiguous (it has no elements).
  EXPECT_NO_THROW(
      EXPECT_EQ(matmul(random({3, 4}, 36), zeros({4, 0}, opts())).shape(), IntArrayRef({3, 0})));
  EXPECT_NO_THROW(
      EXPECT_EQ(matmul(random({4}, 38), zeros({4, 0}, opts())).shape(), IntArrayRef({0})));
}

TEST_P(Matmul, Float64) {
  check(random({3, 4}, 38, float64), random({4, 2}, 39, float64), {3, 2});
  check(random({2, 3, 4}, 40, float64, Layout::Transposed), random({4}, 41, float64), {2, 3});
}

TEST_P(Matmul, HalfTypesComputeInFloat32) {
  for (DType dtype : {float16, bfloat16}) {
    SCOPED_TRACE(dtype_name(dtype));
    auto a = make(random_grid(12, 42, -2, 2, 8), {3, 4}, dtype);
    auto b = make(random_grid(8, 43, -2, 2, 8), {4, 2}, dtype);
    check(a, b, {3, 2});
  }
}

TEST_P(Matmul, ExactSmallIntegersValuedProduct) {
  auto a = make({1, 2, 3, 4, 5, 6}, {2, 3});
  auto b = make({7, 8, 9, 10, 11, 12}, {3, 2});
  EXPECT_TRUE(matches(matmul(a, b), {2, 2}, {58, 64, 139, 154}));
  EXPECT_TRUE(matches(a.matmul(b), {2, 2}, {58, 64, 139, 154}));
  EXPECT_TRUE(matches(matmul(b.t(), a.t()), {2, 2}, {58, 139, 64, 154}));
}

TEST_P(Matmul, InputsAreNotModified) {
  auto a = make({1, 2, 3, 4}, {2, 2});
  auto b = make({5, 6, 7, 8}, {2, 2});
  (void)matmul(a, b);
  EXPECT_TRUE(matches(a, {2, 2}, {1, 2, 3, 4}));
  EXPECT_TRUE(matches(b, {2, 2}, {5, 6, 7, 8}));
}

// With "high" a backend may round float32 operands to TF32 (11 significant bits,
// relative error 2^-11 per operand), so each element may be off by about
// 2·2^-11·Σ|a_ik·b_kj|: allowed 1.5e-3·Σ|...| + 1e-6. On the CPU the result is exact
// float32 anyway; on a GPU this is the tolerance the setting promises.
TEST_P(Matmul, HighPrecisionSettingStaysWithinTf32Tolerance) {
  struct Restore {
    std::string saved = get_matmul_precision();
    ~Restore() { set_matmul_precision(saved); }
  } restore;
  set_matmul_precision("high");
  EXPECT_EQ(get_matmul_precision(), "high");
  auto a = random({64, 128}, 41), b = random({128, 32}, 42);
  auto y = matmul(a, b);
  Ref scale({}, {0});
  Ref expected = ref_matmul(ref_of(a), ref_of(b), &scale);
  auto got = y.to_vector<double>();
  for (size_t i = 0; i < got.size(); ++i)
    EXPECT_NEAR(got[i], expected.values[i], 1.5e-3 * scale.values[i] + 1e-6) << "element " << i;
}

KILN_INSTANTIATE_FOR_EVERY_DEVICE(Matmul);

TEST(MatmulPrecision, UnknownNameIsAnErrorAndChangesNothing) {
  const std::string before = get_matmul_precision();
  EXPECT_EQ(before, "highest");  // the default when KILN_MATMUL_PRECISION is unset
  try {
    set_matmul_precision("tf32");
    FAIL() << "expected kiln::Error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("\"tf32\""), std::string::npos) << e.what();
  }
  EXPECT_EQ(get_matmul_precision(), before);
}

}  // namespace
}  // namespace kiln::test
