// The CPU fallback, with the minimal fixture plugin (KILN_PLUGIN_PATH=<good folder>):
// it provides only kiln.fill (and declines float64 fills), so every other op on
// minimal:0 runs on the CPU plugin, visibly: counted in fallback_report(), and an
// error under FallbackMode::Error.
#include <optional>

#include "runtime/runtime_test_util.h"

namespace kiln {
namespace {

using test::contains;

const Device kMinimal("minimal", 0);

#define REQUIRE_GOOD_PLUGIN_ENV() KILN_REQUIRE_ENV("KILN_PLUGIN_PATH", KILN_TEST_GOOD_PLUGIN_DIR)

TensorOptions on_minimal(DType dtype = float32) {
  return TensorOptions().dtype(dtype).device(kMinimal);
}

/// The report's row for (op, device), by value (reports are returned by value).
std::optional<FallbackEntry> find_entry(const FallbackReport& report, const std::string& op,
                                        const std::string& device) {
  for (const FallbackEntry& e : report.entries)
    if (e.op == op && e.device == device) return e;
  return std::nullopt;
}

/// Restores FallbackMode::Allow however the test ends.
struct AllowFallbacksAfterwards {
  ~AllowFallbacksAfterwards() { set_fallback_mode(FallbackMode::Allow); }
};

TEST(Fallback, MinimalPluginIsLoadedWithOneAcceleratorDevice) {
  REQUIRE_GOOD_PLUGIN_ENV();
  ASSERT_TRUE(test::has_plugin("minimal")) << test::describe_failures();
  for (const PluginInfo& p : loaded_plugins()) {
    if (p.name != "minimal") continue;
    EXPECT_TRUE(test::ends_with(p.path, "libkiln_minimal.so")) << p.path;
    ASSERT_EQ(p.devices.size(), 1u);
    EXPECT_EQ(p.devices[0].device, kMinimal);
    EXPECT_EQ(p.devices[0].kind, "accelerator");
    EXPECT_EQ(p.devices[0].multiprocessor_count, 1);
  }
  EXPECT_TRUE(plugin_load_failures().empty()) << test::describe_failures();
  EXPECT_EQ(fallback_mode(), FallbackMode::Allow);  // the default without KILN_FALLBACK
}

TEST(Fallback, OpsGiveCorrectResultsAndAreReported) {
  REQUIRE_GOOD_PLUGIN_ENV();
  auto a = from_vector<float>({1, 2, 3, 4}, {2, 2}, on_minimal());
  auto b = from_vector<float>({10, 20}, {2}, on_minimal());
  reset_fallback_report();
  auto sum_ab = a + b;
  auto product = matmul(a, a.t());
  auto total = product.sum();
  EXPECT_EQ(sum_ab.device(), kMinimal);
  EXPECT_EQ(product.device(), kMinimal);
  EXPECT_EQ(sum_ab.to_vector<float>(), (std::vector<float>{11, 22, 13, 24}));
  EXPECT_EQ(product.to_vector<float>(), (std::vector<float>{5, 11, 11, 25}));
  EXPECT_EQ(total.item<float>(), 52.0f);

  const FallbackReport report = fallback_report();
  ASSERT_FALSE(report.empty());
  for (const char* op : {"kiln.add", "kiln.matmul", "kiln.sum"}) {
    SCOPED_TRACE(op);
    const std::optional<FallbackEntry> e = find_entry(report, op, "minimal:0");
    ASSERT_TRUE(e.has_value()) << report.str();
    EXPECT_GE(e->calls, 1u);
    EXPECT_GT(e->bytes_moved, 0u);
    EXPECT_GE(e->seconds, 0.0);
  }
  // add moved at least its inputs to the host (4 + 2 float32 elements) and its output
  // back (4 elements).
  EXPECT_GE(find_entry(report, "kiln.add", "minimal:0")->bytes_moved, (4u + 2u + 4u) * 4u);
  const std::string table = report.str();
  EXPECT_TRUE(contains(table, "kiln.add")) << table;
  EXPECT_TRUE(contains(table, "minimal:0")) << table;
  // Nothing ran on cpu:0 by fallback; every entry is for minimal:0.
  for (const FallbackEntry& e : report.entries) EXPECT_EQ(e.device, "minimal:0") << e.op;
}

TEST(Fallback, CallsAreCounted) {
  REQUIRE_GOOD_PLUGIN_ENV();
  auto a = from_vector<float>({1, 2, 3}, {3}, on_minimal());
  reset_fallback_report();
  for (int i = 0; i < 3; ++i) (void)(a * a);
  const std::optional<FallbackEntry> e = find_entry(fallback_report(), "kiln.mul", "minimal:0");
  ASSERT_TRUE(e.has_value()) << fallback_report().str();
  EXPECT_EQ(e->calls, 3u);
}

TEST(Fallback, ResetClearsTheReport) {
  REQUIRE_GOOD_PLUGIN_ENV();
  auto a = from_vector<float>({1, 2}, {2}, on_minimal());
  (void)(a - a);
  EXPECT_FALSE(fallback_report().empty());
  reset_fallback_report();
  EXPECT_TRUE(fallback_report().empty());
  EXPECT_TRUE(contains(fallback_report().str(), "no CPU fallbacks")) << fallback_report().str();
}

TEST(Fallback, NativeAndFallbackOpsMix) {
  REQUIRE_GOOD_PLUGIN_ENV();
  reset_fallback_report();
  auto x = full({2, 3}, 1.5, on_minimal());  // kiln.fill: native on minimal
  x.select(1, 1).fill_(-2);                  // native, strided output
  EXPECT_EQ(x.to_vector<float>(), (std::vector<float>{1.5, -2, 1.5, 1.5, -2, 1.5}));
  EXPECT_FALSE(find_entry(fallback_report(), "kiln.fill", "minimal:0").has_value())
      << fallback_report().str();
  auto y = (x * 2).relu();  // fallbacks, fed by a native result
  EXPECT_EQ(y.to_vector<float>(), (std::vector<float>{3, 0, 3, 3, 0, 3}));
  EXPECT_TRUE(find_entry(fallback_report(), "kiln.relu", "minimal:0").has_value())
      << fallback_report().str();
}

TEST(Fallback, KernelThatDeclinesTheArgumentsFallsBack) {
  REQUIRE_GOOD_PLUGIN_ENV();
  // The fixture's kiln.fill declines float64 through its `supports` query.
  reset_fallback_report();
  auto d = zeros({4}, on_minimal(float64));
  d.fill_(0.1);
  EXPECT_EQ(d.to_vector<double>(), std::vector<double>(4, 0.1));
  const std::optional<FallbackEntry> e = find_entry(fallback_report(), "kiln.fill", "minimal:0");
  ASSERT_TRUE(e.has_value()) << fallback_report().str();
  EXPECT_GE(e->calls, 1u);
  // float32 fills stay native.
  reset_fallback_report();
  zeros({4}, on_minimal(float32)).fill_(0.5);
  EXPECT_FALSE(find_entry(fallback_report(), "kiln.fill", "minimal:0").has_value())
      << fallback_report().str();
}

TEST(Fallback, InPlaceOpOnAViewFallsBackIntoTheView) {
  REQUIRE_GOOD_PLUGIN_ENV();
  auto base = zeros({3, 4}, on_minimal());
  base.t()
      .slice(0, 1, 4, 2)
      .add_(from_vector<float>({1, 2, 3}, {3}, on_minimal()));  // columns 1, 3
  EXPECT_EQ(base.to_vector<float>(), (std::vector<float>{0, 1, 0, 1, 0, 2, 0, 2, 0, 3, 0, 3}));
}

TEST(Fallback, ErrorModeThrowsNamingTheOpAndTheDevice) {
  REQUIRE_GOOD_PLUGIN_ENV();
  AllowFallbacksAfterwards restore;
  auto a = from_vector<float>({1, 2, 3}, {3}, on_minimal());
  set_fallback_mode(FallbackMode::Error);
  EXPECT_EQ(fallback_mode(), FallbackMode::Error);
  EXPECT_KILN_ERROR(a + a, "kiln.add", "minimal:0");
  EXPECT_KILN_ERROR(a.exp(), "kiln.exp", "minimal:0");
  EXPECT_KILN_ERROR(a.add_(a), "kiln.add", "minimal:0");
  // Native kernels, host reads and cross-device copies need no fallback.
  auto f = full({3}, 4.0, on_minimal());
  EXPECT_EQ(f.to_vector<float>(), (std::vector<float>{4, 4, 4}));
  EXPECT_EQ(a.to_vector<float>(), (std::vector<float>{1, 2, 3}));  // unchanged by the failed add_
  EXPECT_EQ(a.to("cpu").to_vector<float>(), (std::vector<float>{1, 2, 3}));
  // cpu:0 has every kernel.
  auto c = a.to("cpu");
  EXPECT_EQ((c + c).to_vector<float>(), (std::vector<float>{2, 4, 6}));
  // Back to Allow: the same op works and is counted.
  set_fallback_mode(FallbackMode::Allow);
  reset_fallback_report();
  EXPECT_EQ((a + a).to_vector<float>(), (std::vector<float>{2, 4, 6}));
  EXPECT_TRUE(find_entry(fallback_report(), "kiln.add", "minimal:0").has_value());
}

TEST(Fallback, ErrorModeFailuresAreNotCounted) {
  REQUIRE_GOOD_PLUGIN_ENV();
  AllowFallbacksAfterwards restore;
  auto a = from_vector<float>({1, 2}, {2}, on_minimal());
  reset_fallback_report();
  set_fallback_mode(FallbackMode::Error);
  EXPECT_THROW((void)(a * a), kiln::Error);
  EXPECT_FALSE(find_entry(fallback_report(), "kiln.mul", "minimal:0").has_value())
      << fallback_report().str();
}

TEST(Fallback, MemoryStatsOfThePluginDevice) {
  REQUIRE_GOOD_PLUGIN_ENV();
  const MemoryStats before = memory_stats(kMinimal);
  {
    auto t = zeros({1000}, on_minimal());
    const MemoryStats during = memory_stats(kMinimal);
    EXPECT_GE(during.bytes_in_use, before.bytes_in_use + 4000);
    EXPECT_GE(during.bytes_reserved, during.bytes_in_use);
    EXPECT_GT(during.num_allocations, before.num_allocations);
  }
  synchronize(kMinimal);
  EXPECT_EQ(memory_stats(kMinimal).bytes_in_use, before.bytes_in_use);
  EXPECT_NO_THROW(empty_cache(kMinimal));  // optional in the ABI: absent is fine
}

TEST(Fallback, CrossDeviceCopiesBetweenPluginAndCpu) {
  REQUIRE_GOOD_PLUGIN_ENV();
  auto c = from_vector<double>({1.5, -2.5, 3.5}, {3}, TensorOptions().dtype(float64).device("cpu"));
  auto m = c.to(kMinimal);
  EXPECT_EQ(m.device(), kMinimal);
  EXPECT_EQ(m.dtype(), float64);
  auto dst = zeros({2, 3}, on_minimal(float32));
  dst.copy_(c);  // cpu float64 -> minimal float32, broadcast
  EXPECT_EQ(dst.to_vector<float>(), (std::vector<float>{1.5, -2.5, 3.5, 1.5, -2.5, 3.5}));
  auto back = zeros({3}, TensorOptions().device("cpu"));
  back.copy_(dst.select(0, 1));
  EXPECT_EQ(back.to_vector<float>(), (std::vector<float>{1.5, -2.5, 3.5}));
}

TEST(FallbackEnvError, KilnFallbackErrorSetsTheInitialMode) {
  KILN_REQUIRE_ENV("KILN_FALLBACK", "error");
  REQUIRE_GOOD_PLUGIN_ENV();
  EXPECT_EQ(fallback_mode(), FallbackMode::Error);
  auto a = from_vector<float>({1, 2}, {2}, on_minimal());
  EXPECT_KILN_ERROR(a + a, "kiln.add", "minimal:0");
  auto c = from_vector<float>({1, 2}, {2}, TensorOptions().device("cpu"));
  EXPECT_EQ((c + c).to_vector<float>(), (std::vector<float>{2, 4}));
  set_fallback_mode(FallbackMode::Allow);
  EXPECT_EQ((a + a).to_vector<float>(), (std::vector<float>{2, 4}));
}

}  // namespace
}  // namespace kiln
