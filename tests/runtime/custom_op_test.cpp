// kiln::call_op and kiln::has_op: a plugin's own op ("myops.softplus", from tutorial
// 8's plugin, examples/tutorial/myops_plugin) called by name, checked against the CPU
// backend in float64; every way a call can be wrong, and the process still usable.
#include <cmath>

#include "kiln/autograd.h"
#include "kiln/custom_op.h"
#include "kiln/graph.h"
#include "kiln/profiler.h"
#include "runtime/runtime_test_util.h"

namespace kiln {
namespace {

const Device kMyops("myops:0");

class CustomOp : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!test::has_plugin("myops"))
      GTEST_SKIP() << "the myops plugin did not load (run through ctest, which sets "
                      "KILN_PLUGIN_PATH):"
                   << test::describe_failures();
  }
};

// softplus(x) = log(1 + exp(beta x)) / beta, on cpu:0 in float64.
Tensor reference(const Tensor& x, double beta) {
  auto xd = x.to(Device("cpu:0")).to(float64);
  return log(1 + exp(beta * xd)) / beta;
}

Tensor softplus(const Tensor& x, double beta) {
  auto y = empty_like(x);
  call_op("myops.softplus", {x}, {y}, {{"beta", beta}});
  return y;
}

TEST_F(CustomOp, RunsThePluginsKernelWithItsAttribute) {
  manual_seed(1);
  auto x = (randn({3, 4}, float64) * 3).to(kMyops);
  for (double beta : {1.0, 2.5}) {
    auto y = softplus(x, beta);
    EXPECT_EQ(y.device(), kMyops);
    EXPECT_TRUE(allclose(y.to(Device("cpu:0")), reference(x, beta), 1e-12, 1e-14))
        << "beta " << beta << ": " << y;
  }
  // float32 against the float64 reference: one rounding of the result.
  auto x32 = x.to(float32);
  EXPECT_TRUE(allclose(softplus(x32, 1.0).to(Device("cpu:0")).to(float64), reference(x32, 1.0),
                       1e-6, 1e-7));
}

TEST_F(CustomOp, StridedOperandsAreMadeContiguousForAKernelThatWantsThem) {
  manual_seed(2);
  auto base = randn({4, 5}, float64).to(kMyops);
  auto x = base.transpose(0, 1);  // a strided input
  auto out = zeros({4, 5}, TensorOptions(float64).device(kMyops));
  auto y = out.transpose(0, 1);  // a strided output: written through
  call_op("myops.softplus", {x}, {y}, {{"beta", 1.0}});
  EXPECT_TRUE(allclose(out.to(Device("cpu:0")), reference(base, 1.0), 1e-12, 1e-14)) << out;
}

TEST_F(CustomOp, IsRecordedInAGraphAndReplayed) {
  // A plugin's own op, captured through the recorded path (kiln/graph.h) on its device.
  auto x = zeros({2, 3}, TensorOptions(float64).device(kMyops));
  Graph graph;
  Tensor y;
  {
    GraphCapture capture(graph, kMyops);
    y = softplus(x, 2.0);
  }
  manual_seed(3);
  auto values = randn({2, 3}, float64);
  x.copy_(values.to(kMyops));
  graph.replay();
  EXPECT_TRUE(allclose(y.to(Device("cpu:0")), reference(values, 2.0), 1e-12, 1e-14)) << y;
}

TEST_F(CustomOp, ARandomOpWithoutKilnsGeneratorIsRefusedInAGraph) {
  // A "seed" attribute the frontend does not draw: every replay would repeat it.
  auto x = zeros({2, 3}, TensorOptions(float64).device(kMyops));
  auto y = empty_like(x);
  Graph graph;
  auto capture_it = [&] {
    GraphCapture capture(graph, kMyops);
    call_op("myops.softplus", {x}, {y}, {{"beta", 1.0}, {"seed", int64_t{7}}});
  };
  EXPECT_KILN_ERROR(capture_it(), "myops.softplus inside a graph capture on myops:0",
                    "random op without a capturable generator state");
  EXPECT_FALSE(graph.captured());
}

TEST_F(CustomOp, HasOpAsksTheDevicesPlugin) {
  EXPECT_TRUE(has_op("myops.softplus", kMyops));
  EXPECT_FALSE(has_op("myops.softplus", kMyops, 2));
  EXPECT_FALSE(has_op("myops.softsign", kMyops));
  EXPECT_FALSE(has_op("myops.softplus", Device("cpu:0")));
  EXPECT_TRUE(has_op("kiln.add", Device("cpu:0")));
  EXPECT_KILN_ERROR(has_op("myops.softplus", Device("nosuch:0")), "nosuch");
}

