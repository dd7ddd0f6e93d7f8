// The CPU plugin's "kiln.collectives.v1" table through the C ABI alone, over four
// logical devices (the CTest registration sets KILN_CPU_DEVICES=4): what a rank sees
// when the group agrees, when it disagrees, and when a rank never comes. The sweep
// over every collective, dtype and size against a host reference is the frontend's
// (tests/distributed), which reaches this table through kiln::distributed.
#include <chrono>
#include <cstring>
#include <functional>
#include <thread>

#include "kiln/sdk/half.h"
#include "plugin_fixture.h"

namespace kiln::test {
namespace {

struct Group {
  const kiln_collectives_api* api = nullptr;
  std::vector<kiln_device*> devices;
  std::vector<kiln_comm*> comms;

  Group(int n, double timeout) {
    CpuPlugin& p = CpuPlugin::get();
    api = static_cast<const kiln_collectives_api*>(
        p.api->get_extension(p.api->context, KILN_EXTENSION_COLLECTIVES));
    for (int i = 0; i < n; ++i) {
      kiln_device* d = nullptr;
      KILN_EXPECT_OK(p.api->device_open(p.api->context, i, &d));
      devices.push_back(d);
    }
    comms.assign(static_cast<size_t>(n), nullptr);
    KILN_EXPECT_OK(api->comm_init_group(p.api->context, devices.data(), n, timeout, comms.data()));
  }
  ~Group() {
    for (kiln_comm* c : comms) KILN_EXPECT_OK(api->comm_destroy(c));
  }

  // Runs rank_call(rank) on one thread per rank and returns each rank's outcome.
  std::vector<Outcome> run(const std::function<kiln_status*(int)>& rank_call) const {
    std::vector<Outcome> out(comms.size());
    std::vector<std::thread> threads;
    for (size_t r = 0; r < comms.size(); ++r)
      threads.emplace_back([&, r] { out[r] = take(rank_call(static_cast<int>(r))); });
    for (auto& t : threads) t.join();
    return out;
  }
};

bool contains(const std::string& s, const std::string& part) {
  return s.find(part) != std::string::npos;
}

TEST(CpuCollectives, PluginHasFourDevices) {
  int32_t count = 0;
  KILN_ASSERT_OK(CpuPlugin::get().api->device_count(CpuPlugin::get().api->context, &count));
  ASSERT_EQ(count, 4) << "this executable must run with KILN_CPU_DEVICES=4";
}

TEST(CpuCollectives, AllReduceAddsInRankOrderInPlaceAndOutOfPlace) {
  Group g(4, 30);
  // Values whose float sum depends on the order: 1e8, then three small ones.
  const size_t n = 1001;
  std::vector<std::vector<float>> send(4, std::vector<float>(n)), recv(4, std::vector<float>(n));
  for (size_t r = 0; r < 4; ++r)
    for (size_t i = 0; i < n; ++i) send[r][i] = r == 0 ? 1e8f : 1.0f + static_cast<float>(i % 7);
  auto out = g.run([&](int r) {
    return g.api->all_reduce(
        g.comms[static_cast<size_t>(r)], nullptr, send[static_cast<size_t>(r)].data(),
        recv[static_cast<size_t>(r)].data(), n, KILN_DTYPE_FLOAT32, KILN_REDUCE_SUM);
  });
  for (const auto& o : out) ASSERT_TRUE(o.ok()) << o.message;
  for (size_t i = 0; i < n; ++i) {
    float expected = send[0][i];
    for (size_t r = 1; r < 4; ++r) expected += send[r][i];  // rank order, in float
    for (size_t r = 0; r < 4; ++r)
      ASSERT_EQ(recv[r][i], expected) << "rank " << r << " element " << i;
  }
  // In place, max over ranks of (rank * 10 + i).
  std::vector<std::vector<int64_t>> data(4, std::vector<int64_t>(n));
  for (size_t r = 0; r < 4; ++r)
    for (size_t i = 0; i < n; ++i) data[r][i] = static_cast<int64_t>(r * 10 + i) * (i % 2 ? 1 : -1);
  out = g.run([&](int r) {
    auto& d = data[static_cast<size_t>(r)];
    return g.api->all_reduce(g.comms[static_cast<size_t>(r)], nullptr, d.data(), d.data(), n,
                             KILN_DTYPE_INT64, KILN_REDUCE_MAX);
  });
  for (const auto& o : out) ASSERT_TRUE(o.ok()) << o.message;
  for (size_t i = 0; i < n; ++i) {
    const int64_t expected = i % 2 ? static_cast<int64_t>(30 + i) : -static_cast<int64_t>(i);
    for (size_t r = 0; r < 4; ++r)
      ASSERT_EQ(data[r][i], expected) << "rank " << r << " element " << i;
  }
}

TEST(CpuCollectives, HalfPrecisionAccumulatesInFloatAndRoundsOnce) {
  Group g(4, 30);
  // 2048 + 1 + 1 + 1 in float16 step by step stays 2048 (spacing 2 there); summed in
  // float and rounded once it is 2051 -> 2052.
  std::vector<std::vector<sdk::float16>> d(4, std::vector<sdk::float16>(3));
  for (size_t r = 0; r < 4; ++r)
    for (auto& v : d[r]) v = sdk::float16(r == 0 ? 2048.0f : 1.0f);
  auto out = g.run([&](int r) {
    auto& v = d[static_cast<size_t>(r)];
    return g.api->all_reduce(g.comms[static_cast<size_t>(r)], nullptr, v.data(), v.data(), 3,
                             KILN_DTYPE_FLOAT16, KILN_REDUCE_SUM);
  });
  for (const auto& o : out) ASSERT_TRUE(o.ok()) << o.message;
  for (size_t r = 0; r < 4; ++r) EXPECT_EQ(static_cast<float>(d[r][1]), 2052.0f) << "rank " << r;
}

TEST(CpuCollectives, DisagreeingRanksAllFailAndTheGroupStaysUsable) {
  Group g(2, 30);
  std::vector<float> a(12, 1.0f), b(12, 2.0f);
  auto out = g.run([&](int r) {
    return g.api->all_reduce(g.comms[static_cast<size_t>(r)], nullptr, r ? b.data() : a.data(),
                             r ? b.data() : a.data(), r ? 12 : 10, KILN_DTYPE_FLOAT32,
                             KILN_REDUCE_SUM);
  });
  for (const auto& o : out) {
    EXPECT_EQ(o.code, KILN_STATUS_INVALID_ARGUMENT);
    EXPECT_TRUE(contains(o.message, "element count") && contains(o.message, "10") &&
                contains(o.message, "12") && contains(o.message, "cpu:1"))
        << o.message;
  }
  EXPECT_EQ(a[0], 1.0f) << "a refused collective must not write";

  // Different collectives on the two ranks.
  out = g.run([&](int r) {
    if (r == 0) return g.api->barrier(g.comms[0], nullptr);
    return g.api->all_reduce(g.comms[1], nullptr, b.data(), b.data(), 12, KILN_DTYPE_FLOAT32,
                             KILN_REDUCE_SUM);
  });
  for (const auto& o : out)
    EXPECT_TRUE(!o.ok() && contains(o.message, "barrier") && contains(o.message, "all_reduce"))
        << o.message;

  // One rank's bad argument (bool cannot be reduced) fails every rank at once.
  auto start = std::chrono::steady_clock::now();
  out = g.run([&](int r) {
    return g.api->all_reduce(g.comms[static_cast<size_t>(r)], nullptr, a.data(), a.data(), 4,
                             r ? KILN_DTYPE_BOOL : KILN_DTYPE_FLOAT32, KILN_REDUCE_SUM);
  });
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(10));
  for (const auto& o : out)
    EXPECT_TRUE(o.code == KILN_STATUS_UNSUPPORTED && contains(o.message, "cannot be reduced"))
        << o.code << ": " << o.message;

