// Bad input, on every device: shape, dtype and device mismatches in every op family
// give a kiln::Error that names the op and the values involved; afterwards every
// tensor that existed still reads correctly and new ops work.
#include <cmath>
#include <functional>
#include <utility>

#include "ops/conformance.h"

namespace kiln::test {
namespace {

class BadInput : public DeviceTest {
 protected:
  /// Tensors created before a failing op, and a check that they are intact and that
  /// the device still computes.
  void SetUp() override {
    a_ = make({1, 2, 3, 4, 5, 6}, {2, 3});
    b_ = make({1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19, 20}, {4, 5});
  }
  void expect_still_working() {
    EXPECT_TRUE(matches(a_, {2, 3}, {1, 2, 3, 4, 5, 6}));
    EXPECT_EQ(b_.sum().item<float>(), 210.0f);
    EXPECT_TRUE(matches(a_ + 1, {2, 3}, {2, 3, 4, 5, 6, 7}));
    EXPECT_TRUE(matches(matmul(a_, a_.t()), {2, 2}, {14, 32, 32, 77}));
  }
  Tensor a_, b_;
};

using BinaryFn = Tensor (*)(const Tensor&, const Tensor&);

TEST_P(BadInput, BinaryBroadcastFailureNamesBothShapes) {
  const std::pair<const char*, BinaryFn> ops[] = {{"add", add},
                                                  {"sub", sub},
                                                  {"mul", mul},
                                                  {"div", div},
                                                  {"pow", pow},
                                                  {"maximum", maximum},
                                                  {"minimum", minimum},
                                                  {"eq", eq},
                                                  {"ne", ne},
                                                  {"lt", lt},
                                                  {"le", le},
                                                  {"gt", gt},
                                                  {"ge", ge},
                                                  {"logical_and", logical_and},
                                                  {"logical_or", logical_or}};
  for (const auto& entry : ops) {
    const auto& name = entry.first;  // not a structured binding: clang 14 cannot capture one
    const auto& op = entry.second;
    SCOPED_TRACE(name);
    EXPECT_KILN_ERROR(op(a_, b_), name, "[2, 3]", "[4, 5]");
  }
  EXPECT_KILN_ERROR(a_ + b_, "[2, 3]", "[4, 5]");
  EXPECT_KILN_ERROR(a_ < b_, "[2, 3]", "[4, 5]");
  EXPECT_KILN_ERROR(a_ + make({1, 2}, {2}), "[2, 3]", "[2]");  // trailing dims 3 vs 2
  expect_still_working();
}

TEST_P(BadInput, InPlaceShapeMismatchLeavesSelfUnchanged) {
  EXPECT_KILN_ERROR(a_.add_(b_), "[2, 3]", "[4, 5]");
  EXPECT_KILN_ERROR(a_.mul_(make({1, 2}, {2, 1, 1})), "[2, 3]");  // would grow self
  EXPECT_KILN_ERROR(a_.copy_(b_), "[2, 3]", "[4, 5]");
  expect_still_working();
}

TEST_P(BadInput, WhereShapeAndConditionDType) {
  EXPECT_KILN_ERROR(where(make({1, 0}, {2}, kbool), a_, b_), "where");
  EXPECT_KILN_ERROR(where(make({1, 0, 1}, {3}, float32), a_, a_), "where", "bool");
  EXPECT_KILN_ERROR(where(make({1, 0, 1}, {3}, int64), a_, 0.0), "where");
  expect_still_working();
}

TEST_P(BadInput, MatmulShapesCannotBeMultiplied) {
  EXPECT_KILN_ERROR(matmul(a_, b_), "matmul", "[2, 3]", "[4, 5]", "3 != 4");
  EXPECT_KILN_ERROR(a_.matmul(b_), "matmul", "3 != 4");
  EXPECT_KILN_ERROR(matmul(make({1, 2, 3}, {3}), make({1, 2, 3, 4}, {4})), "matmul", "[3]", "[4]");
  EXPECT_KILN_ERROR(matmul(zeros({2, 3, 4}, opts()), zeros({3, 4, 5}, opts())),
                    "matmul");                             // batch 2 vs 3
  EXPECT_KILN_ERROR(matmul(make({2}, {}), a_), "matmul");  // 0-d operand
  expect_still_working();
}

TEST_P(BadInput, ReductionDimOutOfRange) {
  EXPECT_KILN_ERROR(sum(a_, {2}), "sum", "2");
  EXPECT_KILN_ERROR(sum(a_, {-3}), "sum", "-3");
  EXPECT_KILN_ERROR(mean(a_, {0, 5}), "mean", "5");
  EXPECT_KILN_ERROR(amax(a_, {3}), "3");
  EXPECT_KILN_ERROR(prod(a_, {-7}), "-7");
  EXPECT_KILN_ERROR(var(a_, {2}), "var");
  EXPECT_KILN_ERROR(argmax(a_, 2), "argmax", "2");
  EXPECT_KILN_ERROR(a_.argmin(-3), "argmin", "-3");
  EXPECT_KILN_ERROR(sum(a_, {0, 0}), "sum");   // a dim twice
  EXPECT_KILN_ERROR(sum(a_, {1, -1}), "sum");  // the same dim, spelled twice
  EXPECT_KILN_ERROR(var(a_, {}, -1), "var");   // negative correction
  expect_still_working();
}

TEST_P(BadInput, CatAndStackMismatches) {
  EXPECT_KILN_ERROR(cat({a_, make({1, 2, 3, 4, 5, 6, 7, 8}, {2, 4})}, 0), "cat", "[2, 3]",
                    "[2, 4]");
  EXPECT_KILN_ERROR(cat({a_, make({1, 2, 3}, {3})}, 0), "cat");  // ranks differ
  EXPECT_KILN_ERROR(cat({a_, a_}, 2), "cat", "2");
  EXPECT_KILN_ERROR(cat({}, 0), "cat");
  EXPECT_KILN_ERROR(cat({make({1}, {}), make({2}, {})}, 0), "cat");  // 0-d cannot be concatenated
  EXPECT_KILN_ERROR(stack({a_, a_.t()}, 0), "stack", "[2, 3]", "[3, 2]");
  EXPECT_KILN_ERROR(stack({a_, a_}, 3), "stack", "3");
  EXPECT_KILN_ERROR(stack({}, 0), "stack");
  expect_still_working();
}

TEST_P(BadInput, IndexSelectErrors) {
  EXPECT_KILN_ERROR(index_select(a_, 1, make({0, 1}, {2}, float32)),
                    "index_select");  // float index
  EXPECT_KILN_ERROR(index_select(a_, 1, make({0, 1, 0, 1}, {2, 2}, int64)),
                    "index_select");                                                   // 2-D index
  EXPECT_KILN_ERROR(index_select(a_, 2, make({0}, {1}, int64)), "index_select", "2");  // dim
  // An index value out of range is data the device reads: a device may report it at the
  // op or, at the latest, at the next host synchronization of its stream (the CUDA
  // plugin does so, as PyTorch does, minus a poisoned context). Reading the result is
  // such a synchronization.
  EXPECT_KILN_ERROR(index_select(a_, 1, make({0, 7}, {2}, int64)).to_vector<float>(), "7", "3");
  EXPECT_KILN_ERROR(index_select(a_, 0, make({-1}, {1}, int64)).to_vector<float>(), "-1");
  expect_still_working();
}

TEST_P(BadInput, GatherErrors) {
  EXPECT_KILN_ERROR(gather(a_, 1, make({0, 1}, {2}, int64)), "gather");  // index rank 1 vs 2
  EXPECT_KILN_ERROR(gather(a_, 1, make({0, 1, 0, 1}, {2, 2}, float32)), "gather");  // float index
  EXPECT_KILN_ERROR(gather(a_, 1, zeros({3, 1}, opts(int64))), "gather");  // index.shape[0] 3 > 2
  EXPECT_KILN_ERROR(gather(a_, 2, zeros({2, 3}, opts(int64))), "gather", "2");  // dim
  // Out-of-range values: at the op or at the next synchronization, as above.
  EXPECT_KILN_ERROR(gather(a_, 1, make({0, 3}, {2, 1}, int64)).to_vector<float>(), "3");
  EXPECT_KILN_ERROR(gather(a_, 0, make({-1, 0, 0}, {1, 3}, int64)).to_vector<float>(), "-1");
  expect_still_working();
}

TEST_P(BadInput, DeviceMismatchNamesBothDevices) {
  const auto others = other_devices();
  if (others.empty()) GTEST_SKIP() << "only one device loaded";
  for (const Device& other : others) {
    SCOPED_TRACE(other.str());
    auto there = from_vector<float>({1, 2, 3, 4, 5, 6}, {2, 3}, TensorOptions().device(other));
    const std::string here_name = device().str(), there_name = other.str();
    EXPECT_KILN_ERROR(a_ + there, here_name, there_name);
    EXPECT_KILN_ERROR(there * a_, here_name, there_name);
    EXPECT_KILN_ERROR(a_ == there, here_name, there_name);
    EXPECT_KILN_ERROR(matmul(a_, there.t()), here_name, there_name);
    EXPECT_KILN_ERROR(where(a_ > 2, a_, there), here_name, there_name);
    EXPECT_KILN_ERROR(where(there > 2, a_, a_), here_name, there_name);
    EXPECT_KILN_ERROR(cat({a_, there}, 0), here_name, there_name);
    EXPECT_KILN_ERROR(stack({there, a_}, 0), here_name, there_name);
    EXPECT_KILN_ERROR(
        index_select(a_, 0,
                     from_vector<int64_t>({0}, {1}, TensorOptions().dtype(int64).device(other))),
        here_name, there_name);
    EXPECT_KILN_ERROR(gather(a_, 0, zeros({1, 3}, TensorOptions().dtype(int64).device(other))),
                      here_name, there_name);
    EXPECT_KILN_ERROR(a_.add_(there), here_name, there_name);
    EXPECT_TRUE(matches(there, {2, 3}, {1, 2, 3, 4, 5, 6}));
  }
  expect_still_working();
}

/// Either a kiln::Error (the frontend refuses the dtype), or the right answer.
template <typename F>
void refused_or_correct(const char* what, F&& op, const std::vector<double>& expected) {
  SCOPED_TRACE(what);
  try {
    Tensor y = op();
    EXPECT_TRUE(matches(y, Ref({static_cast<int64_t>(expected.size())}, expected), kFloat32Tol));
  } catch (const kiln::Error&) {
    SUCCEED();
  } catch (const std::exception& e) {
    ADD_FAILURE() << "threw a std::exception that is not a kiln::Error: " << e.what();
  }
}

TEST_P(BadInput, DTypesOutsideAnOpsCatalogueEntryAreRefusedOrPromoted) {
  auto b = make({1, 0}, {2}, kbool);
  auto i = make({1, 4}, {2}, int64);
  refused_or_correct("neg(bool)", [&] { return neg(b); }, {-1, 0});
  refused_or_correct("exp(int64)", [&] { return exp(i); }, {std::exp(1.0), std::exp(4.0)});
  refused_or_correct("sqrt(int64)", [&] { return sqrt(i); }, {1, 2});
  refused_or_correct("sigmoid(bool)", [&] { return sigmoid(b); }, {1 / (1 + std::exp(-1.0)), 0.5});
  refused_or_correct("mean(int64)", [&] { return mean(i, {0}, true); }, {2.5});
  refused_or_correct("matmul(int64)",
                     [&] {
                       return matmul(i.reshape({1, 2}), i.reshape({2, 1})).reshape({1});
                     },
                     {17});
  refused_or_correct("sum(bool)", [&] { return sum(make({1, 1, 0}, {3}, kbool), {0}, true); }, {2});
  refused_or_correct("pow(int64, int64)", [&] { return pow(i, i); }, {1, 256});
  refused_or_correct("bool + bool", [&] { return b + b; }, {1, 0});  // PyTorch: logical or
  expect_still_working();
}

TEST_P(BadInput, FallbackErrorModeThrowsNamingOpAndDevice) {
  struct RestoreMode {
    FallbackMode before = fallback_mode();
    ~RestoreMode() { set_fallback_mode(before); }
  } restore;
  set_fallback_mode(FallbackMode::Error);
  reset_fallback_report();
  if (device().backend() == "cpu") {
    // The CPU plugin has every kernel: nothing falls back, nothing throws.
    EXPECT_NO_THROW(expect_still_working());
  } else if (device().backend() == "minimal") {
    // The fixture has kiln.fill alone: everything else would fall back.
    EXPECT_KILN_ERROR(a_ + a_, "kiln.add", device().str());
    EXPECT_KILN_ERROR(matmul(a_, a_.t()), "kiln.matmul", device().str());
    EXPECT_KILN_ERROR(a_.sum(), "kiln.sum", device().str());
  } else {
    // Any other plugin: each op either runs natively and is right, or is refused with
    // an error naming it and the device. Which ops a plugin lacks is its own business.
    const std::pair<const char*, std::function<void()>> ops[] = {
        {"kiln.add",
         [&] {
           EXPECT_TRUE(matches(a_ + a_, {2, 3}, {2, 4, 6, 8, 10, 12}));
         }},
        {"kiln.matmul",
         [&] {
           EXPECT_TRUE(matches(matmul(a_, a_.t()), {2, 2}, {14, 32, 32, 77}));
         }},
        {"kiln.sum", [&] { EXPECT_EQ(a_.sum().item<float>(), 21.0f); }},
    };
    for (const auto& [op, run] : ops) {
      SCOPED_TRACE(op);
      try {
        run();
      } catch (const kiln::Error& e) {
        EXPECT_TRUE(contains(e.what(), op) && contains(e.what(), device().str())) << e.what();
      }
    }
  }
  // A read in the tensor's own dtype is a plain device-to-host copy, never a fallback.
  EXPECT_EQ(a_.to_vector<float>(), (std::vector<float>{1, 2, 3, 4, 5, 6}));
  EXPECT_TRUE(fallback_report().empty()) << fallback_report().str();
  set_fallback_mode(restore.before);
  expect_still_working();
}

TEST_P(BadInput, ManyFailuresInARowDoNotLeakIntoLaterOps) {
  for (int i = 0; i < 50; ++i) {
    EXPECT_THROW((void)(a_ + b_), kiln::Error);
    EXPECT_THROW((void)matmul(a_, b_), kiln::Error);
    EXPECT_THROW((void)sum(a_, {9}), kiln::Error);
  }
  expect_still_working();
}

KILN_INSTANTIATE_FOR_EVERY_DEVICE(BadInput);

}  // namespace
}  // namespace kiln::test