TEST_F(CustomOp, BadCallsAreClearErrorsAndLeaveTheProcessUsable) {
  auto x = ones({2, 3}, TensorOptions(float64).device(kMyops));
  auto y = empty_like(x);
  auto on_cpu = ones({2, 3}, float64);
  EXPECT_KILN_ERROR(call_op("softplus", {x}, {y}), "'softplus'", "<prefix>.<op>");
  EXPECT_KILN_ERROR(call_op("myops.", {x}, {y}), "<prefix>.<op>");
  EXPECT_KILN_ERROR(call_op("kiln.add", {x, x}, {y}), "catalogue", "kiln::add");
  EXPECT_KILN_ERROR(call_op("myops.softplus", {x}, {y}, {{"beta", 1.0}}, 0), "version 0");
  EXPECT_KILN_ERROR(call_op("myops.softplus", {}, {}), "no operands");
  EXPECT_KILN_ERROR(call_op("myops.softplus", std::vector<Tensor>(9, x), {y}), "at most 8");
  EXPECT_KILN_ERROR(call_op("myops.softplus", {Tensor()}, {y}), "input 0", "undefined");
  EXPECT_KILN_ERROR(call_op("myops.softplus", {x}, {on_cpu}, {{"beta", 1.0}}), "one device",
                    "output 0 is on cpu:0", "myops:0");
  // The CPU plugin does not define the op, and nothing falls back for it.
  EXPECT_KILN_ERROR(call_op("myops.softplus", {on_cpu}, {empty_like(on_cpu)}, {{"beta", 1.0}}),
                    "myops.softplus (version 1) has no kernel on cpu:0", "plugin 'cpu'");
  EXPECT_KILN_ERROR(call_op("myops.softplus", {x}, {y}, {{"beta", 1.0}}, 2), "version 2",
                    "no kernel on myops:0");
  // The plugin's supports() declines int32; its kernel refuses a bad or missing attribute.
  auto xi = ones({2, 3}, TensorOptions(int32).device(kMyops));
  EXPECT_KILN_ERROR(call_op("myops.softplus", {xi}, {empty_like(xi)}, {{"beta", 1.0}}), "declined",
                    "int32[2, 3]");
  EXPECT_KILN_ERROR(call_op("myops.softplus", {x}, {y}, {{"beta", -1.0}}), "myops.softplus",
                    "beta must be positive");
  EXPECT_KILN_ERROR(call_op("myops.softplus", {x}, {y}), "myops.softplus", "beta");
  EXPECT_KILN_ERROR(call_op("myops.softplus", {x}, {y}, {{"beta", 1}}), "myops.softplus", "beta");
  EXPECT_KILN_ERROR(
      call_op("myops.softplus", {x}, {y.slice(1, 0, 1).expand({2, 3})}, {{"beta", 1.0}}),
      "output 0", "overlap");
  // Still usable: a good call gives the right values (any integer type makes an INT
  // attribute; one the kernel does not read is ignored).
  call_op("myops.softplus", {x}, {y}, {{"beta", 1.0}, {"unused", std::size_t{3}}});
  EXPECT_NEAR(y.to(Device("cpu:0")).to_vector<double>()[0], std::log1p(std::exp(1.0)), 1e-15);
}

TEST_F(CustomOp, AutogradRefusesWhatItCannotRecordAndSeesTheWrite) {
  auto x = ones({3}, TensorOptions(float64).device(kMyops)).requires_grad_();
  auto y = zeros({3}, TensorOptions(float64).device(kMyops));
  EXPECT_KILN_ERROR(call_op("myops.softplus", {x}, {y}, {{"beta", 1.0}}), "input 0 requires grad",
                    "autograd::Function");
  EXPECT_KILN_ERROR(call_op("myops.softplus", {y}, {x}, {{"beta", 1.0}}), "requires grad");
  {
    NoGradGuard no_grad;  // fine without recording
    call_op("myops.softplus", {x}, {y}, {{"beta", 1.0}});
  }
  // An output is written in place: a product that saved it for backward notices.
  auto h = zeros({3}, TensorOptions(float64).device(kMyops));
  auto product = x * h;
  call_op("myops.softplus", {x.detach()}, {h}, {{"beta", 1.0}});
  EXPECT_KILN_ERROR(product.sum().backward(), "modified by an in-place operation");

  // A call that never reached a kernel wrote nothing: the graph stays usable.
  auto g = zeros({3}, TensorOptions(float64).device(kMyops));
  auto kept = x * g;
  EXPECT_KILN_ERROR(call_op("myops.nosuch", {x.detach()}, {g}), "no kernel on myops:0");
  kept.sum().backward();
  EXPECT_TRUE(allclose(x.grad().to(Device("cpu:0")), zeros({3}, float64)));
}

TEST_F(CustomOp, TheProfilerRecordsItByName) {
  auto x = ones({8}, TensorOptions(float32).device(kMyops));
  profiler::Profiler p;
  softplus(x, 1.0);
  p.stop();
  bool found = false;
  for (const profiler::Event& e : p.events())
    found |=
        e.kind == profiler::Event::Kind::Op && e.name == "myops.softplus" && e.device == "myops:0";
  EXPECT_TRUE(found) << p.events().size() << " events";
}

}  // namespace
}  // namespace kiln
