// kiln::load_plugins: more plugins at run time, from a folder or one file, in a process
// that started with only the built-in plugin folder (no KILN_PLUGIN_PATH).
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <filesystem>
#include <fstream>
#include <thread>

#include "runtime/runtime_test_util.h"

namespace kiln {
namespace {

using test::has_plugin;

const std::string kGoodDir = KILN_TEST_GOOD_PLUGIN_DIR;
const std::string kBadDir = KILN_TEST_BAD_PLUGIN_DIR;

bool failure_mentions(const std::string& file, const std::string& words) {
  for (const PluginLoadFailure& f : plugin_load_failures())
    if (test::ends_with(f.path, file) && f.reason.find(words) != std::string::npos) return true;
  return false;
}

TEST(LoadPlugins, AFolderAddsItsPluginsAndJoinsTheSearchPath) {
  KILN_REQUIRE_ENV("KILN_PLUGIN_PATH", "");
  ASSERT_FALSE(has_plugin("minimal")) << "the fixture folder must not be on the path yet";
  EXPECT_KILN_ERROR(ones({2}, TensorOptions().device("minimal")), "no plugin named 'minimal'");

  const std::vector<PluginInfo> added = load_plugins(kGoodDir);
  ASSERT_EQ(added.size(), 1u) << test::describe_failures();
  EXPECT_EQ(added[0].name, "minimal");
  ASSERT_EQ(added[0].devices.size(), 1u);
  EXPECT_TRUE(is_available("minimal"));
  const auto path = plugin_search_path();
  EXPECT_EQ(path.back(), kGoodDir);
  // Its device computes.
  const Tensor a = ones({3}, TensorOptions().device("minimal"));
  EXPECT_EQ((a + a).sum().item<double>(), 6.0);

  // Again: nothing new; the second copy is refused as a duplicate, the first stays.
  EXPECT_TRUE(load_plugins(kGoodDir).empty());
  EXPECT_TRUE(failure_mentions("libkiln_minimal.so", "already loaded"))
      << test::describe_failures();
  EXPECT_EQ((a * 2).sum().item<double>(), 6.0);
}

TEST(LoadPlugins, OneFileAndItsRefusalIsExplained) {
  KILN_REQUIRE_ENV("KILN_PLUGIN_PATH", "");
  // A plugin whose init fails: nothing loaded, the reason recorded and reported.
  EXPECT_TRUE(load_plugins(kBadDir + "/libkiln_initfails.so").empty());
  EXPECT_TRUE(failure_mentions("libkiln_initfails.so", "kiln_plugin_init failed"))
      << test::describe_failures();
  EXPECT_KILN_ERROR(zeros({1}, TensorOptions().device("initfails")), "refused");
  // One good file among bad ones loads alone.
  const auto added = load_plugins(kBadDir + "/libkiln_survivor.so");
  ASSERT_EQ(added.size(), 1u) << test::describe_failures();
  EXPECT_EQ(added[0].name, "survivor");
  EXPECT_FALSE(has_plugin("noentry")) << "only the file named was loaded";
}

TEST(LoadPlugins, WhatIsNeitherAFolderNorAPluginFileIsAnError) {
  KILN_REQUIRE_ENV("KILN_PLUGIN_PATH", "");
  EXPECT_KILN_ERROR(load_plugins("/nonexistent/kiln/plugins"), "/nonexistent/kiln/plugins",
                    "no such file or folder");
  EXPECT_KILN_ERROR(load_plugins(kBadDir + "/notes.txt"), "notes.txt",
                    "neither a folder nor a plugin file named libkiln_<name>.so");
  EXPECT_KILN_ERROR(load_plugins(""), "no such file or folder");
  // A FIFO under a plugin's name is never opened (dlopen would wait for a writer).
  const auto fifo = std::filesystem::temp_directory_path() /
                    ("libkiln_fifo" + std::to_string(::getpid()) + ".so");
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
  const std::string message = test::kiln_error_message_without_blocking(
      fifo.string(), [&] { load_plugins(fifo.string()); });
  std::filesystem::remove(fifo);
  EXPECT_TRUE(test::contains(message, fifo.string()) &&
              test::contains(message, "is a FIFO (named pipe), not a regular file"))
      << message;
  EXPECT_EQ(ones({2}).sum().item<double>(), 2.0);  // the process goes on
}

// Loading while other threads create tensors and look up devices (run under TSan by
// scripts/test.sh through the `threads` label).
TEST(LoadPlugins, WhileOtherThreadsUseKiln) {
  KILN_REQUIRE_ENV("KILN_PLUGIN_PATH", "");
  std::atomic<bool> stop{false};
  std::atomic<int> rounds{0};
  std::thread user([&] {
    while (!stop.load()) {
      EXPECT_EQ(ones({4}).sum().item<double>(), 4.0);
      EXPECT_GE(loaded_plugins().size(), 1u);
      EXPECT_FALSE(plugin_search_path().empty());
      rounds.fetch_add(1);
    }
  });
  while (rounds.load() < 3) std::this_thread::yield();
  const auto added = load_plugins(kGoodDir);
  while (rounds.load() < 6) std::this_thread::yield();
  stop = true;
  user.join();
  ASSERT_EQ(added.size(), 1u) << test::describe_failures();
  EXPECT_EQ(ones({2}, TensorOptions().device("minimal")).sum().item<double>(), 2.0);
}

}  // namespace
}  // namespace kiln
