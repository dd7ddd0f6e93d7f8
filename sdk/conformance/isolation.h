#pragma once
// isolation.h — runs each group of checks in a child process, so that a plugin that
// crashes, calls exit() or hangs is reported as such instead of taking the runner
// down with it. The child streams its results to the parent over a pipe, one JSON
// object per line; a crash is attributed to the last check the child had begun.

#include <functional>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "report.h"

namespace kiln::conformance {

/// What a group of checks sends to the runner.
class Reporter {
 public:
  virtual ~Reporter() = default;
  /// Announces the check about to run: a crash from here on is blamed on it.
  virtual void begin(const std::string& what) = 0;
  virtual void result(const CheckResult& result) = 0;
  /// A fact later groups need (the plugin's name, the ops it provides, ...).
  virtual void fact(const std::string& key, const nlohmann::json& value) = 0;
};

struct GroupOutcome {
  std::vector<CheckResult> results;
  std::map<std::string, nlohmann::json> facts;
  /// Set when the group did not finish: Crashed or TimedOut, with what was running.
  std::optional<Status> abnormal;
  std::string abnormal_message;
  /// What the child process wrote to stdout and stderr (the plugin's and libkiln's log
  /// lines among it), its first 4 MiB; all of it is also forwarded to stderr as it comes.
  /// Empty when the group ran in this process (IsolationOptions::fork false).
  std::string output;
};

using GroupBody = std::function<void(Reporter&)>;

struct IsolationOptions {
  bool fork = true;  ///< false: run in this process (for debuggers)
  int timeout_seconds = 300;
};

/// Runs `body` (in a child process unless options.fork is false) and collects what it
/// reported. An exception escaping `body` becomes a failed check.
GroupOutcome run_group(const std::string& group, const GroupBody& body,
                       const IsolationOptions& options);

}  // namespace kiln::conformance
