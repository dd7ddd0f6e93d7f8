// operator<< prints like PyTorch: tensor(...), the values, dtype= unless float32,
// and "..." for large tensors.
#include <sstream>

#include "support/kiln_test.h"

namespace kiln {
namespace {

using test::contains;

std::string printed(const Tensor& t) {
  std::ostringstream out;
  out << t;
  return out.str();
}

TEST(Printing, Float32ShowsValuesWithoutDType) {
  const std::string s = printed(from_vector<float>({1.5f, -2.0f, 3.25f}));
  EXPECT_TRUE(contains(s, "tensor(")) << s;
  EXPECT_TRUE(contains(s, "1.5")) << s;
  EXPECT_TRUE(contains(s, "-2")) << s;
  EXPECT_TRUE(contains(s, "3.25")) << s;
  EXPECT_FALSE(contains(s, "dtype=")) << s;
  EXPECT_FALSE(contains(s, "...")) << s;
}

TEST(Printing, NestedBracketsFollowTheShape) {
  const std::string s = printed(from_vector<float>({1, 2, 3, 4}, {2, 2}));
  EXPECT_TRUE(contains(s, "[[")) << s;
  EXPECT_TRUE(contains(s, "]]")) << s;
  const std::string t = printed(zeros({2, 1, 2}));
  EXPECT_TRUE(contains(t, "[[[")) << t;
}

TEST(Printing, OtherDTypesAreNamed) {
  const std::string d = printed(from_vector<double>({0.5, 2.0}));
  EXPECT_TRUE(contains(d, "dtype=float64")) << d;
  EXPECT_TRUE(contains(d, "0.5")) << d;
  const std::string i = printed(from_vector<int32_t>({7, 42}));
  EXPECT_TRUE(contains(i, "dtype=int32")) << i;
  EXPECT_TRUE(contains(i, "42")) << i;
  EXPECT_FALSE(contains(i, "42.")) << "integers print without a decimal point: " << i;
  const std::string h = printed(from_vector<float>({0.25f}).to(float16));
  EXPECT_TRUE(contains(h, "dtype=float16")) << h;
  EXPECT_TRUE(contains(h, "0.25")) << h;
  const std::string b = printed(from_vector<float>({1.0f}).to(bfloat16));
  EXPECT_TRUE(contains(b, "dtype=bfloat16")) << b;
  const std::string u = printed(from_vector<uint8_t>({200}));
  EXPECT_TRUE(contains(u, "dtype=uint8")) << u;
  EXPECT_TRUE(contains(u, "200")) << u;
}

TEST(Printing, ZeroDimAndEmpty) {
  const std::string s = printed(scalar_tensor(2.5));
  EXPECT_TRUE(contains(s, "tensor(")) << s;
  EXPECT_TRUE(contains(s, "2.5")) << s;
  EXPECT_FALSE(contains(s, "[")) << "a 0-d tensor prints without brackets: " << s;
  const std::string e = printed(zeros({0}));
  EXPECT_TRUE(contains(e, "tensor(")) << e;
  EXPECT_TRUE(contains(e, "[]")) << e;
}

TEST(Printing, NonContiguousViewsPrintTheirOwnValues) {
  const std::string s = printed(from_vector<int64_t>({1, 2, 3, 4, 5, 6}, {2, 3}).select(1, 2));
  EXPECT_TRUE(contains(s, "3")) << s;
  EXPECT_TRUE(contains(s, "6")) << s;
  EXPECT_FALSE(contains(s, "5")) << s;
}

TEST(Printing, LargeTensorsAreSummarized) {
  auto x = zeros({100000});
  x.narrow(0, 99999, 1).fill_(3);
  x.narrow(0, 0, 1).fill_(2);
  const std::string s = printed(x);
  EXPECT_TRUE(contains(s, "...")) << s.substr(0, 500);
  EXPECT_LT(s.size(), 2000u) << "a summary, not every element";
  EXPECT_TRUE(contains(s, "2")) << "the summary shows the first elements: " << s;
  EXPECT_TRUE(contains(s, "3")) << "the summary shows the last elements: " << s;
  const std::string m = printed(zeros({300, 300}));
  EXPECT_TRUE(contains(m, "...")) << m.substr(0, 500);
  EXPECT_LT(m.size(), 5000u);
}

TEST(Printing, ExplicitCpuDevice) {
  const std::string s = printed(ones({2}, TensorOptions().device("cpu:0")));
  EXPECT_TRUE(contains(s, "tensor(")) << s;
  EXPECT_TRUE(contains(s, "1")) << s;
}

}  // namespace
}  // namespace kiln
