// kiln::Scalar: kinds, natural dtypes and the dtype `tensor (op) scalar` uses.
#include "support/kiln_test.h"

namespace kiln {
namespace {

TEST(Scalar, RemembersHowItWasWritten) {
  EXPECT_EQ(Scalar(true).kind(), Scalar::Kind::Bool);
  EXPECT_EQ(Scalar(3).kind(), Scalar::Kind::Integral);
  EXPECT_EQ(Scalar(int64_t{-7}).kind(), Scalar::Kind::Integral);
  EXPECT_EQ(Scalar(uint8_t{200}).kind(), Scalar::Kind::Integral);
  EXPECT_EQ(Scalar(2.5).kind(), Scalar::Kind::Floating);
  EXPECT_EQ(Scalar(2.5f).kind(), Scalar::Kind::Floating);
}

TEST(Scalar, Values) {
  EXPECT_EQ(Scalar(true).to_int(), 1);
  EXPECT_EQ(Scalar(true).to_double(), 1.0);
  EXPECT_EQ(Scalar(false).to_int(), 0);
  EXPECT_EQ(Scalar(int64_t{1} << 60).to_int(), int64_t{1} << 60);  // exact beyond 2^53
  EXPECT_EQ(Scalar(-3).to_double(), -3.0);
  EXPECT_EQ(Scalar(0.25).to_double(), 0.25);
  EXPECT_EQ(Scalar(uint8_t{200}).to_int(), 200);
}

TEST(Scalar, NaturalDType) {
  EXPECT_EQ(Scalar(true).natural_dtype(), kbool);
  EXPECT_EQ(Scalar(3).natural_dtype(), int64);
  EXPECT_EQ(Scalar(3.0).natural_dtype(), float32);
}

TEST(Scalar, ResultTypeKeepsTheTensorDTypeUnlessTheScalarIsOfAHigherCategory) {
  // Same or lower category: the tensor's dtype wins.
  EXPECT_EQ(Scalar(2).result_type(int32), int32);
  EXPECT_EQ(Scalar(2).result_type(uint8), uint8);
  EXPECT_EQ(Scalar(2).result_type(float16), float16);
  EXPECT_EQ(Scalar(2.5).result_type(float16), float16);
  EXPECT_EQ(Scalar(2.5).result_type(bfloat16), bfloat16);
  EXPECT_EQ(Scalar(2.5).result_type(float64), float64);
  EXPECT_EQ(Scalar(true).result_type(int32), int32);
  EXPECT_EQ(Scalar(true).result_type(kbool), kbool);
  // Higher category: that category's default.
  EXPECT_EQ(Scalar(2.5).result_type(int32), float32);
  EXPECT_EQ(Scalar(2.5).result_type(int64), float32);
  EXPECT_EQ(Scalar(2.5).result_type(kbool), float32);
  EXPECT_EQ(Scalar(2).result_type(kbool), int64);
}

}  // namespace
}  // namespace kiln
