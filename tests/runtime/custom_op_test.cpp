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
  // A "seed" attribute the frontend does not draw: every replay would repeat it. The
  // plugin's schema declares no "seed", so the call is refused before the capture sees
  // it; an op without a schema reaches the capture's own check (version 1 of a name no
  // plugin declares has no kernel, so that path is the graph tests' to cover).
  auto x = zeros({2, 3}, TensorOptions(float64).device(kMyops));
  auto y = empty_like(x);
  Graph graph;
  auto capture_it = [&] {
    GraphCapture capture(graph, kMyops);
    call_op("myops.softplus", {x}, {y}, {{"beta", 1.0}, {"seed", int64_t{7}}});
  };
  EXPECT_KILN_ERROR(capture_it(), "myops.softplus", "attribute 'seed' is not declared");
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
  // The op's schema (dtype class float32_64) refuses int32 before its supports() is
  // asked; its kernel refuses a bad attribute value, its schema a missing or mistyped one.
  auto xi = ones({2, 3}, TensorOptions(int32).device(kMyops));
  EXPECT_KILN_ERROR(call_op("myops.softplus", {xi}, {empty_like(xi)}, {{"beta", 1.0}}),
                    "input 0 has dtype int32", "dtype class 'float32_64'", "plugin 'myops'");
  EXPECT_KILN_ERROR(call_op("myops.softplus", {x}, {y}, {{"beta", -1.0}}), "myops.softplus",
                    "beta must be positive");
  EXPECT_KILN_ERROR(call_op("myops.softplus", {x}, {y}), "myops.softplus", "beta");
  EXPECT_KILN_ERROR(call_op("myops.softplus", {x}, {y}, {{"beta", 1}}), "myops.softplus", "beta");
  EXPECT_KILN_ERROR(
      call_op("myops.softplus", {x}, {y.slice(1, 0, 1).expand({2, 3})}, {{"beta", 1.0}}),
      "output 0", "overlap");
  // Still usable: a good call gives the right values.
  call_op("myops.softplus", {x}, {y}, {{"beta", 1.0}});
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

// The plugin declares its ops (kiln/sdk/op_schemas.h): listed, and checked on each call.
TEST_F(CustomOp, ThePluginsDeclaredSchemasAreListed) {
  std::optional<OpSchema> s = op_schema("myops.softplus");
  ASSERT_TRUE(s.has_value());
  EXPECT_EQ(s->plugin, "myops");
  ASSERT_EQ(s->inputs.size(), 1u);
  ASSERT_EQ(s->outputs.size(), 1u);
  EXPECT_EQ(s->outputs[0].shape, OpSchema::ShapeRule::SameAs);
  ASSERT_EQ(s->attributes.size(), 1u);
  EXPECT_EQ(s->attributes[0].name, "beta");
  EXPECT_EQ(s->attributes[0].type, OpSchema::AttributeType::Float);
  EXPECT_EQ(s->dtypes, (std::vector<DType>{float32, float64}));
  EXPECT_EQ(s->gradient, "myops.softplus_backward");
  std::vector<std::string> names;
  for (const OpSchema& v : vendor_ops()) names.push_back(v.name);
  EXPECT_EQ(names, (std::vector<std::string>{"myops.softplus", "myops.softplus_backward"}));
  EXPECT_FALSE(op_schema("myops.softplus", 2).has_value());
}

