// An undefined Tensor (default-constructed): defined() is false and every op on it
// throws kiln::Error instead of crashing; the process keeps working afterwards.
#include "support/kiln_test.h"

namespace kiln {
namespace {

using test::matches;

TEST(Undefined, IsNotDefined) {
  Tensor u;
  EXPECT_FALSE(u.defined());
  EXPECT_TRUE(zeros({1}).defined());
  EXPECT_EQ(u.impl(), nullptr);
}

TEST(Undefined, ElementwiseOpsThrow) {
  Tensor u;
  auto x = from_vector<float>({1, 2});
  EXPECT_KILN_ERROR(u + x);
  EXPECT_KILN_ERROR(x + u);
  EXPECT_KILN_ERROR(u * 2);
  EXPECT_KILN_ERROR(2 - u);
  EXPECT_KILN_ERROR(-u);
  EXPECT_KILN_ERROR(kiln::exp(u));
  EXPECT_KILN_ERROR(u.relu());
  EXPECT_KILN_ERROR(u == x);
  EXPECT_KILN_ERROR(where(u, x, x));
  EXPECT_KILN_ERROR(where(x > 1, u, x));
  EXPECT_KILN_ERROR(clamp(u, 0.0, 1.0));
}

TEST(Undefined, OtherOpsThrow) {
  Tensor u;
  auto x = from_vector<float>({1, 2});
  EXPECT_KILN_ERROR(u.sum());
  EXPECT_KILN_ERROR(u.argmax());
  EXPECT_KILN_ERROR(matmul(u, x));
  EXPECT_KILN_ERROR(matmul(x, u));
  EXPECT_KILN_ERROR(cat({x, u}));
  EXPECT_KILN_ERROR(stack({u, x}));
  EXPECT_KILN_ERROR(index_select(x, 0, u));
  EXPECT_KILN_ERROR(gather(x, 0, u));
  EXPECT_KILN_ERROR(u.reshape({2}));
  EXPECT_KILN_ERROR(u.t());
  EXPECT_KILN_ERROR(u.contiguous());
  EXPECT_KILN_ERROR(u.clone());
  EXPECT_KILN_ERROR(u.to(float64));
  EXPECT_KILN_ERROR(u.to("cpu"));
  EXPECT_KILN_ERROR(u.item<float>());
  EXPECT_KILN_ERROR(u.to_vector<float>());
  EXPECT_KILN_ERROR(u.fill_(1));
  EXPECT_KILN_ERROR(u.add_(x));
  EXPECT_KILN_ERROR(x.add_(u));
  EXPECT_KILN_ERROR(x.copy_(u));
  EXPECT_KILN_ERROR(zeros_like(u));
  EXPECT_TRUE(matches(x, {2}, {1, 2}));
}

TEST(Undefined, MetadataThrows) {
  Tensor u;
  EXPECT_KILN_ERROR(u.dtype());
  EXPECT_KILN_ERROR(u.device());
  EXPECT_KILN_ERROR(u.shape());
  EXPECT_KILN_ERROR(u.dim());
  EXPECT_KILN_ERROR(u.numel());
}

TEST(Undefined, ErrorsSayTheTensorIsUndefined) {
  Tensor u;
  const std::string message = test::kiln_error_message([&] { (void)(u + 1); });
  EXPECT_TRUE(test::contains_any(message, {"undefined", "not defined"})) << message;
}

}  // namespace
}  // namespace kiln
