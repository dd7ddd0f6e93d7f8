// kiln::set_num_threads / get_num_threads: the CPU plugin's thread count at run time.
#include <gtest/gtest.h>

#include <kiln/kiln.h>

#include <atomic>
#include <string>
#include <thread>
#include <vector>

namespace {

struct RestoreThreads {
  int saved = kiln::get_num_threads();
  ~RestoreThreads() { kiln::set_num_threads(saved); }
};

// A matmul and a sum large enough to be split over the pool, against float64.
void expect_ops_match_float64() {
  kiln::manual_seed(5);
  auto a = kiln::randn({256, 300}), b = kiln::randn({300, 128});
  auto c = kiln::matmul(a, b).to(kiln::float64);
  auto reference = kiln::matmul(a.to(kiln::float64), b.to(kiln::float64));
  EXPECT_LT((c - reference).abs().max().item<double>(), 1e-3);
  auto x = kiln::rand({1 << 20});
  EXPECT_NEAR(x.sum().item<double>(), x.to(kiln::float64).sum().item<double>(), 1.0);
}

TEST(RuntimeInfo, SetNumThreadsChangesTheCpuPluginsCount) {
  RestoreThreads restore;
  EXPECT_GE(restore.saved, 1);
  for (int n : {1, 3, 2}) {
    kiln::set_num_threads(n);
    EXPECT_EQ(kiln::get_num_threads(), n);
    expect_ops_match_float64();
  }
}

TEST(RuntimeInfo, SetNumThreadsRefusesCountsOutOfRange) {
  RestoreThreads restore;
  kiln::set_num_threads(2);
  for (int bad : {0, -1, 1025}) {
    try {
      kiln::set_num_threads(bad);
      FAIL() << "expected kiln::Error for " << bad;
    } catch (const kiln::Error& e) {
      const std::string message = e.what();
      EXPECT_NE(message.find("set_num_threads"), std::string::npos) << message;
      EXPECT_NE(message.find(std::to_string(bad)), std::string::npos) << message;
    }
    EXPECT_EQ(kiln::get_num_threads(), 2);
  }
}

TEST(Concurrency, SetNumThreadsWhileOtherThreadsRunOps) {
  RestoreThreads restore;
  std::atomic<bool> stop{false};
  std::atomic<int> failures{0};
  std::vector<std::thread> workers;
  for (int w = 0; w < 2; ++w) {
    workers.emplace_back([&, w] {
      const kiln::Device device("cpu", w % kiln::device_count("cpu"));
      auto a = kiln::ones({200, 200}, device), b = kiln::full({200, 200}, 2.0, device);
      while (!stop.load()) {
        auto c = kiln::matmul(a, b) + 1;  // every element 401
        if (c.min().item<float>() != 401.0f || c.max().item<float>() != 401.0f) ++failures;
      }
    });
  }
  for (int round = 0; round < 100; ++round) kiln::set_num_threads(1 + round % 4);
  stop = true;
  for (auto& w : workers) w.join();
  EXPECT_EQ(failures.load(), 0);
}

}  // namespace
