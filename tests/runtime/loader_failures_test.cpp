// Discovery with KILN_PLUGIN_PATH=/nonexistent/dir:<bad fixture folder>: every broken
// candidate is recorded with a reason that names its cause, the good plugins load
// regardless, and their devices compute. See tests/fixtures/plugins/CMakeLists.txt
// for what each fixture does wrong.
#include <kiln/c_api.h>

#include <algorithm>
#include <filesystem>

#include "runtime/runtime_test_util.h"

namespace kiln {
namespace {

using test::contains;
using test::contains_any;

const std::string kBadDir = KILN_TEST_BAD_PLUGIN_DIR;
const std::string kMissingDir = "/nonexistent/dir";

#define REQUIRE_BAD_PLUGIN_ENV() KILN_REQUIRE_ENV("KILN_PLUGIN_PATH", kMissingDir + ":" + kBadDir)

/// The failures whose path ends with `file` (a file name, or the missing folder).
std::vector<PluginLoadFailure> failures_for(const std::string& file) {
  std::vector<PluginLoadFailure> found;
  for (const PluginLoadFailure& f : plugin_load_failures()) {
    std::string path = f.path;
    while (path.size() > 1 && path.back() == '/') path.pop_back();
    if (test::ends_with(path, file)) found.push_back(f);
  }
  return found;
}

/// The one failure recorded for `file`; fails the test if there is not exactly one.
PluginLoadFailure failure_for(const std::string& file) {
  const auto found = failures_for(file);
  EXPECT_EQ(found.size(), 1u) << file << "; failures:" << test::describe_failures();
  return found.empty() ? PluginLoadFailure{} : found.front();
}

TEST(BadPluginFolder, SearchPathStartsWithTheEnvironmentFolders) {
  REQUIRE_BAD_PLUGIN_ENV();
  const auto path = plugin_search_path();
  ASSERT_GE(path.size(), 3u) << "the two KILN_PLUGIN_PATH folders, then the default folder";
  EXPECT_EQ(path[0], kMissingDir);
  std::error_code ec;
  EXPECT_TRUE(std::filesystem::equivalent(path[1], kBadDir, ec)) << path[1];
}

TEST(BadPluginFolder, GoodPluginsStillLoad) {
  REQUIRE_BAD_PLUGIN_ENV();
  const auto names = test::plugin_names();
  EXPECT_TRUE(test::has_plugin("cpu")) << test::describe_failures();
  EXPECT_EQ(std::count(names.begin(), names.end(), "survivor"), 1) << test::describe_failures();
  for (const char* broken : {"notalib", "noentry", "badmajor", "initfails", "toosmall", "misnamed",
                             "holes", "mangled", "hidden", "cxxentry", "namespaced"})
    EXPECT_FALSE(test::has_plugin(broken)) << broken;
  for (const PluginInfo& p : loaded_plugins()) {
    if (p.name != "survivor") continue;
    EXPECT_TRUE(test::ends_with(p.path, "libkiln_survivor.so")) << p.path;
    EXPECT_EQ(p.version, "0.0.1-fixture");
    EXPECT_EQ(p.abi_major, static_cast<uint32_t>(KILN_ABI_MAJOR));
    EXPECT_EQ(p.abi_minor, static_cast<uint32_t>(KILN_ABI_MINOR));
    EXPECT_TRUE(contains(p.description, "fixture")) << p.description;
    ASSERT_EQ(p.devices.size(), 1u);
    EXPECT_EQ(p.devices[0].device, Device("survivor", 0));
    EXPECT_EQ(p.devices[0].kind, "accelerator");
    EXPECT_TRUE(contains(p.devices[0].name, "survivor")) << p.devices[0].name;
    EXPECT_EQ(p.devices[0].total_memory_bytes, uint64_t{1} << 30);
  }
}

TEST(BadPluginFolder, MissingFolderIsReported) {
  REQUIRE_BAD_PLUGIN_ENV();
  const auto f = failure_for(kMissingDir);
  EXPECT_TRUE(
      contains_any(f.reason, {"not found", "does not exist", "no such", "not exist", "missing"}))
      << f.reason;
}

TEST(BadPluginFolder, TextFileIsNotALibrary) {
  REQUIRE_BAD_PLUGIN_ENV();
  const auto f = failure_for("libkiln_notalib.so");
  EXPECT_TRUE(contains_any(
      f.reason, {"elf", "not a shared", "shared object", "too short", "dlopen", "invalid"}))
      << f.reason;
}

TEST(BadPluginFolder, LibraryWithoutTheEntrySymbol) {
  REQUIRE_BAD_PLUGIN_ENV();
  const auto f = failure_for("libkiln_noentry.so");
  EXPECT_TRUE(contains(f.reason, "kiln_plugin_init")) << f.reason;
}

TEST(BadPluginFolder, LibraryWithoutTheEntrySymbolIsToldWhatAPluginDefines) {
  REQUIRE_BAD_PLUGIN_ENV();
  const auto f = failure_for("libkiln_noentry.so");
  EXPECT_TRUE(contains(f.reason, "no entry symbol")) << f.reason;
  EXPECT_FALSE(contains_any(f.reason, {"mangled", "hidden"})) << f.reason;
  // The macro that writes the entry point, under its real name.
  EXPECT_TRUE(contains(f.reason, "KILN_SDK_PLUGIN in kiln/sdk/plugin.h")) << f.reason;
}

TEST(BadPluginFolder, MangledEntryPointIsNamedAsTheCause) {
  REQUIRE_BAD_PLUGIN_ENV();
  const auto f = failure_for("libkiln_mangled.so");
  EXPECT_TRUE(contains(f.reason, "_Z16kiln_plugin_init")) << f.reason;
  EXPECT_TRUE(contains(f.reason, "mangled")) << f.reason;
  EXPECT_TRUE(contains(f.reason, "extern \"C\"")) << f.reason;
}

TEST(BadPluginFolder, EntryPointInANamespaceIsNamedAsTheCause) {
  REQUIRE_BAD_PLUGIN_ENV();
  const auto f = failure_for("libkiln_namespaced.so");
  EXPECT_TRUE(contains(f.reason, "_ZN4acme16kiln_plugin_init")) << f.reason;
  EXPECT_TRUE(contains(f.reason, "defined inside 'acme'")) << f.reason;
  EXPECT_TRUE(contains(f.reason, "mangled")) << f.reason;
  EXPECT_TRUE(contains(f.reason, "global scope")) << f.reason;
  EXPECT_TRUE(contains(f.reason, "KILN_SDK_PLUGIN")) << f.reason;
}

TEST(BadPluginFolder, HiddenEntryPointIsNamedAsTheCause) {
  REQUIRE_BAD_PLUGIN_ENV();
  const auto f = failure_for("libkiln_hidden.so");
  EXPECT_TRUE(contains(f.reason, "hidden")) << f.reason;
  EXPECT_TRUE(contains(f.reason, "KILN_PLUGIN_EXPORT")) << f.reason;
  EXPECT_FALSE(contains(f.reason, "mangled")) << f.reason;
}

TEST(BadPluginFolder, CxxDefinitionGetsCLinkageFromTheHeader) {
  REQUIRE_BAD_PLUGIN_ENV();
  // Found and called: its init fails on purpose, after the symbol lookup succeeded.
  const auto f = failure_for("libkiln_cxxentry.so");
  EXPECT_TRUE(contains(f.reason, "reached the C++ entry point")) << f.reason;
}

TEST(BadPluginFolder, EveryMissingRequiredEntryIsNamedAtOnce) {
  REQUIRE_BAD_PLUGIN_ENV();
  const auto f = failure_for("libkiln_holes.so");
  EXPECT_TRUE(contains(f.reason, "memory_stats")) << f.reason;
  EXPECT_TRUE(contains(f.reason, "get_kernel")) << f.reason;
  EXPECT_TRUE(contains(f.reason, "stream_destroy")) << f.reason;
  EXPECT_FALSE(contains(f.reason, "device_count")) << "present entries are not named: " << f.reason;
}

TEST(BadPluginFolder, RefusedPluginIsReportedAsRefusedWhenRequested) {
  REQUIRE_BAD_PLUGIN_ENV();
  // Asking for a device of a plugin that was found but refused names the refusal.
  EXPECT_KILN_ERROR(zeros({1}, TensorOptions().device("holes")), "refused");
  EXPECT_KILN_ERROR(zeros({1}, TensorOptions().device("holes")), "memory_stats");
  EXPECT_KILN_ERROR(zeros({1}, TensorOptions().device("nosuchplugin")), "no plugin named");
}

TEST(BadPluginFolder, AbiMajorMismatchNamesBothVersions) {
  REQUIRE_BAD_PLUGIN_ENV();
  const auto f = failure_for("libkiln_badmajor.so");
  EXPECT_TRUE(contains_any(f.reason, {"abi"})) << f.reason;
  EXPECT_TRUE(contains(f.reason, "2.")) << "the plugin's version: " << f.reason;
  EXPECT_TRUE(contains(f.reason, std::to_string(KILN_ABI_MAJOR) + "."))
      << "libkiln's version: " << f.reason;
}

TEST(BadPluginFolder, InitFailureCarriesThePluginsMessage) {
  REQUIRE_BAD_PLUGIN_ENV();
  const auto f = failure_for("libkiln_initfails.so");
  EXPECT_TRUE(contains(f.reason, "no accelerator attached")) << f.reason;
}

TEST(BadPluginFolder, TooSmallTableIsRefused) {
  REQUIRE_BAD_PLUGIN_ENV();
  const auto f = failure_for("libkiln_toosmall.so");
  EXPECT_TRUE(contains_any(f.reason, {"struct_size", "too small", "smaller"})) << f.reason;
}

TEST(BadPluginFolder, PluginWhoseNameDisagreesWithItsFileIsRefused) {
  REQUIRE_BAD_PLUGIN_ENV();
  // libkiln_misnamed.so calls itself "survivor"; the real libkiln_survivor.so loads.
  const auto f = failure_for("libkiln_misnamed.so");
  EXPECT_TRUE(contains(f.reason, "survivor")) << f.reason;
  EXPECT_TRUE(contains(f.reason, "misnamed")) << f.reason;
  EXPECT_TRUE(failures_for("libkiln_survivor.so").empty()) << test::describe_failures();
}

TEST(BadPluginFolder, OneFailurePerBadCandidateAndNothingElse) {
  REQUIRE_BAD_PLUGIN_ENV();
  // The missing folder, notalib, noentry, badmajor, initfails, toosmall, misnamed,
  // holes, mangled, hidden, cxxentry, namespaced. Files not named libkiln_*.so are not
  // candidates.
  EXPECT_EQ(plugin_load_failures().size(), 12u) << test::describe_failures();
  EXPECT_TRUE(failures_for("notes.txt").empty());
  EXPECT_TRUE(failures_for("libnotkiln.so").empty());
  for (const PluginLoadFailure& f : plugin_load_failures())
    EXPECT_FALSE(f.reason.empty()) << f.path;
}

TEST(BadPluginFolder, SurvivorDeviceComputes) {
  REQUIRE_BAD_PLUGIN_ENV();
  const Device survivor("survivor", 0);
  reset_fallback_report();
  auto a = from_vector<float>({1, 2, 3, 4}, {2, 2}, TensorOptions().device(survivor));
  auto b = full({2}, 10.0, TensorOptions().device(survivor));
  auto y = matmul(a, a) + b;
  EXPECT_EQ(y.device(), survivor);
  EXPECT_EQ(y.to_vector<float>(), (std::vector<float>{17, 20, 25, 32}));
  EXPECT_EQ(y.to("cpu").to_vector<float>(), (std::vector<float>{17, 20, 25, 32}));
  EXPECT_TRUE(contains(fallback_report().str(), "survivor:0")) << fallback_report().str();
}

TEST(BadPluginFolder, BrokenPluginsAreNotBackends) {
  REQUIRE_BAD_PLUGIN_ENV();
  EXPECT_KILN_ERROR(zeros({1}, TensorOptions().device("badmajor")), "badmajor");
  EXPECT_KILN_ERROR(zeros({1}, TensorOptions().device("initfails")), "initfails");
  EXPECT_EQ(zeros({1}, TensorOptions().device("cpu")).item<float>(), 0.0f);
}

// KILN_PLUGIN_PATH=<good folder>:<a folder with a copy of the same plugin>.
TEST(DuplicatePlugin, TheSecondCopyIsRefusedAndTheFirstServes) {
  KILN_REQUIRE_ENV("KILN_PLUGIN_PATH",
                   std::string(KILN_TEST_GOOD_PLUGIN_DIR) + ":" + KILN_TEST_DUPLICATE_PLUGIN_DIR);
  const auto names = test::plugin_names();
  EXPECT_EQ(std::count(names.begin(), names.end(), "minimal"), 1) << test::describe_failures();
  for (const PluginInfo& p : loaded_plugins()) {
    if (p.name == "minimal") {
      EXPECT_TRUE(contains(p.path, KILN_TEST_GOOD_PLUGIN_DIR))
          << "the first folder wins: " << p.path;
    }
  }
  const auto failures = plugin_load_failures();
  ASSERT_EQ(failures.size(), 1u) << test::describe_failures();
  EXPECT_TRUE(contains(failures[0].path, KILN_TEST_DUPLICATE_PLUGIN_DIR)) << failures[0].path;
  EXPECT_TRUE(contains(failures[0].reason, "minimal")) << failures[0].reason;
  EXPECT_TRUE(contains_any(failures[0].reason, {"duplicate", "already"})) << failures[0].reason;
  EXPECT_EQ(full({2}, 1.5, TensorOptions().device("minimal")).to_vector<float>(),
            (std::vector<float>{1.5, 1.5}));
}

}  // namespace
}  // namespace kiln

