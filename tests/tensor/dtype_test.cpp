// dtype helpers and type promotion (kiln/dtype.h).
#include <sstream>

#include "support/kiln_test.h"

namespace kiln {
namespace {

constexpr DType kAllDTypes[] = {float32, float64, float16, bfloat16,  int32,
                                int64,   uint8,   kbool,   complex64, complex128};

TEST(DType, NumericValuesAreTheAbiValues) {
  EXPECT_EQ(static_cast<int32_t>(float32), 1);
  EXPECT_EQ(static_cast<int32_t>(float64), 2);
  EXPECT_EQ(static_cast<int32_t>(float16), 3);
  EXPECT_EQ(static_cast<int32_t>(bfloat16), 4);
  EXPECT_EQ(static_cast<int32_t>(int32), 5);
  EXPECT_EQ(static_cast<int32_t>(int64), 6);
  EXPECT_EQ(static_cast<int32_t>(uint8), 7);
  EXPECT_EQ(static_cast<int32_t>(kbool), 8);
  EXPECT_EQ(static_cast<int32_t>(complex64), 9);  // ABI 1.3
  EXPECT_EQ(static_cast<int32_t>(complex128), 10);
}

TEST(DType, ElementSize) {
  EXPECT_EQ(element_size(float32), 4u);
  EXPECT_EQ(element_size(float64), 8u);
  EXPECT_EQ(element_size(float16), 2u);
  EXPECT_EQ(element_size(bfloat16), 2u);
  EXPECT_EQ(element_size(int32), 4u);
  EXPECT_EQ(element_size(int64), 8u);
  EXPECT_EQ(element_size(uint8), 1u);
  EXPECT_EQ(element_size(kbool), 1u);
  EXPECT_EQ(element_size(complex64), 8u);
  EXPECT_EQ(element_size(complex128), 16u);
}

TEST(DType, ComplexPromotionKeepsThePrecisionOfBoth) {
  EXPECT_EQ(promote_types(complex64, float32), complex64);
  EXPECT_EQ(promote_types(complex64, float64), complex128);  // PyTorch's rule
  EXPECT_EQ(promote_types(complex64, float16), complex64);
  EXPECT_EQ(promote_types(int64, complex64), complex64);
  EXPECT_EQ(promote_types(kbool, complex128), complex128);
  EXPECT_EQ(promote_types(complex64, complex128), complex128);
  EXPECT_TRUE(is_complex(complex64));
  EXPECT_FALSE(is_complex(float64));
  EXPECT_FALSE(is_floating(complex128));
  EXPECT_EQ(real_dtype(complex128), float64);
  EXPECT_EQ(complex_dtype(float32), complex64);
  EXPECT_EQ(Scalar(2.5).result_type(complex64), complex64);
}

TEST(DType, NamesAsPyTorchSpellsThemAndRoundTrip) {
  EXPECT_EQ(dtype_name(float32), "float32");
  EXPECT_EQ(dtype_name(float64), "float64");
  EXPECT_EQ(dtype_name(float16), "float16");
  EXPECT_EQ(dtype_name(bfloat16), "bfloat16");
  EXPECT_EQ(dtype_name(int32), "int32");
  EXPECT_EQ(dtype_name(int64), "int64");
  EXPECT_EQ(dtype_name(uint8), "uint8");
  EXPECT_EQ(dtype_name(kbool), "bool");
  for (DType d : kAllDTypes) {
    EXPECT_EQ(dtype_from_name(dtype_name(d)), d) << dtype_name(d);
    std::ostringstream out;
    out << d;
    EXPECT_EQ(out.str(), dtype_name(d));
  }
}

TEST(DType, UnknownNameThrowsNamingIt) {
  EXPECT_KILN_ERROR(dtype_from_name("float128"), "float128");
  EXPECT_KILN_ERROR(dtype_from_name(""));
  EXPECT_KILN_ERROR(dtype_from_name("Float32"), "Float32");
}

TEST(DType, Categories) {
  for (DType d : {float32, float64, float16, bfloat16}) {
    EXPECT_TRUE(is_floating(d)) << d;
    EXPECT_FALSE(is_integral(d)) << d;
  }
  for (DType d : {int32, int64, uint8}) {
    EXPECT_FALSE(is_floating(d)) << d;
    EXPECT_TRUE(is_integral(d)) << d;
  }
  EXPECT_FALSE(is_floating(kbool));
  EXPECT_FALSE(is_integral(kbool));
}

TEST(DType, DTypeOf) {
  static_assert(dtype_of<float>() == float32);
  static_assert(dtype_of<double>() == float64);
  static_assert(dtype_of<int32_t>() == int32);
  static_assert(dtype_of<int64_t>() == int64);
  static_assert(dtype_of<uint8_t>() == uint8);
  static_assert(dtype_of<bool>() == kbool);
  SUCCEED();
}

TEST(DType, PromotionIsSymmetricAndIdempotent) {
  for (DType a : kAllDTypes) {
    EXPECT_EQ(promote_types(a, a), a) << a;
    for (DType b : kAllDTypes)
      EXPECT_EQ(promote_types(a, b), promote_types(b, a)) << a << ", " << b;
  }
}

TEST(DType, PromotionLattice) {
  // bool < uint8 < int32 < int64 < bfloat16/float16 < float32 < float64.
  EXPECT_EQ(promote_types(kbool, uint8), uint8);
  EXPECT_EQ(promote_types(kbool, int32), int32);
  EXPECT_EQ(promote_types(uint8, int32), int32);
  EXPECT_EQ(promote_types(uint8, int64), int64);
  EXPECT_EQ(promote_types(int32, int64), int64);
  EXPECT_EQ(promote_types(int64, float16), float16);
  EXPECT_EQ(promote_types(int64, bfloat16), bfloat16);
  EXPECT_EQ(promote_types(int32, float32), float32);
  EXPECT_EQ(promote_types(int64, float32), float32);
  EXPECT_EQ(promote_types(kbool, float32), float32);
  EXPECT_EQ(promote_types(float16, float32), float32);
  EXPECT_EQ(promote_types(bfloat16, float32), float32);
  EXPECT_EQ(promote_types(float16, bfloat16), float32);
  EXPECT_EQ(promote_types(float32, float64), float64);
  EXPECT_EQ(promote_types(int64, float64), float64);
  EXPECT_EQ(promote_types(float16, float64), float64);
}

}  // namespace
}  // namespace kiln
