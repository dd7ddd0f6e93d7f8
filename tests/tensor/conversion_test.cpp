// to(dtype), float16/bfloat16 storage, item() and to_vector().
#include <cmath>
#include <limits>

#include "support/kiln_test.h"

namespace kiln {
namespace {

using test::matches;

constexpr double kInf = std::numeric_limits<double>::infinity();

/// float32 values -> `dtype` -> float32, read back as doubles.
std::vector<double> round_trip(const std::vector<float>& values, DType dtype) {
  auto half = from_vector<float>(values).to(dtype);
  EXPECT_EQ(half.dtype(), dtype);
  EXPECT_EQ(half.element_size(), 2u);
  return half.to(float32).to_vector<double>();
}

TEST(Conversion, ToSameDTypeReturnsTheSameTensor) {
  auto x = zeros({3});
  EXPECT_TRUE(x.to(float32).shares_storage_with(x));
  EXPECT_FALSE(x.to(float64).shares_storage_with(x));
}

TEST(Conversion, Float16RepresentableValuesAreExact) {
  const std::vector<float> values = {0.0f,
                                     -0.0f,
                                     1.0f,
                                     -2.0f,
                                     0.5f,
                                     0x1.998p-4f /* 0x2e66 */,
                                     65504.0f /* max */,
                                     0x1p-14f /* min normal */,
                                     0x1p-24f /* min subnormal */,
                                     1000.5f,
                                     -3.140625f};
  auto back = round_trip(values, float16);
  for (size_t i = 0; i < values.size(); ++i) EXPECT_EQ(back[i], values[i]) << "element " << i;
  EXPECT_TRUE(std::signbit(back[1])) << "-0 keeps its sign";
}

TEST(Conversion, Float16RoundsToNearestEven) {
  const std::vector<float> values = {
      1.0f + 0x1p-11f,             // halfway between 1 and 1 + 2^-10: to even (1)
      1.0f + 3 * 0x1p-11f,         // halfway between 1 + 2^-10 and 1 + 2^-9: to even (1 + 2^-9)
      1.0f + 0x1p-11f + 0x1p-20f,  // just above halfway: up
      2049.0f,                     // spacing 2 above 2048: halfway, to even (2048)
      2051.0f,                     // halfway, to even (2052)
      65519.0f,                    // below the overflow threshold: 65504
      65520.0f,                    // halfway to 2^16: rounds to even = infinity
      1e6f,
      -1e6f,       // overflow
      0x1p-25f,    // exactly half the smallest subnormal: to even (0)
      0x1.8p-24f,  // 1.5 x smallest subnormal: to even (2 x)
  };
  const std::vector<double> expected = {1.0,  1.0 + 0x1p-9, 1.0 + 0x1p-10, 2048, 2052,       65504,
                                        kInf, kInf,         -kInf,         0.0,  2 * 0x1p-24};
  auto back = round_trip(values, float16);
  for (size_t i = 0; i < values.size(); ++i)
    EXPECT_EQ(back[i], expected[i]) << "element " << i << " (" << values[i] << ")";
}

TEST(Conversion, BFloat16RepresentableValuesAreExact) {
  const std::vector<float> values = {0.0f,      1.0f, -2.0f,       0.5f,   0x1.fep127f /* max */,
                                     0x1p-126f, 1.5f, -0.0078125f, 256.0f, 0x1.8p100f};
  auto back = round_trip(values, bfloat16);
  for (size_t i = 0; i < values.size(); ++i) EXPECT_EQ(back[i], values[i]) << "element " << i;
}

TEST(Conversion, BFloat16RoundsToNearestEven) {
  const std::vector<float> values = {
      1.0f + 0x1p-8f,             // halfway: to even (1)
      1.0f + 3 * 0x1p-8f,         // halfway: to even (1 + 2^-6)
      1.0f + 0x1p-8f + 0x1p-20f,  // above halfway: up (1 + 2^-7)
      257.0f,                     // spacing 2 in [256, 512): halfway, to even (256)
      259.0f,                     // halfway, to even (260)
      0.1f,                       // 0x3dcd
  };
  const std::vector<double> expected = {1.0, 1.0 + 0x1p-6, 1.0 + 0x1p-7, 256, 260, 0x1.9ap-4};
  auto back = round_trip(values, bfloat16);
  for (size_t i = 0; i < values.size(); ++i)
    EXPECT_EQ(back[i], expected[i]) << "element " << i << " (" << values[i] << ")";
}

TEST(Conversion, HalfNaNAndInfinitySurvive) {
  const float nan = std::numeric_limits<float>::quiet_NaN();
  const float inf = std::numeric_limits<float>::infinity();
  for (DType d : {float16, bfloat16}) {
    auto back = round_trip({nan, inf, -inf}, d);
    EXPECT_TRUE(std::isnan(back[0])) << d;
    EXPECT_EQ(back[1], kInf) << d;
    EXPECT_EQ(back[2], -kInf) << d;
  }
}

TEST(Conversion, HalfTensorsReadDirectly) {
  auto h = from_vector<float>({1.5f, -0.25f}).to(float16);
  EXPECT_EQ(h.to_vector<float>(), (std::vector<float>{1.5f, -0.25f}));
  EXPECT_EQ(h.to_vector<double>(), (std::vector<double>{1.5, -0.25}));
  EXPECT_EQ(h.select(0, 1).item<float>(), -0.25f);
  auto b = full({2}, 3.0, bfloat16);
  EXPECT_EQ(b.dtype(), bfloat16);
  EXPECT_EQ(b.to_vector<float>(), (std::vector<float>{3.0f, 3.0f}));
  auto f = h.to(bfloat16);  // half to half
  EXPECT_EQ(f.to_vector<float>(), (std::vector<float>{1.5f, -0.25f}));
}

TEST(Conversion, FloatToIntegerTruncatesTowardZero) {
  auto x = from_vector<float>({-1.7f, -0.5f, 0.5f, 1.7f, 2.5f, 100.99f});
  EXPECT_EQ(x.to(int32).to_vector<int32_t>(), (std::vector<int32_t>{-1, 0, 0, 1, 2, 100}));
  EXPECT_EQ(x.to(int64).to_vector<int64_t>(), (std::vector<int64_t>{-1, 0, 0, 1, 2, 100}));
  EXPECT_EQ(from_vector<float>({0.9f, 200.5f}).to(uint8).to_vector<int64_t>(),
            (std::vector<int64_t>{0, 200}));
}

TEST(Conversion, ToBoolIsNonZeroAndBackIsZeroOne) {
  auto x = from_vector<float>({0.0f, 0.1f, -2.0f, -0.0f});
  auto b = x.to(kbool);
  EXPECT_EQ(b.dtype(), kbool);
  EXPECT_EQ(b.to_vector<bool>(), (std::vector<bool>{false, true, true, false}));
  EXPECT_TRUE(matches(b.to(float32), {4}, {0, 1, 1, 0}));
  EXPECT_EQ(b.to(int64).to_vector<int64_t>(), (std::vector<int64_t>{0, 1, 1, 0}));
  EXPECT_EQ(from_vector<int64_t>({0, 5, -1}).to(kbool).to_vector<bool>(),
            (std::vector<bool>{false, true, true}));
}

TEST(Conversion, IntegerWidening) {
  auto big = from_vector<int64_t>({(int64_t{1} << 40) + 3, -7});
  EXPECT_EQ(big.to(float64).to_vector<double>(), (std::vector<double>{1099511627779.0, -7}));
  auto small = from_vector<int32_t>({-5, 7}).to(int64);
  EXPECT_EQ(small.dtype(), int64);
  EXPECT_EQ(small.to_vector<int64_t>(), (std::vector<int64_t>{-5, 7}));
}

TEST(Conversion, ToDTypeOfANonContiguousView) {
  auto g = arange(12, float32).reshape({3, 4}).t();
  auto d = g.to(float64);
  EXPECT_EQ(d.dtype(), float64);
  EXPECT_TRUE(matches(d, {4, 3}, {0, 4, 8, 1, 5, 9, 2, 6, 10, 3, 7, 11}));
}

TEST(Conversion, ItemOfEveryDType) {
  EXPECT_EQ(scalar_tensor(2.5).item<float>(), 2.5f);
  EXPECT_EQ(scalar_tensor(2.5).item<double>(), 2.5);
  EXPECT_EQ(scalar_tensor(7, int32).item<int32_t>(), 7);
  EXPECT_EQ(scalar_tensor(-7, int64).item<int64_t>(), -7);
  EXPECT_EQ(scalar_tensor(200, uint8).item<uint8_t>(), 200);
  EXPECT_EQ(scalar_tensor(true, kbool).item<bool>(), true);
  EXPECT_EQ(full({1, 1, 1}, 4.0).item<float>(), 4.0f);  // any shape with one element
  // item converts like static_cast.
  EXPECT_EQ(scalar_tensor(2.75).item<int64_t>(), 2);
  EXPECT_EQ(scalar_tensor(3, int64).item<double>(), 3.0);
  EXPECT_EQ(scalar_tensor(0.0).item<bool>(), false);
}

TEST(Conversion, ItemOfMoreOrFewerThanOneElementThrows) {
  EXPECT_KILN_ERROR(zeros({2}).item<float>(), "2");
  EXPECT_KILN_ERROR(zeros({0}).item<float>(), "0");
  EXPECT_KILN_ERROR(zeros({2, 3}).item<double>(), "6");
}

TEST(Conversion, ToVectorConvertsAndFollowsTheViewOrder) {
  auto x = from_vector<int32_t>({1, 2, 3, 4, 5, 6}, {2, 3});
  EXPECT_EQ(x.to_vector<int32_t>(), (std::vector<int32_t>{1, 2, 3, 4, 5, 6}));
  EXPECT_EQ(x.to_vector<double>(), (std::vector<double>{1, 2, 3, 4, 5, 6}));
  EXPECT_EQ(x.to_vector<float>(), (std::vector<float>{1, 2, 3, 4, 5, 6}));
  EXPECT_EQ(x.t().to_vector<int64_t>(), (std::vector<int64_t>{1, 4, 2, 5, 3, 6}));
  EXPECT_EQ(x.select(1, 1).to_vector<int32_t>(), (std::vector<int32_t>{2, 5}));
  EXPECT_EQ(from_vector<float>({0.5f, 1.5f}).to_vector<int32_t>(), (std::vector<int32_t>{0, 1}));
  EXPECT_TRUE(zeros({0, 4}).to_vector<float>().empty());
  EXPECT_EQ(scalar_tensor(5.0).to_vector<float>(), (std::vector<float>{5.0f}));
  EXPECT_EQ(from_vector<float>({1}, {1}).expand({3}).to_vector<float>(),
            (std::vector<float>{1, 1, 1}));
}

TEST(Conversion, FromBlobAndCopyToHostMoveRawBytes) {
  // float16 bits: 1.0 = 0x3c00, -2.0 = 0xc000, 65504 = 0x7bff, smallest subnormal = 0x0001.
  const std::vector<uint16_t> bits = {0x3c00, 0xc000, 0x7bff, 0x0001};
  auto h = copy_from_blob(bits.data(), {2, 2}, float16);
  EXPECT_EQ(h.dtype(), float16);
  EXPECT_EQ(h.shape(), IntArrayRef({2, 2}));
  EXPECT_EQ(h.to_vector<double>(), (std::vector<double>{1.0, -2.0, 65504.0, 0x1p-24}));
  std::vector<uint16_t> back(4);
  h.t().contiguous().copy_to_host(back.data(), back.size() * sizeof(uint16_t));
  EXPECT_EQ(back, (std::vector<uint16_t>{0x3c00, 0x7bff, 0xc000, 0x0001}));
  // A non-contiguous view is copied in row-major order of the view.
  std::vector<uint16_t> view(4);
  h.t().copy_to_host(view.data(), view.size() * sizeof(uint16_t));
  EXPECT_EQ(view, back);
  // bfloat16 0x3f80 = 1.0, 0x4049 = 3.140625.
  const std::vector<uint16_t> bf = {0x3f80, 0x4049};
  EXPECT_EQ(copy_from_blob(bf.data(), {2}, bfloat16).to_vector<double>(),
            (std::vector<double>{1.0, 3.140625}));
  const std::vector<int64_t> ints = {int64_t{1} << 62, -5};
  EXPECT_EQ(copy_from_blob(ints.data(), {2}, int64).to_vector<int64_t>(), ints);
  std::vector<uint16_t> small(3);
  EXPECT_KILN_ERROR(h.copy_to_host(small.data(), small.size() * sizeof(uint16_t)), "copy_to_host");
}

}  // namespace
}  // namespace kiln

namespace kiln::test {
namespace {

TEST(Conversion, FloatToIntegerTruncatesAndSaturates) {
  // NaN and out-of-range values have a defined result on the CPU plugin (as on GPUs),
  // not C++'s undefined behaviour: a hostile file can hold any float.
  const double nan = std::nan("");
  auto x = from_vector<double>({1e30, -1e30, nan, 3.7, -3.7, 0.0});
  EXPECT_EQ(x.to(int64).to_vector<int64_t>(),
            (std::vector<int64_t>{INT64_MAX, INT64_MIN, 0, 3, -3, 0}));
  EXPECT_EQ(x.to(int32).to_vector<int32_t>(),
            (std::vector<int32_t>{INT32_MAX, INT32_MIN, 0, 3, -3, 0}));
  EXPECT_EQ(x.to(float32).to(uint8).to_vector<uint8_t>(),
            (std::vector<uint8_t>{255, 0, 0, 3, 0, 0}));
}

}  // namespace
}  // namespace kiln::test