// A FIFO named like a plugin (registered as runtime.fifo_candidate): opening it would
// block every Kiln program forever; it must be skipped and listed, and the CPU plugin
// must still load. The FIFO is made here, before anything has started discovery.
#include <sys/stat.h>

namespace kiln::test {
namespace {

TEST(FifoCandidate, IsSkippedNotOpened) {
  const std::string dir =
      (std::filesystem::temp_directory_path() / ("kiln-fifo-" + std::to_string(::getpid())))
          .string();
  std::filesystem::create_directories(dir);
  const std::string fifo = dir + "/libkiln_fifo.so";
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0) << "cannot make a FIFO at " << fifo;
  ::setenv("KILN_PLUGIN_PATH", dir.c_str(), 1);
  const auto failures = plugin_load_failures();  // discovery happens here
  std::filesystem::remove_all(dir);
  bool listed = false;
  for (const auto& f : failures)
    if (f.path == fifo) {
      listed = true;
      EXPECT_NE(f.reason.find("not a regular file"), std::string::npos) << f.reason;
    }
  EXPECT_TRUE(listed) << "the FIFO is not among the rejected candidates";
  EXPECT_GE(device_count("cpu"), 1);
}

}  // namespace
}  // namespace kiln::test

// KILN_PLUGINS=cpu with KILN_PLUGIN_PATH=<good fixture folder>: the allow-list keeps the
// fixture plugin from being opened at all, says so when it is asked for, and always
// keeps the CPU plugin (the reference and the fallback target).
namespace kiln::test {
namespace {

TEST(PluginAllowList, PluginsLeftOutAreNotOpenedAndSaySo) {
  KILN_REQUIRE_ENV("KILN_PLUGINS", "cpu");
  KILN_REQUIRE_ENV("KILN_PLUGIN_PATH", std::string(KILN_TEST_GOOD_PLUGIN_DIR));
  EXPECT_TRUE(has_plugin("cpu"));
  EXPECT_FALSE(has_plugin("minimal"));
  bool listed = false;
  for (const PluginLoadFailure& f : plugin_load_failures())
    if (ends_with(f.path, "libkiln_minimal.so")) {
      listed = true;
      EXPECT_NE(f.reason.find("not in KILN_PLUGINS=cpu"), std::string::npos) << f.reason;
    }
  EXPECT_TRUE(listed) << describe_failures();
  EXPECT_KILN_ERROR(zeros({1}, TensorOptions().device("minimal")), "KILN_PLUGINS");
  EXPECT_FALSE(is_available("minimal"));
  EXPECT_TRUE(is_available("cpu"));
}

// The same with KILN_LOG_LEVEL=info: the plugin left out is logged, with the reason, when
// the plugins are first loaded (the README promises every skipped candidate).
TEST(PluginAllowList, PluginsLeftOutAreLoggedAtInfo) {
  KILN_REQUIRE_ENV("KILN_PLUGINS", "cpu");
  KILN_REQUIRE_ENV("KILN_PLUGIN_PATH", std::string(KILN_TEST_GOOD_PLUGIN_DIR));
  KILN_REQUIRE_ENV("KILN_LOG_LEVEL", "info");
  testing::internal::CaptureStderr();
  const bool loaded = has_plugin("minimal");  // the first use loads the plugins
  const std::string log = testing::internal::GetCapturedStderr();
  EXPECT_FALSE(loaded);
  EXPECT_TRUE(contains(log, "[kiln:loader] info: skipped ")) << log;
  EXPECT_TRUE(contains(log, "libkiln_minimal.so: not in KILN_PLUGINS=cpu")) << log;
}

TEST(PluginAllowList, NamedPluginsLoadAndCpuAlways) {
  KILN_REQUIRE_ENV("KILN_PLUGINS", "minimal");
  KILN_REQUIRE_ENV("KILN_PLUGIN_PATH", std::string(KILN_TEST_GOOD_PLUGIN_DIR));
  EXPECT_TRUE(has_plugin("minimal")) << describe_failures();
  EXPECT_TRUE(has_plugin("cpu")) << "cpu is always loaded";
  EXPECT_TRUE(is_available("minimal"));
  EXPECT_EQ(device_count("minimal"), 1);
  EXPECT_FALSE(is_available("nosuch"));
  EXPECT_EQ(device_count("nosuch"), 0);
}

}  // namespace
}  // namespace kiln::test
