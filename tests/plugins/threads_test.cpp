// The "kiln.threads.v1" extension of the CPU plugin: the pool's thread count at run
// time, through the C ABI.
#include <dirent.h>

#include <atomic>
#include <cstring>
#include <thread>
#include <vector>

#include "plugin_fixture.h"

namespace {

using namespace kiln::test;

const kiln_threads_api* threads() {
  const kiln_plugin_api* api = CpuPlugin::get().api;
  return static_cast<const kiln_threads_api*>(
      api->get_extension(api->context, KILN_EXTENSION_THREADS));
}

int threads_in_process() {
  int n = 0;
  if (DIR* dir = opendir("/proc/self/task")) {
    while (dirent* entry = readdir(dir)) n += entry->d_name[0] != '.';
    closedir(dir);
  }
  return n;
}

// A parallel elementwise op (above the pool's grain) must be exact at any count.
void expect_mul_is_exact() {
  const size_t n = (size_t{1} << 19) + 7;
  std::vector<float> a(n), b(n), y(n);
  for (size_t i = 0; i < n; ++i) {
    a[i] = static_cast<float>(i % 1000) * 0.5f;
    b[i] = static_cast<float>(i % 7) - 3.0f;
  }
  View va = view_of(a, KILN_DTYPE_FLOAT32, {static_cast<int64_t>(n)});
  View vb = view_of(b, KILN_DTYPE_FLOAT32, {static_cast<int64_t>(n)});
  View vy = view_of(y, KILN_DTYPE_FLOAT32, {static_cast<int64_t>(n)});
  ASSERT_TRUE(run_op("kiln.mul", {&va, &vb}, {&vy}).ok());
  for (size_t i = 0; i < n; ++i) ASSERT_EQ(y[i], a[i] * b[i]) << i;
}

struct RestoreCount {
  int32_t saved = threads()->get_num_threads(CpuPlugin::get().api->context);
  ~RestoreCount() { take(threads()->set_num_threads(CpuPlugin::get().api->context, saved)); }
};

TEST(ThreadPool, ExtensionSetsAndReportsTheCount) {
  const kiln_threads_api* t = threads();
  ASSERT_NE(t, nullptr) << "the CPU plugin must provide " KILN_EXTENSION_THREADS;
  ASSERT_GE(t->struct_size, sizeof(kiln_threads_api));
  void* context = CpuPlugin::get().api->context;
  RestoreCount restore;
  EXPECT_GE(restore.saved, 1);
  for (int32_t n : {1, 3, 2}) {
    KILN_ASSERT_OK(t->set_num_threads(context, n));
    EXPECT_EQ(t->get_num_threads(context), n);
    expect_mul_is_exact();
  }
  for (int32_t bad : {0, -4, 1025}) {
    Outcome outcome = take(t->set_num_threads(context, bad));
    EXPECT_EQ(outcome.code, KILN_STATUS_INVALID_ARGUMENT) << bad;
    EXPECT_NE(outcome.message.find(std::to_string(bad)), std::string::npos) << outcome.message;
    EXPECT_EQ(t->get_num_threads(context), 2) << "a refused count must change nothing";
  }
}

TEST(ThreadPool, GrowingStartsWorkersAndShrinkingKeepsThemIdle) {
  void* context = CpuPlugin::get().api->context;
  RestoreCount restore;
  const int before = threads_in_process();
  const int32_t larger = restore.saved + 4;
  KILN_ASSERT_OK(threads()->set_num_threads(context, larger));
  // One pool worker per thread added (OpenBLAS, told the same count, may add its own).
  const int after = threads_in_process();
  EXPECT_GE(after, before + 4);
  expect_mul_is_exact();
  KILN_ASSERT_OK(threads()->set_num_threads(context, 1));
  EXPECT_EQ(threads_in_process(), after) << "workers are kept for a later resize";
  expect_mul_is_exact();
  KILN_ASSERT_OK(threads()->set_num_threads(context, larger));
  EXPECT_EQ(threads_in_process(), after) << "growing back reuses them";
}

TEST(ThreadPool, ResizingWhileOtherThreadsRunOpsIsSafe) {
  void* context = CpuPlugin::get().api->context;
  RestoreCount restore;
  std::atomic<bool> stop{false};
  std::atomic<int> failures{0};
  std::vector<std::thread> workers;
  for (int w = 0; w < 2; ++w) {
    workers.emplace_back([&] {
      const size_t n = 300000;
      std::vector<float> a(n, 1.5f), b(n, 2.0f), y(n);
      View va = view_of(a, KILN_DTYPE_FLOAT32, {static_cast<int64_t>(n)});
      View vb = view_of(b, KILN_DTYPE_FLOAT32, {static_cast<int64_t>(n)});
      View vy = view_of(y, KILN_DTYPE_FLOAT32, {static_cast<int64_t>(n)});
      while (!stop.load()) {
        std::fill(y.begin(), y.end(), 0.0f);
        if (!run_op("kiln.add", {&va, &vb}, {&vy}).ok()) ++failures;
        for (size_t i = 0; i < n; i += 61)
          if (y[i] != 3.5f) ++failures;
      }
    });
  }
  for (int round = 0; round < 200; ++round)
    KILN_ASSERT_OK(threads()->set_num_threads(context, 1 + round % 5));
  stop = true;
  for (auto& w : workers) w.join();
  EXPECT_EQ(failures.load(), 0);
}

}  // namespace
