// The device list of the conformance suite, and a check that the suite runs on the
// devices its CTest registration promises.
#include "ops/conformance.h"

#include <algorithm>

namespace kiln::test {

std::vector<Device> conformance_devices() {
  std::vector<Device> devices;
  for (const PluginInfo& plugin : loaded_plugins()) {
    if (plugin.devices.empty()) continue;
    devices.emplace_back(plugin.name, 0);
    if (plugin.name == "cpu" && plugin.devices.size() >= 2) devices.emplace_back("cpu", 1);
  }
  return devices;
}

std::string device_test_name(const ::testing::TestParamInfo<Device>& info) {
  std::string name = info.param.str();
  std::replace(name.begin(), name.end(), ':', '_');
  return name;
}

namespace {

bool has_device(const std::vector<Device>& devices, const Device& d) {
  return std::find(devices.begin(), devices.end(), d) != devices.end();
}

TEST(ConformanceSetup, RunsOnEveryExpectedDevice) {
  const auto devices = conformance_devices();
  EXPECT_TRUE(has_device(devices, Device("cpu", 0)));
  if (const std::string required = env_or("KILN_TEST_REQUIRE_DEVICE"); !required.empty()) {
    // A registration for one device (ops.cuda): where that device is absent, it shows
    // as skipped in CTest's summary, never as passed.
    if (!has_device(devices, Device(required))) {
      GTEST_SKIP() << "the device under test " << required << " is not available here";
    }
    return;
  }
  if (env_or("KILN_CPU_DEVICES") == "2") {
    EXPECT_TRUE(has_device(devices, Device("cpu", 1)));
  }
  if (contains(env_or("KILN_PLUGIN_PATH"), KILN_TEST_GOOD_PLUGIN_DIR)) {
    EXPECT_TRUE(has_device(devices, Device("minimal", 0)));
  } else {
    GTEST_SKIP() << "KILN_PLUGIN_PATH does not name " << KILN_TEST_GOOD_PLUGIN_DIR
                 << ": the fallback device minimal:0 is not tested (run through ctest)";
  }
}

}  // namespace
}  // namespace kiln::test
