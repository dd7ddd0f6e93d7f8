// Kiln used from several threads at once, as a host application does: ops dispatched
// concurrently (first-use kernel lookups included), two devices trained from two
// threads, and large ops sharing the CPU plugin's pool. Registered with the label
// "threads": CI also runs these under ThreadSanitizer (scripts/test.sh), where a data
// race fails them even when the values come out right.
#include <atomic>
#include <map>
#include <thread>

#include "kiln/nn.h"
#include "kiln/optim.h"
#include "kiln/profiler.h"
#include "runtime/runtime_test_util.h"

namespace kiln {
namespace {

/// Runs `body(t)` on `n` threads at once and joins them; a thread's kiln::Error or
/// failed expectation is reported by the test as usual.
template <class Body>
void on_threads(int n, Body body) {
  std::atomic<int> ready{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < n; ++t)
    threads.emplace_back([&, t] {
      ready.fetch_add(1);
      while (ready.load() < n) std::this_thread::yield();  // start together
      body(t);
    });
  for (std::thread& th : threads) th.join();
}

TEST(Concurrency, OpsDispatchedFromManyThreadsAgreeWithOneThread) {
  // Ops not used before in this process, so that the threads race to resolve the
  // same kernel slots too.
  const Device cpu("cpu", 0);
  auto compute = [&](int t) {
    auto x = from_vector<double>({1.0 + t, 2.0, 3.0, 4.0, 5.0, 6.0}, {2, 3},
                                 TensorOptions().device(cpu));
    auto y = (x.exp().log() * 2.0 + 1.0).tanh().sigmoid();
    return y.matmul(x.transpose(0, 1)).sum().item<double>();
  };
  std::vector<double> expected(4), got(4);
  on_threads(4, [&](int t) {
    double last = 0;
    for (int i = 0; i < 50; ++i) last = compute(t);
    got[static_cast<size_t>(t)] = last;
  });
  for (int t = 0; t < 4; ++t) expected[static_cast<size_t>(t)] = compute(t);
  EXPECT_EQ(got, expected);
}

TEST(Concurrency, ProfilingWhileFourThreadsDispatchRecordsEveryOp) {
  const Device cpu("cpu", 0);
  auto x = ones({16}, TensorOptions().device(cpu));
  (x * 2.0).relu();  // resolve the kernels first: every op below is one event
  profiler::Profiler p;
  on_threads(4, [&](int t) {
    for (int i = 0; i < 100; ++i) {
      auto scope = profiler::record_function("step " + std::to_string(t));
      (x * 2.0).relu();
    }
  });
  synchronize(cpu);
  p.stop();
  std::map<int, int> ops, scopes;
  for (const profiler::Event& e : p.events()) {
    (e.kind == profiler::Event::Kind::Op ? ops : scopes)[e.thread] += 1;
    EXPECT_LE(e.start_ns, e.end_ns) << e.name;
  }
  ASSERT_EQ(ops.size(), 4u);
  for (const auto& [thread, n] : scopes) EXPECT_EQ(n, 100) << "thread " << thread;
  // Each step: a multiplication by a scalar (its 0-d operand is made and filled) and relu.
  for (const auto& [thread, n] : ops) EXPECT_GE(n, 200) << "thread " << thread;
}

std::shared_ptr<nn::Module> small_mlp() {
  auto net = std::make_shared<nn::Sequential>();
  net->push_back(std::make_shared<nn::Linear>(8, 16));
  net->push_back(std::make_shared<nn::ReLU>());
  net->push_back(std::make_shared<nn::Linear>(16, 1));
  return net;
}

TEST(Concurrency, TwoDevicesTrainedFromTwoThreadsMatchTheSameRunOnOne) {
  ASSERT_GE(device_count("cpu"), 2) << "runtime.concurrency sets KILN_CPU_DEVICES=2";
  manual_seed(7);
  const auto initial = small_mlp();
  std::vector<float> xs(64 * 8), ys(64);
  for (size_t i = 0; i < xs.size(); ++i) xs[i] = static_cast<float>((i * 37) % 17) / 17.0f - 0.5f;
  for (size_t i = 0; i < ys.size(); ++i) ys[i] = static_cast<float>(i % 5) / 5.0f;

  // Each thread trains its own copy on its own device; nothing random inside.
  auto train = [&](const Device& device, std::vector<float>& losses) {
    auto net = initial->clone();
    net->to(device);
    optim::SGD sgd(net->parameters(), optim::SGDOptions(0.1).momentum(0.9));
    auto x = from_vector<float>(xs, {64, 8}, TensorOptions().device(device));
    auto y = from_vector<float>(ys, {64, 1}, TensorOptions().device(device));
    for (int step = 0; step < 30; ++step) {
      sgd.zero_grad();
      auto loss = nn::functional::mse_loss(net->forward(x), y);
      loss.backward();
      sgd.step();
      losses.push_back(loss.item<float>());
    }
  };
  std::vector<float> on0, on1, alone;
  on_threads(2, [&](int t) { train(Device("cpu", t), t == 0 ? on0 : on1); });
  train(Device("cpu", 0), alone);
  EXPECT_LT(alone.back(), alone.front() * 0.5f) << "the model did not learn";
  EXPECT_EQ(on0, alone);
  EXPECT_EQ(on1, alone);
}

TEST(Concurrency, LargeOpsFromTwoThreadsShareThePool) {
  const Device cpu("cpu", 0);
  std::vector<float> a(192 * 192);
  for (size_t i = 0; i < a.size(); ++i) a[i] = static_cast<float>(i % 13) - 6.0f;
  auto m = from_vector<float>(a, {192, 192}, TensorOptions().device(cpu));
  const double reference = m.matmul(m).relu().sum().item<double>();
  std::vector<double> results(2);
  on_threads(2, [&](int t) {
    double r = 0;
    for (int i = 0; i < 10; ++i) r = m.matmul(m).relu().sum().item<double>();
    results[static_cast<size_t>(t)] = r;
  });
  EXPECT_EQ(results[0], reference);
  EXPECT_EQ(results[1], reference);
}

}  // namespace
}  // namespace kiln
