// Device names, and what the registry reports in the default environment (no
// KILN_* variables set: the CPU plugin from the folder beside libkiln).
#include <kiln/c_api.h>

#include <algorithm>
#include <filesystem>
#include <sstream>

#include "runtime/runtime_test_util.h"

namespace kiln {
namespace {

using test::contains;

TEST(DeviceSyntax, NameAndIndex) {
  Device cpu("cpu");
  EXPECT_EQ(cpu.backend(), "cpu");
  EXPECT_EQ(cpu.index(), 0);
  EXPECT_EQ(cpu.str(), "cpu:0");
  Device cuda1("cuda:1");
  EXPECT_EQ(cuda1.backend(), "cuda");
  EXPECT_EQ(cuda1.index(), 1);
  EXPECT_EQ(cuda1.str(), "cuda:1");
  Device acme("acme_2:13");
  EXPECT_EQ(acme.backend(), "acme_2");
  EXPECT_EQ(acme.index(), 13);
  Device built("cpu", 2);
  EXPECT_EQ(built.str(), "cpu:2");
  EXPECT_EQ(Device(), Device("cpu:0"));
  EXPECT_EQ(Device("cpu"), Device("cpu", 0));
  EXPECT_FALSE(Device("cpu:1") == Device("cpu:0"));
  EXPECT_FALSE(Device("cuda:0") == Device("cpu:0"));
  Device from_view(std::string_view("cuda:3"));
  EXPECT_EQ(from_view.index(), 3);
  std::ostringstream out;
  out << Device("cuda:1");
  EXPECT_EQ(out.str(), "cuda:1");
}

TEST(DeviceSyntax, BadSpellingsThrowNamingTheSpec) {
  for (const char* spec : {"cuda:", "cuda:-1", ":0", "CUDA", "cuda:x", "", "cuda:1:2", "cu da",
                           "cuda:1x", "cuda::1", " cuda", "cuda:+1"}) {
    SCOPED_TRACE(std::string("'") + spec + "'");
    EXPECT_KILN_ERROR(Device{spec});
    if (*spec) {
      EXPECT_KILN_ERROR(Device{spec}, spec);
    }
  }
  EXPECT_KILN_ERROR(Device("cpu", -1), "-1");
  EXPECT_KILN_ERROR(Device("CPU", 0), "CPU");
  EXPECT_KILN_ERROR(Device("", 0));
}

TEST(DeviceSyntax, ANameIsOnlyCheckedWhenUsed) {
  // Constructing names an unknown backend or index without error...
  Device nosuch("nosuch:0");
  Device far("cpu:99");
  EXPECT_EQ(nosuch.backend(), "nosuch");
  // ...using it throws, listing what is available.
  EXPECT_KILN_ERROR(zeros({2}, TensorOptions().device(nosuch)), "nosuch", "cpu");
  EXPECT_KILN_ERROR(zeros({2}, TensorOptions().device(far)), "99");
  EXPECT_KILN_ERROR(zeros({2}).to(far), "99");
  EXPECT_KILN_ERROR(set_default_device(nosuch), "nosuch");
  EXPECT_EQ(default_device(), Device("cpu", 0));  // unchanged by the failed call
  EXPECT_EQ(zeros({1}).device(), Device("cpu", 0));
}

TEST(DeviceUse, DefaultDeviceIsCpu0WithoutKilnBackend) {
  KILN_REQUIRE_ENV("KILN_BACKEND", "");
  EXPECT_EQ(default_device(), Device("cpu", 0));
  EXPECT_EQ(TensorOptions().device(), Device("cpu", 0));
  EXPECT_NO_THROW(synchronize(Device("cpu", 0)));
  EXPECT_KILN_ERROR(synchronize(Device("nosuch", 0)), "nosuch");
}

TEST(DeviceUse, SetDefaultDeviceOverridesAndIsValidated) {
  set_default_device(Device("cpu", 0));
  EXPECT_EQ(default_device(), Device("cpu", 0));
  EXPECT_KILN_ERROR(set_default_device(Device("cpu", 42)), "42");
  EXPECT_EQ(default_device(), Device("cpu", 0));
}

TEST(RuntimeInfo, Versions) {
  EXPECT_EQ(abi_version(), std::to_string(KILN_ABI_MAJOR) + "." + std::to_string(KILN_ABI_MINOR));
  const std::string v = version();
  EXPECT_FALSE(v.empty());
  EXPECT_EQ(std::count(v.begin(), v.end(), '.'), 2) << v;
}

TEST(RuntimeInfo, CpuPluginIsLoadedFromTheDefaultFolder) {
  KILN_REQUIRE_ENV("KILN_PLUGIN_PATH", "");
  const auto plugins = loaded_plugins();
  ASSERT_FALSE(plugins.empty()) << test::describe_failures();
  const PluginInfo* cpu = nullptr;
  for (const PluginInfo& p : plugins)
    if (p.name == "cpu") cpu = &p;
  ASSERT_NE(cpu, nullptr) << test::describe_failures();
  EXPECT_TRUE(test::ends_with(cpu->path, "libkiln_cpu.so")) << cpu->path;
  EXPECT_EQ(cpu->abi_major, static_cast<uint32_t>(KILN_ABI_MAJOR));
  EXPECT_FALSE(cpu->version.empty());
  ASSERT_GE(cpu->devices.size(), 1u);
  for (size_t i = 0; i < cpu->devices.size(); ++i) {
    EXPECT_EQ(cpu->devices[i].device, Device("cpu", static_cast<int>(i)));
    EXPECT_EQ(cpu->devices[i].kind, "cpu");
    EXPECT_FALSE(cpu->devices[i].name.empty());
  }
  // The CPU plugin was found in a folder of the search path.
  const auto path = plugin_search_path();
  ASSERT_FALSE(path.empty());
  const std::filesystem::path folder = std::filesystem::path(cpu->path).parent_path();
  bool on_path = false;
  for (const std::string& entry : path) {
    std::error_code ec;
    on_path = on_path || std::filesystem::equivalent(folder, entry, ec);
  }
  EXPECT_TRUE(on_path) << cpu->path << " is not in a folder of the search path";
  // Nothing else is in the default folder that fails to load.
  EXPECT_TRUE(plugin_load_failures().empty()) << test::describe_failures();
}

TEST(RuntimeInfo, NoFallbacksOnCpu) {
  reset_fallback_report();
  auto x = randn({4, 4});
  auto y = (matmul(x, x.t()) + 1).relu().sum({0}) / 3;
  (void)cat({y, y}).argmax().item<int64_t>();
  const FallbackReport report = fallback_report();
  EXPECT_TRUE(report.empty()) << report.str();
  EXPECT_TRUE(contains(report.str(), "no CPU fallbacks")) << report.str();
}

}  // namespace
}  // namespace kiln
