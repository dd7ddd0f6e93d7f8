// kiln::profiler: what a profile of a small training step holds, its Chrome trace and
// key_averages, and that nothing is recorded when no profiler runs.
#include <nlohmann/json.hpp>

#include <map>
#include <set>
#include <thread>

#include "kiln/nn.h"
#include "kiln/optim.h"
#include "kiln/profiler.h"
#include "runtime/runtime_test_util.h"

namespace kiln {
namespace {

namespace prof = kiln::profiler;
using prof::Event;
using prof::Phase;

const prof::Event* find_scope(const std::vector<Event>& events, const std::string& name) {
  for (const Event& e : events)
    if (e.kind == Event::Kind::Scope && e.name == name) return &e;
  return nullptr;
}

// A training step of a two-layer MLP on `device`, the forward inside a scope.
void training_step(const Device& device) {
  manual_seed(3);
  auto net = std::make_shared<nn::Sequential>();
  net->push_back(std::make_shared<nn::Linear>(6, 5));
  net->push_back(std::make_shared<nn::ReLU>());
  net->push_back(std::make_shared<nn::Linear>(5, 1));
  net->to(device);
  optim::SGD sgd(net->parameters(), optim::SGDOptions(0.1).momentum(0.9));
  auto x = ones({4, 6}, TensorOptions().device(device));
  auto y = zeros({4, 1}, TensorOptions().device(device));
  Tensor loss;
  {
    auto scope = prof::record_function("forward");
    loss = nn::functional::mse_loss(net->forward(x), y);
  }
  loss.backward();
  sgd.step();
  synchronize(device);
}

TEST(Profiler, RecordsNothingWhenOff) {
  training_step(Device("cpu", 0));  // no profiler: nothing to record into
  { auto scope = prof::record_function("ignored"); }
  prof::Profiler p;
  p.stop();
  EXPECT_TRUE(p.events().empty()) << p.events().size() << " events, the first "
                                  << p.events().front().name;
  EXPECT_TRUE(p.memory_samples().empty());
  EXPECT_TRUE(p.key_averages().rows.empty());
}

TEST(Profiler, ForwardOpsNestInTheScopeAndBackwardOpsFollowIt) {
  prof::Profiler p;
  training_step(Device("cpu", 0));
  p.stop();
  const std::vector<Event>& events = p.events();
  const Event* forward = find_scope(events, "forward");
  ASSERT_NE(forward, nullptr);
  EXPECT_LE(forward->start_ns, forward->end_ns);
  std::map<Phase, int> ops;
  for (const Event& e : events) {
    if (e.kind != Event::Kind::Op) continue;
    ++ops[e.phase];
    EXPECT_LE(e.start_ns, e.end_ns) << e.name;
    EXPECT_EQ(e.device, "cpu:0") << e.name;
    EXPECT_FALSE(e.fallback) << e.name;
    EXPECT_TRUE(e.name.rfind("kiln.", 0) == 0) << e.name;
    const bool inside = e.start_ns >= forward->start_ns && e.end_ns <= forward->end_ns;
    if (e.phase == Phase::Forward && inside) {
      EXPECT_EQ(e.depth, 1) << e.name;
    }
    if (e.phase == Phase::Backward || e.phase == Phase::Optimizer) {
      EXPECT_GE(e.start_ns, forward->end_ns) << e.name << " (" << prof::phase_name(e.phase) << ")";
      EXPECT_EQ(e.depth, 0) << e.name;
    }
  }
  EXPECT_GT(ops[Phase::Backward], 0);
  EXPECT_GT(ops[Phase::Optimizer], 0);
  int forward_in_scope = 0;
  for (const Event& e : events)
    forward_in_scope += e.kind == Event::Kind::Op && e.phase == Phase::Forward &&
                        e.start_ns >= forward->start_ns && e.end_ns <= forward->end_ns;
  EXPECT_GE(forward_in_scope, 4) << "two linear layers, a relu and the loss";
  bool shapes = false;
  for (const Event& e : events)
    shapes = shapes || e.shapes.find("float32[4, 6]") != std::string::npos;
  EXPECT_TRUE(shapes) << "the input shapes of the first linear layer";
  // Outputs are allocated just before their op is dispatched: the bytes count for it.
  int64_t bytes = 0;
  for (const Event& e : events) bytes += e.bytes_allocated;
  EXPECT_GE(bytes, 4 * 5 * 4) << "at least the first layer's float32[4, 5] output";
}

TEST(Profiler, DeviceTimesAreOrderedOnTheDefaultStream) {
  prof::Profiler p;
  training_step(Device("cpu", 0));
  p.stop();
  std::vector<const Event*> timed;
  for (const Event& e : p.events())
    if (e.kind == Event::Kind::Op && e.device_start_ns >= 0) timed.push_back(&e);
  ASSERT_FALSE(timed.empty()) << "the CPU plugin times events (ABI 1.2 event_elapsed)";
  std::sort(timed.begin(), timed.end(),
            [](const Event* a, const Event* b) { return a->device_start_ns < b->device_start_ns; });
  for (size_t i = 0; i < timed.size(); ++i) {
    EXPECT_GE(timed[i]->device_start_ns, 0);
    EXPECT_GE(timed[i]->device_end_ns, timed[i]->device_start_ns) << timed[i]->name;
    if (i > 0) {
      EXPECT_GE(timed[i]->device_start_ns, timed[i - 1]->device_end_ns) << timed[i]->name;
    }
  }
}

TEST(Profiler, ChromeTraceIsValidJsonWithOneEventPerRecordAndMatchingFlows) {
  prof::Profiler p;
  training_step(Device("cpu", 0));
  p.stop();
  const nlohmann::json trace = nlohmann::json::parse(p.chrome_trace());
  ASSERT_TRUE(trace.contains("traceEvents"));
  size_t host = 0, device = 0, counters = 0;
  std::set<uint64_t> starts, finishes;
  for (const auto& e : trace["traceEvents"]) {
    const std::string ph = e.at("ph");
    if (ph == "X" && e.at("pid") == 0) ++host;
    if (ph == "X" && e.at("pid") != 0) ++device;
    if (ph == "C") ++counters;
    if (ph == "s") starts.insert(e.at("id").get<uint64_t>());
    if (ph == "f") finishes.insert(e.at("id").get<uint64_t>());
    if (ph == "X") {
      EXPECT_GE(e.at("dur").get<double>(), 0.0) << e.dump();
    }
  }
  EXPECT_EQ(host, p.events().size());
  EXPECT_GT(device, 0u);
  EXPECT_EQ(starts, finishes);
  EXPECT_EQ(starts.size(), device);
  EXPECT_EQ(counters, p.memory_samples().size());
  EXPECT_GT(counters, 0u);
}

TEST(Profiler, KeyAveragesAddUpToTheEvents) {
  prof::Profiler p;
  training_step(Device("cpu", 0));
  p.stop();
  double total_us = 0, device_us = 0;
  for (const Event& e : p.events()) {
    total_us += static_cast<double>(e.end_ns - e.start_ns) / 1000.0;
    if (e.device_start_ns >= 0)
      device_us += static_cast<double>(e.device_end_ns - e.device_start_ns) / 1000.0;
  }
  for (bool by_shapes : {false, true}) {
    const prof::KeyAverages averages = p.key_averages(by_shapes);
    int64_t calls = 0;
    double host = 0, device = 0, self = 0;
    for (const prof::KeyAverage& r : averages.rows) {
      calls += r.calls;
      host += r.host_total_us;
      device += r.device_total_us;
      self += r.host_self_us;
      EXPECT_LE(r.host_self_us, r.host_total_us + 1e-6) << r.name;
    }
    EXPECT_EQ(calls, static_cast<int64_t>(p.events().size()));
    EXPECT_NEAR(host, total_us, 1e-6 * total_us + 1e-3);
    EXPECT_NEAR(device, device_us, 1e-6 * device_us + 1e-3);
    EXPECT_LE(self, host);
  }
  const std::string table = p.key_averages().table(prof::SortBy::HostTotal, 5);
  EXPECT_NE(table.find("forward"), std::string::npos) << table;
  EXPECT_NE(table.find("Self host"), std::string::npos) << table;
}

TEST(Profiler, OneAtATimeAndTheExportSaysWhereItFailed) {
  prof::Profiler p;
  EXPECT_KILN_ERROR(prof::Profiler(), "already running");
  EXPECT_KILN_ERROR(p.events(), "stop()");
  p.stop();
  EXPECT_KILN_ERROR(p.export_chrome_trace("/nonexistent/dir/trace.json"), "/nonexistent/dir");
  prof::Profiler again;  // the first one stopped: a new one may start
  again.stop();
}

TEST(Profiler, ThreadsGetTracksOfTheirOwn) {
  prof::Profiler p;
  std::thread other([] { (ones({8}) * 2.0).sum().item<float>(); });
  other.join();
  (ones({8}) + 1.0).sum().item<float>();
  p.stop();
  std::set<int> threads;
  for (const Event& e : p.events()) threads.insert(e.thread);
  EXPECT_EQ(threads, (std::set<int>{0, 1}));
}

// KILN_PLUGIN_PATH=<good fixture folder>: the "minimal" plugin has kiln.fill only, so
// the step's other ops fall back to the CPU plugin.
TEST(ProfilerFallback, EveryOpOfTheFallbackReportIsMarkedInTheProfile) {
  KILN_REQUIRE_ENV("KILN_PLUGIN_PATH", std::string(KILN_TEST_GOOD_PLUGIN_DIR));
  reset_fallback_report();
  prof::Profiler p;
  training_step(Device("minimal", 0));
  p.stop();
  const FallbackReport report = fallback_report();
  ASSERT_FALSE(report.entries.empty());
  for (const FallbackEntry& f : report.entries) {
    int64_t marked = 0;
    for (const Event& e : p.events())
      marked += e.kind == Event::Kind::Op && e.name == f.op && e.device == f.device && e.fallback;
    EXPECT_EQ(marked, static_cast<int64_t>(f.calls)) << f.op << " on " << f.device;
  }
  int64_t fallbacks = 0;
  for (const prof::KeyAverage& r : p.key_averages().rows) fallbacks += r.fallbacks;
  int64_t reported = 0;
  for (const FallbackEntry& f : report.entries) reported += static_cast<int64_t>(f.calls);
  EXPECT_EQ(fallbacks, reported);
}

}  // namespace
}  // namespace kiln
