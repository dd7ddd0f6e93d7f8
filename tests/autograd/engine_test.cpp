// The tape itself: accumulation, retain_graph, detach, no_grad, leaves, errors,
// user-defined functions, retain_grad.

#include <gtest/gtest.h>

#include <kiln/kiln.h>

namespace {

using kiln::Tensor;

Tensor leaf(std::vector<double> v, std::vector<int64_t> shape = {}) {
  return kiln::from_vector<double>(v, shape).requires_grad_();
}

TEST(Autograd, ChainRuleOnScalars) {
  auto a = leaf({2.0}), b = leaf({3.0});
  auto y = (a * b + a * a).sum();  // dy/da = b + 2a = 7, dy/db = a = 2
  y.backward();
  EXPECT_DOUBLE_EQ(a.grad().item<double>(), 7.0);
  EXPECT_DOUBLE_EQ(b.grad().item<double>(), 2.0);
}

TEST(Autograd, GradientsAccumulateAcrossBackwardCalls) {
  auto a = leaf({1.0, 2.0}, {2});
  (a * 3).sum().backward();
  (a * 4).sum().backward();
  EXPECT_EQ(a.grad().to_vector<double>(), (std::vector<double>{7, 7}));
  a.set_grad(Tensor());
  EXPECT_FALSE(a.grad().defined());
}

TEST(Autograd, BroadcastGradientIsReducedToTheInputShape) {
  auto a = leaf({1, 2, 3}, {3});
  auto b = leaf({1, 1, 1, 1, 1, 1}, {2, 3});
  (a * b).sum().backward();
  EXPECT_EQ(a.grad().shape().vec(), (std::vector<int64_t>{3}));
  EXPECT_EQ(a.grad().to_vector<double>(), (std::vector<double>{2, 2, 2}));
}

TEST(Autograd, SecondBackwardWithoutRetainGraphThrows) {
  auto a = leaf({2.0});
  auto y = (a * a).sum();
  y.backward();
  EXPECT_THROW(y.backward(), kiln::Error);
  auto z = (a.exp()).sum();
  z.backward({}, /*retain_graph=*/true);
  EXPECT_NO_THROW(z.backward());
}

TEST(Autograd, BackwardOnNonScalarNeedsAGradient) {
  auto a = leaf({1, 2}, {2});
  auto y = a * 2;
  try {
    y.backward();
    FAIL() << "expected kiln::Error";
  } catch (const kiln::Error& e) {
    EXPECT_NE(std::string(e.what()).find("single-element"), std::string::npos) << e.what();
  }
  y.backward(kiln::ones({2}, kiln::float64));
  EXPECT_EQ(a.grad().to_vector<double>(), (std::vector<double>{2, 2}));
}

TEST(Autograd, BackwardOnATensorWithoutGradThrows) {
  auto a = kiln::ones({2});
  EXPECT_THROW(a.sum().backward(), kiln::Error);
}

TEST(Autograd, NoGradGuardAndDetachStopRecording) {
  auto a = leaf({1.0});
  {
    kiln::NoGradGuard guard;
    EXPECT_FALSE((a * 2).requires_grad());
  }
  EXPECT_TRUE((a * 2).requires_grad());
  EXPECT_FALSE(a.detach().requires_grad());
  EXPECT_TRUE(a.is_leaf());
  EXPECT_FALSE((a * 2).is_leaf());
  EXPECT_EQ((a * 2).grad_fn()->name(), "MulBackward");
}

TEST(Autograd, InPlaceOnALeafThatRequiresGradIsRefused) {
  auto a = leaf({1.0});
  EXPECT_THROW(a.add_(1.0), kiln::Error);
  {
    kiln::NoGradGuard guard;
    a.add_(1.0);
  }
  EXPECT_DOUBLE_EQ(a.item<double>(), 2.0);
}

TEST(Autograd, ModifyingASavedTensorMakesBackwardThrow) {
  auto a = leaf({1.0, 2.0}, {2});
  auto b = kiln::from_vector<double>({3.0, 4.0});
  auto y = (a * b).sum();
  b.mul_(2.0);  // b was saved by MulBackward
  EXPECT_THROW(y.backward(), kiln::Error);
}

TEST(Autograd, RetainGradKeepsNonLeafGradients) {
  auto a = leaf({1.0, 2.0}, {2});
  auto h = a * 3;
  h.retain_grad();
  (h * h).sum().backward();
  EXPECT_EQ(h.grad().to_vector<double>(), (std::vector<double>{6, 12}));
  EXPECT_EQ(a.grad().to_vector<double>(), (std::vector<double>{18, 36}));
}

TEST(Autograd, UsedTwiceGradientsSum) {
  auto a = leaf({3.0});
  auto y = a * a * a;  // 3a^2 = 27
  y.sum().backward();
  EXPECT_DOUBLE_EQ(a.grad().item<double>(), 27.0);
}

struct Cube : kiln::autograd::Function<Cube> {
  static Tensor forward(kiln::autograd::AutogradContext& ctx, const Tensor& x) {
    ctx.save_for_backward({x});
    return x * x * x;
  }
  static std::vector<Tensor> backward(kiln::autograd::AutogradContext& ctx,
                                      std::vector<Tensor> grads) {
    auto x = ctx.saved()[0];
    return {grads[0] * 3 * x * x};
  }
};

TEST(Autograd, UserDefinedFunction) {
  auto x = leaf({2.0});
  auto y = Cube::apply(x);
  EXPECT_DOUBLE_EQ(y.item<double>(), 8.0);
  // Named as PyTorch's C++ frontend names it: the demangled type, not typeid's "4Cube".
  EXPECT_EQ(y.grad_fn()->name(), "(anonymous namespace)::Cube");
  y.sum().backward();
  EXPECT_DOUBLE_EQ(x.grad().item<double>(), 12.0);
  auto r = kiln::gradcheck([](const std::vector<Tensor>& v) { return Cube::apply(v[0]); },
                           {leaf({0.5, -1.5}, {2})});
  EXPECT_TRUE(r.ok) << r.message;
}

struct WrongShape : kiln::autograd::Function<WrongShape> {
  static Tensor forward(kiln::autograd::AutogradContext&, const Tensor& x) { return x * 2; }
  static std::vector<Tensor> backward(kiln::autograd::AutogradContext&, std::vector<Tensor>) {
    return {kiln::ones({5}, kiln::float64)};
  }
};

TEST(Autograd, UserFunctionReturningAWrongShapeIsAClearError) {
  auto x = leaf({1, 2}, {2});
  try {
    WrongShape::apply(x).sum().backward();
    ADD_FAILURE() << "no error";
  } catch (const kiln::Error& e) {
    EXPECT_NE(std::string(e.what()).find("(anonymous namespace)::WrongShape::backward returned a"),
              std::string::npos)
        << e.what();
  }
}

TEST(Autograd, GradcheckCatchesAWrongGradient) {
  struct Bad : kiln::autograd::Function<Bad> {
    static Tensor forward(kiln::autograd::AutogradContext&, const Tensor& x) { return x * x; }
    static std::vector<Tensor> backward(kiln::autograd::AutogradContext&, std::vector<Tensor> g) {
      return {g[0] * 3.0};  // wrong on purpose
    }
  };
  auto r = kiln::gradcheck([](const std::vector<Tensor>& v) { return Bad::apply(v[0]); },
                           {leaf({0.5, 1.5}, {2})});
  EXPECT_FALSE(r.ok);
  EXPECT_GT(r.max_abs_error, 0.1);
}

TEST(Autograd, RequiresGradOnlyForFloatingLeaves) {
  EXPECT_THROW(kiln::ones({2}, kiln::int64).requires_grad_(), kiln::Error);
  auto a = leaf({1.0});
  EXPECT_THROW((a * 2).requires_grad_(false), kiln::Error);
}

}  // namespace

