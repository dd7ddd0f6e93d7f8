// autograd::grad(outputs, inputs): gradients returned, not accumulated; leaves and
// intermediate inputs; unused inputs; retain_graph; what it refuses.

#include <gtest/gtest.h>

#include <kiln/kiln.h>

#include <cmath>
#include <vector>

namespace {

using kiln::Tensor;
namespace autograd = kiln::autograd;

Tensor leaf(std::vector<double> v, std::vector<int64_t> shape) {
  return kiln::from_vector<double>(v, shape).requires_grad_();
}

std::vector<double> values(const Tensor& t) { return t.to_vector<double>(); }

TEST(AutogradGrad, ReturnsGradientsOfLeavesWithoutAccumulating) {
  auto x = leaf({1, -2, 3}, {3});
  auto w = leaf({0.5, 4, -1}, {3});
  auto y = (x * x * w).sum();  // dy/dx = 2 x w, dy/dw = x^2
  auto g = autograd::grad({y}, {x, w});
  ASSERT_EQ(g.size(), 2u);
  EXPECT_EQ(values(g[0]), (std::vector<double>{1, -16, -6}));
  EXPECT_EQ(values(g[1]), (std::vector<double>{1, 4, 9}));
  EXPECT_FALSE(x.grad().defined());
  EXPECT_FALSE(w.grad().defined());
}

TEST(AutogradGrad, LeavesOtherLeavesGradUntouched) {
  auto x = leaf({1, 2}, {2});
  auto b = leaf({5, 7}, {2});
  b.set_grad(kiln::from_vector<double>({100, 100}, {2}));
  auto y = (x * b).sum();
  auto g = autograd::grad({y}, {x});
  EXPECT_EQ(values(g[0]), (std::vector<double>{5, 7}));
  EXPECT_EQ(values(b.grad()), (std::vector<double>{100, 100}));  // b not an input: untouched
  EXPECT_FALSE(x.grad().defined());
}

TEST(AutogradGrad, IntermediateInputGetsTheGradientFlowingIntoIt) {
  auto x = leaf({1, 2, 3}, {3});
  auto h = x * 2;          // not a leaf
  auto y = (h * h).sum();  // dy/dh = 2 h = 4 x
  auto g = autograd::grad({y}, {h, x});
  EXPECT_EQ(values(g[0]), (std::vector<double>{4, 8, 12}));
  EXPECT_EQ(values(g[1]), (std::vector<double>{8, 16, 24}));  // dy/dx = 8 x
  EXPECT_FALSE(x.grad().defined());
}

TEST(AutogradGrad, MatchesBackwardOnAnMlp) {
  kiln::manual_seed(3);
  auto x = kiln::randn({4, 5}, kiln::float64);
  auto w1 = kiln::randn({5, 6}, kiln::float64).requires_grad_();
  auto w2 = kiln::randn({6, 2}, kiln::float64).requires_grad_();
  auto loss = [&] { return kiln::matmul(kiln::matmul(x, w1).tanh(), w2).pow(2).mean(); };
  auto g = autograd::grad({loss()}, {w1, w2});
  loss().backward();
  for (int i = 0; i < 2; ++i) {
    const Tensor& reference = i == 0 ? w1.grad() : w2.grad();
    auto a = values(g[i]), b = values(reference);
    ASSERT_EQ(a.size(), b.size());
    for (size_t k = 0; k < a.size(); ++k) EXPECT_NEAR(a[k], b[k], 1e-12) << "input " << i;
  }
}

TEST(AutogradGrad, SeveralOutputsAndExplicitGradOutputs) {
  auto x = leaf({1, 2}, {2});
  auto y1 = x * 3;  // non-scalar: needs a grad_output
  auto y2 = (x * x).sum();
  auto g = autograd::grad({y1, y2}, {x}, {kiln::from_vector<double>({1, 10}, {2}), Tensor()});
  EXPECT_EQ(values(g[0]), (std::vector<double>{3 + 2, 30 + 4}));
}

TEST(AutogradGrad, UnusedInputIsAnErrorUnlessAllowed) {
  auto x = leaf({1, 2}, {2});
  auto unused = leaf({1}, {1});
  try {
    autograd::grad({(x * x).sum()}, {x, unused});
    FAIL() << "expected kiln::Error";
  } catch (const kiln::Error& e) {
    EXPECT_NE(std::string(e.what()).find("input 1"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("allow_unused"), std::string::npos) << e.what();
  }
  auto g = autograd::grad({(x * x).sum()}, {x, unused}, {}, false, false, /*allow_unused=*/true);
  EXPECT_EQ(values(g[0]), (std::vector<double>{2, 4}));
  EXPECT_FALSE(g[1].defined());
}

TEST(AutogradGrad, RetainGraphAllowsASecondCall) {
  auto x = leaf({1, 2}, {2});
  auto y = (x * x).sum();
  auto first = autograd::grad({y}, {x}, {}, /*retain_graph=*/true);
  auto second = autograd::grad({y}, {x});
  EXPECT_EQ(values(first[0]), values(second[0]));
  EXPECT_THROW(autograd::grad({y}, {x}), kiln::Error);  // freed by the second call
}

TEST(AutogradGrad, RefusesWhatItCannotDo) {
  auto x = leaf({1, 2}, {2});
  auto y = (x * x).sum();
  auto plain = kiln::from_vector<double>({1, 2}, {2});
  EXPECT_THROW(autograd::grad({y}, {plain}), kiln::Error);  // does not require grad
  EXPECT_THROW(autograd::grad({y}, {}), kiln::Error);       // no inputs
  try {
    autograd::grad({y}, {x}, {}, true, /*create_graph=*/true);
    FAIL() << "expected kiln::Error";
  } catch (const kiln::Error& e) {
    EXPECT_NE(std::string(e.what()).find("double backward"), std::string::npos) << e.what();
  }
  // A refused call leaves the graph usable.
  EXPECT_EQ(values(autograd::grad({y}, {x})[0]), (std::vector<double>{2, 4}));
}

TEST(AutogradGrad, FiniteDifferencesAgree) {
  kiln::manual_seed(11);
  auto x = kiln::randn({3, 4}, kiln::float64).requires_grad_();
  auto f = [](const Tensor& t) { return (t.sigmoid() * t.exp()).sum(1).pow(2).sum(); };
  auto g = values(autograd::grad({f(x)}, {x})[0]);
  auto base = values(x.detach());
  const double eps = 1e-6;
  for (size_t i = 0; i < base.size(); ++i) {
    auto plus = base, minus = base;
    plus[i] += eps;
    minus[i] -= eps;
    double fp = f(kiln::from_vector<double>(plus, {3, 4})).item<double>();
    double fm = f(kiln::from_vector<double>(minus, {3, 4})).item<double>();
    EXPECT_NEAR(g[i], (fp - fm) / (2 * eps), 1e-6 * std::max(1.0, std::abs(g[i]))) << i;
  }
}

}  // namespace