TEST_F(CustomOp, CallsAreCheckedAgainstTheSchemaBeforeTheKernel) {
  auto x = ones({2, 3}, TensorOptions(float64).device(kMyops));
  auto y = empty_like(x);
  EXPECT_KILN_ERROR(call_op("myops.softplus", {x, x}, {y}, {{"beta", 1.0}}),
                    "call_op(myops.softplus): 2 inputs, but the op takes 1 (x)", "plugin 'myops'");
  EXPECT_KILN_ERROR(call_op("myops.softplus", {x}, {y, y}, {{"beta", 1.0}}),
                    "2 outputs, but the op writes 1 (y)");
  EXPECT_KILN_ERROR(call_op("myops.softplus", {x}, {y}, {{"beta", 1.0}, {"gamma", 2.0}}),
                    "attribute 'gamma' is not declared", "attributes are beta");
  EXPECT_KILN_ERROR(call_op("myops.softplus", {x}, {y}, {{"beta", 1.0}, {"beta", 2.0}}),
                    "attribute 'beta' given twice");
  EXPECT_KILN_ERROR(call_op("myops.softplus", {x}, {y}, {{"beta", "one"}}),
                    "attribute 'beta' is FLOAT, but the call passes STRING");
  EXPECT_KILN_ERROR(call_op("myops.softplus", {x}, {y}, {{"beta", 1}}),
                    "passes INT (write 1.0, not 1)");
  EXPECT_KILN_ERROR(call_op("myops.softplus", {x}, {y}), "needs the attribute 'beta' (FLOAT)");
  EXPECT_KILN_ERROR(
      call_op("myops.softplus", {x}, {zeros({3, 2}, TensorOptions(float64).device(kMyops))},
              {{"beta", 1.0}}),
      "output 0 ('y') has shape [3, 2], but the schema's rule gives [2, 3]");
  EXPECT_KILN_ERROR(call_op("myops.softplus", {x}, {empty_like(x).to(float32)}, {{"beta", 1.0}}),
                    "output 0 has dtype float32, but the op takes one dtype");
  // Nothing was written by the refused calls; a good one still works.
  call_op("myops.softplus", {x}, {y}, {{"beta", 1.0}});
  EXPECT_NEAR(y.to(Device("cpu:0")).to_vector<double>()[0], std::log1p(std::exp(1.0)), 1e-15);
}

TEST_F(CustomOp, AVendorOpAllocatesItsOutputsFromTheShapeRule) {
  manual_seed(3);
  auto x = (randn({4, 5}, float64) * 3).to(kMyops);
  VendorOp softplus_op("myops.softplus");
  EXPECT_EQ(softplus_op.schema().plugin, "myops");
  Tensor y = softplus_op({x}, {{"beta", 2.0}});
  EXPECT_EQ(y.device(), kMyops);
  EXPECT_EQ(y.dtype(), float64);
  EXPECT_EQ(y.shape(), x.shape());
  EXPECT_TRUE(allclose(y.to(Device("cpu:0")), reference(x, 2.0), 1e-12, 1e-14));
  auto x32 = ones({7}, TensorOptions(float32).device(kMyops));
  std::vector<Tensor> outs = softplus_op.run({x32}, {{"beta", 1.0}});
  ASSERT_EQ(outs.size(), 1u);
  EXPECT_EQ(outs[0].dtype(), float32);
  EXPECT_EQ(outs[0].shape(), x32.shape());
  EXPECT_EQ(softplus_op.output_shapes({{2, 9}}), (std::vector<std::vector<int64_t>>{{2, 9}}));
  EXPECT_KILN_ERROR(VendorOp("myops.nosuch"), "VendorOp(myops.nosuch)",
                    "no loaded plugin declares");
  EXPECT_KILN_ERROR(VendorOp("kiln.add"), "catalogue");
  EXPECT_KILN_ERROR(softplus_op({x, x}, {{"beta", 1.0}}), "2 input shapes", "takes 1 inputs (x)");
}

// The schema names its gradient op: the wrapper records a node whose backward runs it.
TEST_F(CustomOp, AVendorOpWithAGradientOpIsDifferentiable) {
  manual_seed(4);
  auto x = (randn({6}, float64) * 2).to(kMyops).requires_grad_();
  VendorOp softplus_op("myops.softplus");
  Tensor y = softplus_op({x}, {{"beta", 1.5}});
  ASSERT_TRUE(y.requires_grad());
  EXPECT_EQ(y.grad_fn()->name(), "myops.softplus");
  (y * y).sum().backward();
  auto xd = x.detach().to(Device("cpu:0"));
  auto expected = 2 * reference(xd, 1.5) * sigmoid(1.5 * xd);
  EXPECT_TRUE(allclose(x.grad().to(Device("cpu:0")), expected, 1e-12, 1e-14));
  auto f = [&](const std::vector<Tensor>& in) { return softplus_op({in[0]}, {{"beta", 1.5}}); };
  EXPECT_TRUE(gradcheck(f, {x.detach().slice(0, 0, 3).requires_grad_()}).ok);
  // Its backward op has no gradient of its own: with grad on, refused.
  VendorOp backward_op("myops.softplus_backward");
  EXPECT_KILN_ERROR(backward_op({x, x.detach()}, {{"beta", 1.0}}), "declares no \"gradient\"");
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