namespace kiln::test {
namespace {

TEST(AutogradHooks, PostAccumulateHookSeesTheSummedGradientOncePerPass) {
  Tensor w = ones({3}).requires_grad_();
  std::vector<std::vector<float>> seen;
  autograd::register_post_accumulate_grad_hook(
      w, [&](const Tensor& leaf) { seen.push_back(leaf.grad().to_vector<float>()); });
  ((w * 2).sum() + (w * 3).sum()).backward();  // two uses, one accumulation
  ASSERT_EQ(seen.size(), 1u);
  EXPECT_EQ(seen[0], std::vector<float>(3, 5.0f));
  (w * 1).sum().backward();  // accumulates onto .grad
  ASSERT_EQ(seen.size(), 2u);
  EXPECT_EQ(seen[1], std::vector<float>(3, 6.0f));
  Tensor not_leaf = w * 2;
  EXPECT_THROW(autograd::register_post_accumulate_grad_hook(not_leaf, [](const Tensor&) {}), Error);
}

TEST(AutogradHooks, QueuedCallbacksRunWhenThePassEnds) {
  Tensor a = ones({2}).requires_grad_();
  Tensor b = ones({2}).requires_grad_();
  std::vector<std::string> order;
  autograd::register_post_accumulate_grad_hook(a, [&](const Tensor&) {
    order.push_back("a");
    autograd::queue_callback([&] { order.push_back("end:" + std::to_string(b.grad().defined())); });
  });
  autograd::register_post_accumulate_grad_hook(b, [&](const Tensor&) { order.push_back("b"); });
  (a * b).sum().backward();
  ASSERT_EQ(order.size(), 3u);
  EXPECT_EQ(order.back(), "end:1") << "the callback ran before every gradient was accumulated";
  EXPECT_THROW(autograd::queue_callback([] {}), Error);  // no pass running
}

TEST(AutogradHooks, EveryCallbackRunsEvenAfterOneThrows) {
  Tensor a = ones({2}).requires_grad_();
  bool second_ran = false;
  autograd::register_post_accumulate_grad_hook(a, [&](const Tensor&) {
    autograd::queue_callback([] { throw Error("first callback failed"); });
    autograd::queue_callback([&] { second_ran = true; });
  });
  EXPECT_THROW((a * 2).sum().backward(), Error);
  EXPECT_TRUE(second_ran) << "a throwing callback kept a later one from cleaning up";
}

}  // namespace
}  // namespace kiln::test