  // ... and afterwards the group works.
  out = g.run([&](int r) {
    auto& v = r ? b : a;
    return g.api->all_reduce(g.comms[static_cast<size_t>(r)], nullptr, v.data(), v.data(), 12,
                             KILN_DTYPE_FLOAT32, KILN_REDUCE_AVG);
  });
  for (const auto& o : out) EXPECT_TRUE(o.ok()) << o.message;
  EXPECT_EQ(a[11], 1.5f);
  EXPECT_EQ(b[11], 1.5f);
}

TEST(CpuCollectives, AMissingRankTimesOutEveryWaiterAndAbortsTheGroup) {
  Group g(3, 0.3);
  std::vector<float> v(8, 1.0f);
  auto start = std::chrono::steady_clock::now();
  // Ranks 0 and 1 arrive; rank 2 never does.
  std::vector<Outcome> out(2);
  std::thread t0([&] {
    out[0] = take(g.api->all_reduce(g.comms[0], nullptr, v.data(), v.data(), 8, KILN_DTYPE_FLOAT32,
                                    KILN_REDUCE_SUM));
  });
  std::thread t1([&] { out[1] = take(g.api->barrier(g.comms[1], nullptr)); });
  t0.join();
  t1.join();
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  EXPECT_LT(seconds, 5.0);
  for (const auto& o : out) {
    EXPECT_EQ(o.code, KILN_STATUS_DEVICE_ERROR);
    EXPECT_TRUE(contains(o.message, "timed out") && contains(o.message, "2 (cpu:2)") &&
                contains(o.message, "[cpu:0, cpu:1, cpu:2]"))
        << o.message;
  }
  // The latecomer, and everyone after, fails at once: the group is aborted.
  start = std::chrono::steady_clock::now();
  const Outcome late = take(g.api->barrier(g.comms[2], nullptr));
  EXPECT_EQ(late.code, KILN_STATUS_DEVICE_ERROR);
  EXPECT_TRUE(contains(late.message, "aborted")) << late.message;
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::milliseconds(200));
}

