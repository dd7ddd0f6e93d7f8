// In-place ops, in particular through views: writing a view updates its base.
#include <cmath>

#include "support/kiln_test.h"

namespace kiln {
namespace {

using test::matches;

TEST(InPlace, FillThroughARowUpdatesTheBase) {
  auto base = zeros({3, 4});
  Tensor& same = base.select(0, 1).fill_(5);
  (void)same;
  EXPECT_TRUE(matches(base, {3, 4}, {0, 0, 0, 0, 5, 5, 5, 5, 0, 0, 0, 0}));
}

TEST(InPlace, ReturnsItself) {
  auto x = zeros({2});
  Tensor& r = x.add_(1);
  EXPECT_EQ(&r, &x);
  EXPECT_EQ(&x.fill_(3), &x);
  EXPECT_EQ(&x.zero_(), &x);
}

TEST(InPlace, StridedSliceOfColumns) {
  auto base = zeros({3, 4});
  base.slice(1, 0, 4, 2).add_(1);  // columns 0 and 2
  EXPECT_TRUE(matches(base, {3, 4}, {1, 0, 1, 0, 1, 0, 1, 0, 1, 0, 1, 0}));
  base.slice(1, 1, 4, 2).fill_(-2);  // columns 1 and 3
  EXPECT_TRUE(matches(base, {3, 4}, {1, -2, 1, -2, 1, -2, 1, -2, 1, -2, 1, -2}));
}

TEST(InPlace, ThroughATransposeWithBroadcastOperand) {
  auto base = zeros({2, 3});
  auto t = base.t();                          // [3, 2]
  t.add_(from_vector<float>({10, 20}, {2}));  // broadcast along rows of t
  EXPECT_TRUE(matches(base, {2, 3}, {10, 10, 10, 20, 20, 20}));
  t.mul_(from_vector<float>({1, 2, 3}, {3, 1}));
  EXPECT_TRUE(matches(base, {2, 3}, {10, 20, 30, 20, 40, 60}));
}

TEST(InPlace, ArithmeticWithTensorsAndScalars) {
  auto x = from_vector<float>({1, 2, 3, 4}, {2, 2});
  x.add_(from_vector<float>({1, 1, 1, 1}, {2, 2}));
  EXPECT_TRUE(matches(x, {2, 2}, {2, 3, 4, 5}));
  x.sub_(0.5);
  EXPECT_TRUE(matches(x, {2, 2}, {1.5, 2.5, 3.5, 4.5}));
  x.mul_(2);
  EXPECT_TRUE(matches(x, {2, 2}, {3, 5, 7, 9}));
  x.div_(from_vector<float>({3, 5}, {2}));
  EXPECT_TRUE(matches(x, {2, 2}, {1, 1, 7.0 / 3, 9.0 / 5}, test::kFloat32Tol));
  x.sub_(from_vector<float>({1}, {1}));
  EXPECT_TRUE(matches(x, {2, 2}, {0, 0, 4.0 / 3, 4.0 / 5}, test::kFloat32Tol));
  x.div_(0.5);
  EXPECT_TRUE(matches(x, {2, 2}, {0, 0, 8.0 / 3, 8.0 / 5}, test::kFloat32Tol));
}

TEST(InPlace, IntegerTensorsStayIntegral) {
  auto x = from_vector<int64_t>({1, 2, 3});
  x.add_(2);
  x.mul_(from_vector<int64_t>({3, 3, 3}));
  EXPECT_EQ(x.dtype(), int64);
  EXPECT_EQ(x.to_vector<int64_t>(), (std::vector<int64_t>{9, 12, 15}));
}

TEST(InPlace, OperandWithALowerDTypeIsConverted) {
  auto x = zeros({3});
  x.add_(from_vector<int32_t>({1, 2, 3}));
  EXPECT_EQ(x.dtype(), float32);
  EXPECT_TRUE(matches(x, {3}, {1, 2, 3}));
}

TEST(InPlace, CopyBroadcastsAndConverts) {
  auto x = zeros({2, 3});
  x.copy_(from_vector<int32_t>({1, 2, 3}));
  EXPECT_EQ(x.dtype(), float32);
  EXPECT_TRUE(matches(x, {2, 3}, {1, 2, 3, 1, 2, 3}));
  auto col = x.select(1, 2);  // a strided view
  col.copy_(from_vector<double>({-1, -2}));
  EXPECT_TRUE(matches(x, {2, 3}, {1, 2, -1, 1, 2, -2}));
  auto i = zeros({2}, int32);
  i.copy_(from_vector<float>({2.9f, -2.9f}));
  EXPECT_EQ(i.to_vector<int32_t>(), (std::vector<int32_t>{2, -2}));  // truncation toward zero
}

TEST(InPlace, OperandThatDoesNotBroadcastToSelfThrowsAndLeavesSelfAlone) {
  auto x = from_vector<float>({1, 2, 3});
  EXPECT_KILN_ERROR(x.add_(zeros({2, 3})), "[3]", "[2, 3]");  // would change self's shape
  EXPECT_KILN_ERROR(x.mul_(zeros({4})), "[3]", "[4]");
  EXPECT_KILN_ERROR(x.copy_(zeros({2})), "[3]", "[2]");
  EXPECT_TRUE(matches(x, {3}, {1, 2, 3}));
}

TEST(InPlace, CloneIsIndependent) {
  auto x = from_vector<float>({1, 2});
  auto c = x.clone();
  c.fill_(9);
  EXPECT_TRUE(matches(x, {2}, {1, 2}));
  EXPECT_TRUE(matches(c, {2}, {9, 9}));
}

TEST(InPlace, WritesThroughOneViewAreSeenThroughAnother) {
  auto base = arange(12, float32);
  auto a = base.view({3, 4});
  auto b = base.view({4, 3}).t();  // a different view of the same storage
  a.select(0, 0).fill_(100);       // elements 0..3
  EXPECT_TRUE(matches(b.select(1, 0), {3}, {100, 100, 100}));
  EXPECT_EQ(b.select(0, 0).to_vector<float>(), (std::vector<float>{100, 100, 6, 9}));
}

TEST(InPlace, NarrowedCopyIntoTheMiddle) {
  auto x = zeros({6}, int64);
  x.narrow(0, 2, 3).copy_(from_vector<int64_t>({7, 8, 9}));
  EXPECT_EQ(x.to_vector<int64_t>(), (std::vector<int64_t>{0, 0, 7, 8, 9, 0}));
}

// Every generated op's in-place spelling against its out-of-place result, on every
// device: tests/ops (UnaryOps and BinaryOps.EveryInPlaceSpellingMatchesTheOutOfPlaceOp,
// from the catalogue). Here, the Scalar overloads chained.
TEST(InPlace, ScalarOperandsChain) {
  Tensor p = from_vector<float>({1, 2, 3});
  p.pow_(2.0).atan2_(1.0);
  EXPECT_EQ(
      p.to_vector<float>(),
      (std::vector<float>{std::atan2(1.0f, 1.0f), std::atan2(4.0f, 1.0f), std::atan2(9.0f, 1.0f)}));
}

TEST(InPlace, UnaryInPlaceFollowsTheDtypeAndAutogradRules) {
  Tensor i = from_vector<int64_t>({-2, 3});
  EXPECT_KILN_ERROR(i.exp_(), "exp_: the result type float32 cannot be stored in place");
  i.relu_().neg_();  // integer ops stay integer
  EXPECT_EQ(i.to_vector<int64_t>(), (std::vector<int64_t>{0, -3}));
  Tensor leaf = ones({2}).requires_grad_();
  EXPECT_KILN_ERROR(leaf.sigmoid_(), "sigmoid_: in-place operation on a tensor that requires grad");
  {
    NoGradGuard no_grad;
    leaf.sigmoid_();  // as an optimizer would
  }
  EXPECT_KILN_ERROR(ones({1}).expand({3}).exp_(), "overlap");
  EXPECT_KILN_ERROR(Tensor().exp_(), "exp_");
}

}  // namespace
}  // namespace kiln
