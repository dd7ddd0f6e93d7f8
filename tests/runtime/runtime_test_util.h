#pragma once
/// @file runtime_test_util.h
/// The runtime tests depend on the environment of their process (plugin discovery
/// happens once per process), so each group runs as its own CTest test with its own
/// KILN_* variables (tests/CMakeLists.txt). A group started without them skips, and
/// its CTest registration turns a skip into a failure.

#include <string>

#include "support/kiln_test.h"

/// Skips the test unless environment variable `name` equals `expected` ("" = unset).
#define KILN_REQUIRE_ENV(name, expected)                                           \
  do {                                                                             \
    const std::string kiln_env_actual_ = ::kiln::test::env_or(name);               \
    const std::string kiln_env_expected_ = (expected);                             \
    if (kiln_env_actual_ != kiln_env_expected_)                                    \
      GTEST_SKIP() << "needs " << name << "='" << kiln_env_expected_ << "' (has '" \
                   << kiln_env_actual_ << "'): run it through ctest";              \
  } while (0)

namespace kiln::test {

inline bool ends_with(const std::string& s, const std::string& suffix) {
  return s.size() >= suffix.size() &&
         s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}

inline std::vector<std::string> plugin_names() {
  std::vector<std::string> names;
  for (const PluginInfo& p : loaded_plugins()) names.push_back(p.name);
  return names;
}

inline bool has_plugin(const std::string& name) {
  for (const PluginInfo& p : loaded_plugins())
    if (p.name == name) return true;
  return false;
}

inline std::string describe_failures() {
  std::string out;
  for (const PluginLoadFailure& f : plugin_load_failures())
    out += "\n  " + f.path + ": " + f.reason;
  return out.empty() ? " (none)" : out;
}

}  // namespace kiln::test