TEST(CpuCollectives, BroadcastGatherScatterInPlace) {
  Group g(3, 30);
  const size_t n = 5;
  // broadcast from rank 1; non-roots pass no send buffer.
  std::vector<std::vector<int32_t>> b(3, std::vector<int32_t>(n, -1));
  for (size_t i = 0; i < n; ++i) b[1][i] = static_cast<int32_t>(100 + i);
  auto out = g.run([&](int r) {
    auto& v = b[static_cast<size_t>(r)];
    return g.api->broadcast(g.comms[static_cast<size_t>(r)], nullptr, r == 1 ? v.data() : nullptr,
                            v.data(), n, KILN_DTYPE_INT32, 1);
  });
  for (const auto& o : out) ASSERT_TRUE(o.ok()) << o.message;
  for (size_t r = 0; r < 3; ++r) EXPECT_EQ(b[r], b[1]);

  // all_gather in place: rank r's input is slot r of its output.
  std::vector<std::vector<double>> gathered(3, std::vector<double>(3 * n, 0.0));
  for (size_t r = 0; r < 3; ++r)
    for (size_t i = 0; i < n; ++i)
      gathered[r][r * n + i] = static_cast<double>(r) + 0.25 * static_cast<double>(i);
  out = g.run([&](int r) {
    auto& v = gathered[static_cast<size_t>(r)];
    return g.api->all_gather(g.comms[static_cast<size_t>(r)], nullptr,
                             v.data() + static_cast<size_t>(r) * n, v.data(), n,
                             KILN_DTYPE_FLOAT64);
  });
  for (const auto& o : out) ASSERT_TRUE(o.ok()) << o.message;
  for (size_t r = 0; r < 3; ++r)
    for (size_t k = 0; k < 3; ++k)
      for (size_t i = 0; i < n; ++i)
        EXPECT_EQ(gathered[r][k * n + i], static_cast<double>(k) + 0.25 * static_cast<double>(i));

  // reduce_scatter in place: rank r's output is slot r of its input.
  std::vector<std::vector<float>> rs(3, std::vector<float>(3 * n));
  for (size_t r = 0; r < 3; ++r)
    for (size_t i = 0; i < 3 * n; ++i) rs[r][i] = static_cast<float>(r + 1) * static_cast<float>(i);
  out = g.run([&](int r) {
    auto& v = rs[static_cast<size_t>(r)];
    return g.api->reduce_scatter(g.comms[static_cast<size_t>(r)], nullptr, v.data(),
                                 v.data() + static_cast<size_t>(r) * n, n, KILN_DTYPE_FLOAT32,
                                 KILN_REDUCE_SUM);
  });
  for (const auto& o : out) ASSERT_TRUE(o.ok()) << o.message;
  for (size_t r = 0; r < 3; ++r)
    for (size_t i = 0; i < n; ++i)
      EXPECT_EQ(rs[r][r * n + i], 6.0f * static_cast<float>(r * n + i)) << "rank " << r;
}

TEST(CpuCollectives, GroupCreationRefusesBadArguments) {
  CpuPlugin& p = CpuPlugin::get();
  auto* api = static_cast<const kiln_collectives_api*>(
      p.api->get_extension(p.api->context, KILN_EXTENSION_COLLECTIVES));
  kiln_device* d0 = nullptr;
  KILN_ASSERT_OK(p.api->device_open(p.api->context, 0, &d0));
  kiln_device* twice[2] = {d0, d0};
  kiln_comm* comms[2] = {nullptr, nullptr};
  Outcome o = take(api->comm_init_group(p.api->context, twice, 2, 10, comms));
  EXPECT_EQ(o.code, KILN_STATUS_INVALID_ARGUMENT);
  EXPECT_TRUE(contains(o.message, "twice")) << o.message;
  o = take(api->comm_init_group(p.api->context, twice, 1, 0, comms));
  EXPECT_TRUE(contains(o.message, "timeout")) << o.message;
  o = take(
      api->all_reduce(nullptr, nullptr, nullptr, nullptr, 0, KILN_DTYPE_FLOAT32, KILN_REDUCE_SUM));
  EXPECT_EQ(o.code, KILN_STATUS_INVALID_ARGUMENT);
}

}  // namespace
}  // namespace kiln::test
