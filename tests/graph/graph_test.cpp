// kiln::Graph through the frontend's recorded path (kiln/graph.h): training steps
// replayed from a graph match eager steps bit for bit, the generator and optimizers
// advance between replays, the pool reuses a capture's temporaries, and everything a
// replay could not reproduce is refused with a kiln::Error that leaves the process
// usable. The Template.* tests run on the plugin template's "reference" device (a
// third-party plugin without graph support) and OtherDevice.* with two CPU devices:
// see tests/CMakeLists.txt.

#include <gtest/gtest.h>

#include <kiln/kiln.h>

#include <cmath>
#include <functional>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "support/kiln_test.h"

namespace {

using namespace kiln;
namespace F = kiln::nn::functional;

using test::contains;
const auto error_of = test::kiln_error_message;

/// Every tensor's values, for bit-exact comparisons.
std::vector<std::vector<float>> values_of(const std::vector<Tensor>& tensors) {
  std::vector<std::vector<float>> out;
  for (const Tensor& t : tensors) out.push_back(t.to(float32).to_vector<float>());
  return out;
}

std::vector<std::vector<float>> state_of(const optim::Optimizer& opt) {
  std::vector<std::vector<float>> out;
  for (const auto& [name, t] : opt.state_dict()) out.push_back(t.to(float32).to_vector<float>());
  return out;
}

std::shared_ptr<nn::Sequential> cnn(uint64_t seed) {
  manual_seed(seed);
  auto m = std::make_shared<nn::Sequential>();
  m->push_back<nn::Conv2d>(1, 4, 3, nn::Conv2dOptions().padding(1));
  m->push_back<nn::BatchNorm2d>(4);
  m->push_back<nn::ReLU>();
  m->push_back<nn::MaxPool2d>(2);
  m->push_back<nn::Flatten>();
  m->push_back<nn::Dropout>(0.25);
  m->push_back<nn::Linear>(4 * 4 * 4, 3);
  return m;
}

std::shared_ptr<nn::Sequential> mlp(uint64_t seed) {
  manual_seed(seed);
  auto m = std::make_shared<nn::Sequential>();
  m->push_back<nn::Linear>(12, 16);
  m->push_back<nn::Tanh>();
  m->push_back<nn::Linear>(16, 3);
  return m;
}

struct Batch {
  Tensor x, y;
};

std::vector<Batch> batches(int n, IntArrayRef x_shape) {
  manual_seed(99);
  std::vector<Batch> out;
  for (int i = 0; i < n; ++i) out.push_back({randn(x_shape), randint(3, {x_shape[0]})});
  return out;
}

Tensor train_step(nn::Module& model, optim::Optimizer& opt, const Tensor& x, const Tensor& y,
                  bool zero_grad_to_none = true) {
  opt.zero_grad(zero_grad_to_none);
  Tensor loss = F::cross_entropy(model.forward(x), y);
  loss.backward();
  opt.step();
  return loss;
}

struct Trace {
  std::vector<float> losses;
  std::vector<std::vector<float>> params, state;
};

constexpr int kWarmup = 2;
constexpr int kSteps = 6;

using MakeModel = std::function<std::shared_ptr<nn::Sequential>()>;
using MakeOpt = std::function<std::unique_ptr<optim::Optimizer>(nn::Module&)>;
using Schedule = std::function<void(optim::Optimizer&, int)>;

// kWarmup + kSteps eager steps over `data`.
Trace eager_run(const MakeModel& make, const MakeOpt& make_opt, const std::vector<Batch>& data,
                const Schedule& schedule) {
  auto model = make();
  auto opt = make_opt(*model);
  manual_seed(5);
  Trace r;
  for (int i = 0; i < kWarmup + kSteps; ++i) {
    schedule(*opt, i);
    Tensor loss = train_step(*model, *opt, data[i].x, data[i].y);
    if (i >= kWarmup) r.losses.push_back(loss.item<float>());
  }
  r.params = values_of(model->parameters());
  r.state = state_of(*opt);
  return r;
}

// kWarmup eager steps, a capture, then kSteps replays over the same data.
Trace graph_run(const MakeModel& make, const MakeOpt& make_opt, const std::vector<Batch>& data,
                const Schedule& schedule, size_t* calls = nullptr) {
  auto model = make();
  auto opt = make_opt(*model);
  manual_seed(5);
  Tensor x = zeros(data[0].x.shape()), y = zeros(data[0].y.shape(), DType::Int64);
  for (int i = 0; i < kWarmup; ++i) {
    schedule(*opt, i);
    x.copy_(data[i].x);
    y.copy_(data[i].y);
    train_step(*model, *opt, x, y);
  }
  opt->zero_grad();  // the grads come from the graph's pool
  Graph graph;
  Tensor loss;
  {
    GraphCapture capture(graph, x.device());
    loss = train_step(*model, *opt, x, y, /*zero_grad_to_none=*/false);
  }
  EXPECT_TRUE(graph.captured());
  if (calls) *calls = graph.num_calls();
  Trace r;
  for (int i = kWarmup; i < kWarmup + kSteps; ++i) {
    schedule(*opt, i);
    x.copy_(data[i].x);
    y.copy_(data[i].y);
    graph.replay();
    r.losses.push_back(loss.item<float>());
  }
  r.params = values_of(model->parameters());
  r.state = state_of(*opt);
  return r;
}

void expect_identical(const Trace& eager, const Trace& replayed) {
  EXPECT_EQ(eager.losses, replayed.losses);
  ASSERT_EQ(eager.params.size(), replayed.params.size());
  for (size_t i = 0; i < eager.params.size(); ++i)
    EXPECT_EQ(eager.params[i], replayed.params[i]) << "parameter " << i;
  ASSERT_EQ(eager.state.size(), replayed.state.size());
  for (size_t i = 0; i < eager.state.size(); ++i)
    EXPECT_EQ(eager.state[i], replayed.state[i]) << "optimizer state entry " << i;
}

const Schedule kConstantLr = [](optim::Optimizer&, int) {};

TEST(Graph, CnnWithAdamReplaysBitIdenticalToEagerSteps) {
  // Conv, batch norm (running stats), pooling, dropout (the generator), Adam (its step
  // count and bias corrections): every replay must be the eager step.
  const auto data = batches(kWarmup + kSteps, {6, 1, 8, 8});
  MakeModel make = [] { return cnn(3); };
  MakeOpt adam = [](nn::Module& m) {
    return std::make_unique<optim::Adam>(m.parameters(), optim::AdamOptions(1e-2));
  };
  const Trace eager = eager_run(make, adam, data, kConstantLr);
  size_t calls = 0;
  const Trace replayed = graph_run(make, adam, data, kConstantLr, &calls);
  expect_identical(eager, replayed);
  EXPECT_GT(calls, 20u);
  EXPECT_NE(eager.losses.front(), eager.losses.back());  // each replay was a new step
}

TEST(Graph, MlpWithSgdMomentumAndAChangingLearningRateReplaysBitIdentical) {
  // The learning rate changes between steps: each replay reads the current one.
  const auto data = batches(kWarmup + kSteps, {5, 12});
  MakeModel make = [] { return mlp(4); };
  MakeOpt sgd = [](nn::Module& m) {
    return std::make_unique<optim::SGD>(m.parameters(),
                                        optim::SGDOptions(0.1).momentum(0.9).weight_decay(1e-3));
  };
  Schedule decay = [](optim::Optimizer& o, int step) {
    o.param_groups()[0].options->lr(0.1 / (1 + step));
  };
  expect_identical(eager_run(make, sgd, data, decay), graph_run(make, sgd, data, decay));
}

TEST(Graph, PlainSgdAndAdamWReplayBitIdentical) {
  const auto data = batches(kWarmup + kSteps, {5, 12});
  MakeModel make = [] { return mlp(6); };
  Schedule decay = [](optim::Optimizer& o, int step) {
    o.param_groups()[0].options->lr(0.05 * (step % 2 ? 1.0 : 0.5));
  };
  MakeOpt sgd = [](nn::Module& m) {
    return std::make_unique<optim::SGD>(m.parameters(), optim::SGDOptions(0.05).weight_decay(0.01));
  };
  expect_identical(eager_run(make, sgd, data, decay), graph_run(make, sgd, data, decay));
  MakeOpt adamw = [](nn::Module& m) {
    return std::make_unique<optim::AdamW>(m.parameters(), optim::AdamWOptions(1e-2));
  };
  expect_identical(eager_run(make, adamw, data, decay), graph_run(make, adamw, data, decay));
}

TEST(Graph, TheGeneratorAdvancesOnEachReplay) {
  Tensor x = ones({64});
  Graph graph;
  Tensor y;
  const GeneratorState before = generator_state();
  {
    GraphCapture capture(graph, x.device());
    y = F::dropout(x, 0.5, true) + rand({64});
  }
  EXPECT_EQ(generator_state().offset, before.offset) << "a capture draws nothing";
  set_generator_state({11, 0});
  graph.replay();
  const std::vector<float> first = y.to_vector<float>();
  graph.replay();
  const std::vector<float> second = y.to_vector<float>();
  EXPECT_NE(first, second);
  // The same draws as eager calls from the same state.
  set_generator_state({11, 0});
  const std::vector<float> eager = (F::dropout(x, 0.5, true) + rand({64})).to_vector<float>();
  EXPECT_EQ(first, eager);
  EXPECT_EQ(generator_state().offset, 128u);
}

TEST(Graph, StaticInputsAreRefilledAndOutputsRewritten) {
  Tensor a = zeros({3}), b = zeros({3});
  Graph graph;
  Tensor out;
  {
    GraphCapture capture(graph, a.device());
    out = (a * 2.0 + b).relu().sum();
  }
  EXPECT_TRUE(graph.captured());
  EXPECT_EQ(graph.device(), a.device());
  a.copy_(from_vector<float>({1, -5, 3}));
  b.copy_(from_vector<float>({1, 1, 1}));
  graph.replay();
  EXPECT_EQ(out.item<float>(), 3.0f + 0.0f + 7.0f);
  a.copy_(from_vector<float>({0, 0, 1}));
  graph.replay();
  EXPECT_EQ(out.item<float>(), 1.0f + 1.0f + 3.0f);
}

TEST(Graph, HostValuesCreatedDuringTheCaptureAreUploadedOnEachReplay) {
  Tensor a = zeros({3});
  Graph graph;
  Tensor out;
  {
    GraphCapture capture(graph, a.device());
    out = a + from_vector<float>({1, 2, 3});
  }
  a.fill_(10.0);
  graph.replay();
  EXPECT_EQ(out.to_vector<float>(), (std::vector<float>{11, 12, 13}));
}

TEST(Graph, ThePoolReusesTemporariesAndCanBeShared) {
  Tensor x = ones({1024});
  GraphPool pool = graph_pool();
  Graph first, second;
  Tensor a, b;
  {
    GraphCapture capture(first, x.device(), pool);
    Tensor t = x;
    for (int i = 0; i < 10; ++i) t = t * 2.0;  // nine temporaries freed along the way
    a = t;
  }
  // 10 results of 4 KiB and 10 scalars; without reuse 20 blocks.
  EXPECT_LT(pool.bytes(), 6u * 4096u);
  const size_t after_first = pool.bytes();
  {
    GraphCapture capture(second, x.device(), first.pool());
    b = x + 1.0;  // fits in blocks the first capture freed
  }
  EXPECT_EQ(pool.bytes(), after_first);
  first.replay();
  second.replay();
  EXPECT_EQ(a.to_vector<float>(), std::vector<float>(1024, 1024.0f));
  EXPECT_EQ(b.to_vector<float>(), std::vector<float>(1024, 2.0f));
}

TEST(Graph, BlocksAGraphStillUsesAreNotReusedByALaterCapture) {
  // A tensor made in the first capture and dropped afterwards (grads set to none, say):
  // the first graph still writes its block, so a capture sharing the pool must not get it.
  Tensor x = ones({256});
  Graph first, second;
  Tensor out, y;
  {
    GraphCapture capture(first, x.device());
    out = x * 3.0;
  }
  out = Tensor();
  {
    GraphCapture capture(second, x.device(), first.pool());
    y = x + 1.0;
  }
  second.replay();
  first.replay();  // would overwrite y had y been given out's block
  EXPECT_EQ(y.to_vector<float>(), std::vector<float>(256, 2.0f));
  // Once the first graph is gone, its blocks are free again.
  const size_t bytes = first.pool().bytes();
  first.reset();
  Graph third;
  Tensor z;
  {
    GraphCapture capture(third, x.device(), second.pool());
    z = x - 1.0;
  }
  EXPECT_EQ(second.pool().bytes(), bytes);
  third.replay();
  EXPECT_EQ(z.to_vector<float>(), std::vector<float>(256, 0.0f));
}

TEST(Graph, AReplayCountsAsAnInPlaceWriteForAutograd) {
  // The replay writes `a` in place, as the eager add_ would have: a backward that saved
  // `a` before the replay must refuse, as it does after an eager in-place op.
  Tensor a = ones({3});
  Graph graph;
  {
    GraphCapture capture(graph, a.device());
    a.add_(1.0);
  }
  const Tensor b = randn({3}).requires_grad_();
  Tensor z = (a * b).sum();
  graph.replay();
  const std::string message = error_of([&] { z.backward(); });
  EXPECT_TRUE(contains(message, "modified")) << message;
  EXPECT_EQ(a.to_vector<float>(), std::vector<float>(3, 2.0f));
}

TEST(GraphErrors, OneGraphTakesOneCaptureAtATime) {
  Tensor x = ones({2});
  Graph graph;
  GraphCapture capture(graph, x.device());
  std::string message;
  std::thread other([&] { message = error_of([&] { GraphCapture again(graph, x.device()); }); });
  other.join();
  EXPECT_TRUE(contains(message, "another capture into this graph is open")) << message;
}

// -- what a capture refuses ------------------------------------------------------------

void expect_refused_and_usable(Graph& graph, const std::string& message, const std::string& what) {
  EXPECT_TRUE(contains(message, what)) << message;
  EXPECT_TRUE(contains(message, "inside a graph capture on cpu:0")) << message;
  EXPECT_FALSE(graph.captured());
  const std::string replay = error_of([&] { graph.replay(); });
  EXPECT_TRUE(contains(replay, "its capture failed")) << replay;
  // The process goes on: eager work and a new capture.
  EXPECT_FALSE(is_capturing());
  EXPECT_EQ((ones({2}) * 3.0).sum().item<float>(), 6.0f);
  Tensor in = ones({2}), out;
  {
    GraphCapture capture(graph, in.device());
    out = in + 1.0;
  }
  graph.replay();
  EXPECT_EQ(out.to_vector<float>(), (std::vector<float>{2, 2}));
}

TEST(GraphErrors, HostReadsAreRefusedNamingTheCall) {
  Tensor x = ones({4});
  const std::vector<std::pair<std::string, std::function<void()>>> cases = {
      {"item()", [&] { (void)(x * 2.0).sum().item<float>(); }},
      {"to_vector()", [&] { (void)(x * 2.0).to_vector<float>(); }},
      {"data_ptr()", [&] { (void)(x * 2.0).data_ptr<float>(); }},
      {"synchronize(cpu:0)", [&] { synchronize(Device("cpu")); }},
      {"GradScaler::scale", [&] { (void)amp::GradScaler().scale(x.sum()); }},
  };
  for (const auto& [what, f] : cases) {
    Graph graph;
    std::string message;
    try {
      GraphCapture capture(graph, x.device());
      message = error_of(f);
    } catch (...) {
      ADD_FAILURE() << "the capture's scope threw for " << what;
    }
    expect_refused_and_usable(graph, message, what);
  }
}

TEST(GraphErrors, AnErrorThatLeavesTheScopeDiscardsTheCapture) {
  Tensor x = ones({4});
  Graph graph;
  const std::string message = error_of([&] {
    GraphCapture capture(graph, x.device());
    (void)x.sum().item<float>();
  });
  expect_refused_and_usable(graph, message, "item()");
}

TEST(GraphErrors, OptimizersMustBeWarmedUpBeforeTheCapture) {
  auto model = mlp(1);
  const Tensor x = randn({2, 12}), y = from_vector<int64_t>({0, 2});
  std::vector<std::unique_ptr<optim::Optimizer>> opts;
  opts.push_back(std::make_unique<optim::Adam>(model->parameters(), optim::AdamOptions(1e-3)));
  opts.push_back(
      std::make_unique<optim::SGD>(model->parameters(), optim::SGDOptions(0.1).momentum(0.9)));
  opts.push_back(std::make_unique<optim::RMSprop>(model->parameters(), optim::RMSpropOptions(0.1)));
  const char* expected[] = {"Adam.step()", "SGD.step()", "RMSprop.step()"};
  for (size_t i = 0; i < opts.size(); ++i) {
    opts[i]->zero_grad();
    Graph graph;
    const std::string message = error_of([&] {
      GraphCapture capture(graph, x.device());
      train_step(*model, *opts[i], x, y, false);
    });
    expect_refused_and_usable(graph, message, expected[i]);
  }
}

TEST(GraphErrors, ReplayIsRefusedAfterAStaticTensorWasReplaced) {
  Tensor x = ones({4});
  Graph graph;
  Tensor out;
  {
    GraphCapture capture(graph, x.device());
    out = x * 2.0;
  }
  graph.replay();
  x = full({4}, 3.0);  // a new tensor, not a refill: the graph still reads the old one
  const std::string message = error_of([&] { graph.replay(); });
  EXPECT_TRUE(contains(message, "freed or reallocated since the capture")) << message;
}

TEST(GraphErrors, ReplayIsRefusedAfterTheCapturedOptimizerWasDestroyed) {
  auto model = mlp(2);
  const Tensor x = randn({2, 12}), y = from_vector<int64_t>({0, 2});
  auto opt = std::make_unique<optim::Adam>(model->parameters(), optim::AdamOptions(1e-3));
  train_step(*model, *opt, x, y);
  opt->zero_grad();
  Graph graph;
  {
    GraphCapture capture(graph, x.device());
    train_step(*model, *opt, x, y, false);
  }
  graph.replay();
  opt.reset();
  const std::string message = error_of([&] { graph.replay(); });
  EXPECT_TRUE(contains(message, "the Adam optimizer that this graph captured was destroyed"))
      << message;
}

TEST(GraphErrors, CapturesDoNotNestAndReplayIsRefusedInsideOne) {
  Tensor x = ones({2});
  Graph inner, outer, done;
  {
    GraphCapture capture(done, x.device());
    x.add_(1.0);
  }
  {
    GraphCapture capture(outer, x.device());
    EXPECT_TRUE(is_capturing());
    const std::string nested = error_of([&] { GraphCapture again(inner, x.device()); });
    EXPECT_TRUE(contains(nested, "captures do not nest")) << nested;
    const std::string replay = error_of([&] { done.replay(); });
    EXPECT_TRUE(contains(replay, "inside a graph capture")) << replay;
  }
  EXPECT_FALSE(is_capturing());
  const std::string never = error_of([&] { inner.replay(); });
  EXPECT_TRUE(contains(never, "holds no capture")) << never;
}

// -- two CPU devices (KILN_CPU_DEVICES=2) -------------------------------------------------

TEST(OtherDevice, WorkOnAnotherDeviceIsRefused) {
  if (device_count("cpu") < 2) GTEST_SKIP() << "needs KILN_CPU_DEVICES=2: run it through ctest";
  Tensor x = ones({4});
  Tensor elsewhere = ones({4}, TensorOptions().device("cpu:1"));
  {
    Graph graph;
    const std::string message = error_of([&] {
      GraphCapture capture(graph, x.device());
      (void)(elsewhere + 1.0);
    });
    EXPECT_TRUE(contains(message, "allocation")) << message;
    EXPECT_TRUE(contains(message, "cpu:1")) << message;
    EXPECT_FALSE(graph.captured());
  }
  {
    Graph graph;
    const std::string message = error_of([&] {
      GraphCapture capture(graph, x.device());
      x.copy_(elsewhere);
    });
    EXPECT_TRUE(contains(message, "cpu:1")) << message;
  }
  {
    // Collectives would be skipped by a replay: refused, naming the collective.
    distributed::Communicator comm({Device("cpu:0"), Device("cpu:1")});
    Tensor mine = ones({4}, TensorOptions().device("cpu:1"));
    Graph graph;
    const std::string message = error_of([&] {
      GraphCapture capture(graph, x.device());
      comm.all_reduce({x, mine}, {x, mine});
    });
    EXPECT_TRUE(contains(message, "all_reduce on")) << message;
    EXPECT_TRUE(contains(message, "collectives are not recorded")) << message;
  }
}

// -- a device's own graphs ("kiln.graphs.v1"), on the minimal fixture ------------------------
// The fixture records kiln.fill calls into its graphs and declines int32 fills while
// capturing (tests/fixtures/plugins/fixture_graphs.c); every other op falls back, which
// a capture refuses, so these graphs hold fills only.

TEST(DeviceGraphs, RunsOfCallsBecomeDeviceGraphsAroundADeclinedCall) {
  if (device_count("minimal") < 1) GTEST_SKIP() << "needs the minimal fixture: run via ctest";
  const Device dev("minimal", 0);
  Tensor a = zeros({4}, TensorOptions(float32).device(dev));
  Tensor b = zeros({2, 3}, TensorOptions(float16).device(dev));
  Tensor c = zeros({5}, TensorOptions(int32).device(dev));
  Tensor d = zeros({3}, TensorOptions(bfloat16).device(dev));
  Tensor e = zeros({2, 2}, TensorOptions(float32).device(dev));
  Graph graph;
  {
    GraphCapture capture(graph, dev);
    a.fill_(1.5);
    b.t().fill_(-2.0);  // a strided view
    c.fill_(7);         // declined by the fixture's recording: an ordinary call
    d.fill_(0.25);
    e.index({0}).fill_(3.0);
  }
  EXPECT_EQ(graph.num_calls(), 5u);
  EXPECT_EQ(graph.num_device_graphs(), 0u);  // recorded at the first replay
  auto values = [](const Tensor& t) { return t.to(float64).to_vector<double>(); };
  for (int round = 0; round < 3; ++round) {
    SCOPED_TRACE(round);
    for (Tensor* t : {&a, &b, &c, &d, &e}) t->fill_(-1.0);
    graph.replay();
    EXPECT_EQ(graph.num_device_graphs(), 2u);  // steps 1-2 and 4-5
    EXPECT_EQ(values(a), std::vector<double>(4, 1.5));
    EXPECT_EQ(values(b), std::vector<double>(6, -2.0));
    EXPECT_EQ(values(c), std::vector<double>(5, 7.0));
    EXPECT_EQ(values(d), std::vector<double>(3, 0.25));
    EXPECT_EQ(values(e), (std::vector<double>{3, 3, -1, -1}));
  }
  graph.reset();
  EXPECT_EQ(graph.num_device_graphs(), 0u);
}

TEST(DeviceGraphs, ALoneCallStaysAnOrdinaryCall) {
  if (device_count("minimal") < 1) GTEST_SKIP() << "needs the minimal fixture: run via ctest";
  const Device dev("minimal", 0);
  Tensor a = zeros({4}, TensorOptions(float32).device(dev));
  Graph graph;
  {
    GraphCapture capture(graph, dev);
    a.fill_(2.0);
  }
  a.fill_(0.0);
  graph.replay();
  EXPECT_EQ(graph.num_device_graphs(), 0u);
  EXPECT_EQ(a.to_vector<float>(), std::vector<float>(4, 2.0f));
}

TEST(DeviceGraphs, ACaptureThePluginFailsLeavesTheReplayCallByCall) {
  if (device_count("minimal") < 1) GTEST_SKIP() << "needs the minimal fixture: run via ctest";
  const Device dev("minimal", 0);
  Tensor a = zeros({3}, TensorOptions(float32).device(dev));
  Tensor b = zeros({3}, TensorOptions(float32).device(dev));
  Graph graph;
  {
    GraphCapture capture(graph, dev);
    a.fill_(std::nan(""));  // the fixture fails this call's recording (not a decline)
    b.fill_(4.0);
  }
  graph.replay();  // a warning, then the recorded path
  EXPECT_EQ(graph.num_device_graphs(), 0u);
  EXPECT_TRUE(a.isnan().all().item<bool>());
  EXPECT_EQ(b.to_vector<float>(), std::vector<float>(3, 4.0f));
}

// -- the plugin template's "reference" device (a plugin without graph support) -------------

TEST(Template, ARecordedComputationReplaysOnAThirdPartyPlugin) {
  if (device_count("reference") < 1) GTEST_SKIP() << "needs the template plugin: run via ctest";
  const TensorOptions on = TensorOptions().device("reference");
  Tensor x = zeros({5}, on), w = full({5}, 2.0, on), b = full({5}, -1.0, on);
  Graph graph;
  Tensor out;
  {
    GraphCapture capture(graph, x.device());
    out = (x * w + b).relu().sum();
  }
  const std::vector<std::vector<float>> inputs = {{0, 1, 2, 3, 4}, {-1, 5, 0.5f, 0, 2}};
  for (const auto& values : inputs) {
    x.copy_(from_vector<float>(values).to(x.device()));
    graph.replay();
    const float eager = (x * w + b).relu().sum().item<float>();
    EXPECT_EQ(out.item<float>(), eager);
  }
}

TEST(Template, ACpuFallbackIsRefusedNamingTheOp) {
  if (device_count("reference") < 1) GTEST_SKIP() << "needs the template plugin: run via ctest";
  Tensor x = ones({3}, TensorOptions().device("reference"));
  Graph graph;
  const std::string message = error_of([&] {
    GraphCapture capture(graph, x.device());
    (void)x.exp();
  });
  EXPECT_TRUE(contains(message, "kiln.exp inside a graph capture on reference:0")) << message;
  EXPECT_TRUE(contains(message, "CPU fallback")) << message;
  EXPECT_EQ(x.exp().sum().item<float>(), 3 * std::exp(1.0f));  // eager still falls back
}

}  // namespace
