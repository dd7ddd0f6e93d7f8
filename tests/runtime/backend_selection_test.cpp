// KILN_BACKEND: the default device, and the errors for a backend that is not loaded
// or an index out of range. Each group runs as its own CTest test with its own
// environment (tests/CMakeLists.txt).
#include <cstdlib>
#include <string>

#include "runtime/runtime_test_util.h"

namespace kiln {
namespace {

using test::contains;

TEST(UnknownBackend, DefaultDeviceThrowsNamingItAndListingLoadedPlugins) {
  KILN_REQUIRE_ENV("KILN_BACKEND", "nosuch");
  const std::string message = test::kiln_error_message([] { (void)default_device(); });
  EXPECT_TRUE(contains(message, "nosuch")) << message;
  EXPECT_TRUE(contains(message, "cpu")) << "lists the loaded plugins: " << message;
  EXPECT_TRUE(contains(message, "KILN_BACKEND")) << "says where the name came from: " << message;
  // Every default-device creation reports the same problem...
  EXPECT_KILN_ERROR(zeros({2}), "nosuch");
  EXPECT_KILN_ERROR(TensorOptions().device(), "nosuch");
  // ...while explicitly placed tensors work.
  auto x = ones({2}, TensorOptions().device("cpu:0"));
  EXPECT_EQ((x + x).to_vector<float>(), (std::vector<float>{2, 2}));
  // set_default_device overrides KILN_BACKEND.
  set_default_device(Device("cpu", 0));
  EXPECT_EQ(default_device(), Device("cpu", 0));
  EXPECT_EQ(zeros({2}).device(), Device("cpu", 0));
}

TEST(BackendIndexOutOfRange, ErrorNamesTheIndexAndTheDeviceCount) {
  KILN_REQUIRE_ENV("KILN_BACKEND", "cpu:7");
  KILN_REQUIRE_ENV("KILN_CPU_DEVICES", "2");
  const std::string message = test::kiln_error_message([] { (void)default_device(); });
  EXPECT_TRUE(contains(message, "7")) << message;
  EXPECT_TRUE(contains(message, "2")) << "the number of cpu devices: " << message;
  EXPECT_TRUE(contains(message, "cpu")) << message;
  EXPECT_EQ(ones({1}, TensorOptions().device("cpu:1")).item<float>(), 1.0f);
}

TEST(BackendCpu1, DefaultDeviceIsCpu1) {
  KILN_REQUIRE_ENV("KILN_BACKEND", "cpu:1");
  KILN_REQUIRE_ENV("KILN_CPU_DEVICES", "2");
  EXPECT_EQ(default_device(), Device("cpu", 1));
  auto x = arange(4, float32);
  EXPECT_EQ(x.device(), Device("cpu", 1));
  EXPECT_EQ(matmul(x, x).item<float>(), 14.0f);
  EXPECT_EQ(x.to("cpu:0").device(), Device("cpu", 0));
  // Both logical devices are listed.
  for (const PluginInfo& p : loaded_plugins()) {
    if (p.name == "cpu") {
      EXPECT_EQ(p.devices.size(), 2u);
    }
  }
}

TEST(BackendMinimal, DefaultDeviceIsTheFixtureAccelerator) {
  KILN_REQUIRE_ENV("KILN_BACKEND", "minimal");
  KILN_REQUIRE_ENV("KILN_PLUGIN_PATH", KILN_TEST_GOOD_PLUGIN_DIR);
  EXPECT_EQ(default_device(), Device("minimal", 0));
  auto z = zeros({2});
  EXPECT_EQ(z.device(), Device("minimal", 0));
  EXPECT_EQ(z.to_vector<float>(), (std::vector<float>{0, 0}));
  auto y = (z + 3) * from_vector<float>({1, 2});  // the operand is created on minimal:0 too
  EXPECT_EQ(y.device(), Device("minimal", 0));
  EXPECT_EQ(y.to_vector<float>(), (std::vector<float>{3, 6}));
  manual_seed(5);
  auto r = randn({8});
  EXPECT_EQ(r.device(), Device("minimal", 0));
  manual_seed(5);
  EXPECT_EQ(r.to_vector<float>(), randn({8}, TensorOptions().device("cpu")).to_vector<float>());
}

// KILN_BACKEND unset by CTest; the test sets it itself, as a 100,000-character value is
// no command line's business. The error quotes the value once, cut to 200 characters.
TEST(LongBackendValue, IsQuotedOnceAndCut) {
  KILN_REQUIRE_ENV("KILN_BACKEND", "");
  auto count = [](const std::string& text, const std::string& part) {
    size_t n = 0;
    for (size_t at = text.find(part); at != std::string::npos; at = text.find(part, at + 1)) ++n;
    return n;
  };
  // A well-formed name no plugin has, and a malformed device.
  for (const char letter : {'a', 'A'}) {
    const std::string value(100000, letter);
    ASSERT_EQ(setenv("KILN_BACKEND", value.c_str(), 1), 0);
    const std::string message = test::kiln_error_message([] { (void)default_device(); });
    EXPECT_LT(message.size(), 1000u) << message.substr(0, 2000);
    EXPECT_TRUE(contains(message, "KILN_BACKEND (100000 characters)")) << message.substr(0, 2000);
    EXPECT_TRUE(contains(message, letter == 'a' ? "no plugin named '" : "invalid device '"))
        << message.substr(0, 2000);
    EXPECT_EQ(count(message, std::string(200, letter) + "... (99800 more characters)"), 1u)
        << message.substr(0, 2000);
  }
  ASSERT_EQ(unsetenv("KILN_BACKEND"), 0);
  EXPECT_EQ(default_device(), Device("cpu", 0));
}

}  // namespace
}  // namespace kiln
