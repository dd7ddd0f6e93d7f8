// Discovery with KILN_PLUGIN_PATH=<ABI fixture folder>: plugins of other ABI minor
// versions load and compute, as the compatibility promise says (api/README.md):
//
//   abi10       compiled against the frozen 1.0 header (tests/abi/v1.0)
//   newerminor  claims 1.(minor+1) with a larger table whose appended entry aborts
//               the process if called: the loader must use only what it knows
//   olderminor  claims 1.0 with a table of exactly the 1.0 size, followed by an
//               unreadable page: the loader must not read past the declared size
//
// The other major version (libkiln_badmajor.so, whose table past the version fields is
// poison) is refused in loader_failures_test.cpp.
#include <kiln/c_api.h>

#include "runtime/runtime_test_util.h"

namespace kiln {
namespace {

using test::contains;

const std::string kAbiDir = KILN_TEST_ABI_PLUGIN_DIR;

#define REQUIRE_ABI_PLUGIN_ENV() KILN_REQUIRE_ENV("KILN_PLUGIN_PATH", kAbiDir)

const PluginInfo* plugin(const std::string& name) {
  static const std::vector<PluginInfo> plugins = loaded_plugins();
  for (const PluginInfo& p : plugins)
    if (p.name == name) return &p;
  return nullptr;
}

TEST(AbiVersions, EveryMinorVersionLoads) {
  REQUIRE_ABI_PLUGIN_ENV();
  for (const char* name : {"abi10", "newerminor", "olderminor"}) {
    const PluginInfo* p = plugin(name);
    ASSERT_NE(p, nullptr) << name << " did not load:" << test::describe_failures();
    EXPECT_EQ(p->abi_major, static_cast<uint32_t>(KILN_ABI_MAJOR)) << name;
    ASSERT_EQ(p->devices.size(), 1u) << name;
    EXPECT_TRUE(contains(p->devices[0].name, name)) << p->devices[0].name;
  }
  EXPECT_EQ(plugin("abi10")->abi_minor, 0u);
  EXPECT_EQ(plugin("olderminor")->abi_minor, 0u);
  EXPECT_EQ(plugin("newerminor")->abi_minor, static_cast<uint32_t>(KILN_ABI_MINOR) + 1);
  for (const PluginLoadFailure& f : plugin_load_failures())
    EXPECT_FALSE(contains(f.path, kAbiDir)) << f.path << ": " << f.reason;
}

TEST(AbiVersions, DevicesOfEveryMinorVersionCompute) {
  REQUIRE_ABI_PLUGIN_ENV();
  for (const char* name : {"abi10", "newerminor", "olderminor"}) {
    SCOPED_TRACE(name);
    const Device device(name, 0);
    const MemoryStats before = memory_stats(device);
    {
      // kiln.fill runs in the plugin; kiln.add falls back to the CPU plugin.
      Tensor a = full({2, 3}, 1.5, TensorOptions().device(device));
      Tensor b = arange(0, 6, 1, TensorOptions(DType::Float32).device(device)).view({2, 3});
      Tensor sum = a + b;
      EXPECT_EQ(sum.device(), device);
      EXPECT_EQ(sum.to_vector<float>(), (std::vector<float>{1.5f, 2.5f, 3.5f, 4.5f, 5.5f, 6.5f}));
    }
    EXPECT_EQ(memory_stats(device).bytes_in_use, before.bytes_in_use)
        << "every tensor of the block was freed";
  }
}

}  // namespace
}  // namespace kiln
