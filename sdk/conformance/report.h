#pragma once
// report.h — what kiln-conformance found: one CheckResult per check, grouped into
// sections (ABI answers, ops, training), rendered as text for people and as JSON for
// machines (--json).

#include <nlohmann/json.hpp>

#include <optional>
#include <string>
#include <vector>

namespace kiln::conformance {

enum class Status {
  Passed,
  Failed,
  Crashed,   ///< the check group's process died on a signal
  TimedOut,  ///< the check group's process was killed after --timeout seconds
  Fallback,  ///< the plugin does not provide the op (or declines every case): CPU fallback
  Skipped,   ///< not run (a prerequisite failed, or nothing to check)
  Warning,   ///< works, but not as the ABI recommends; does not fail certification
};

const char* status_name(Status status);
/// Failed, Crashed and TimedOut fail certification.
bool is_failure(Status status);

/// One check: "copies round-trip 1001 bytes", "kiln.add", "loss curve".
struct CheckResult {
  std::string section;  ///< "abi", "ops", "training", "memory", "load"
  std::string name;
  Status status = Status::Passed;
  std::string message;                ///< what failed, or a short summary
  std::optional<double> max_error;    ///< worst |actual - expected| of compared values
  int cases = 0;                      ///< ops: argument lists compared natively
  std::vector<std::string> fallback;  ///< ops: dtypes/cases the plugin declined
};

nlohmann::json to_json(const CheckResult& r);
CheckResult check_from_json(const nlohmann::json& j);

/// The whole run.
struct Report {
  std::string plugin_path;
  std::string plugin_name;
  std::string plugin_version;
  std::string plugin_abi;  ///< "1.0"
  int device_index = 0;
  std::vector<CheckResult> checks;

  bool passed() const;
  /// The human-readable report.
  std::string text() const;
  nlohmann::json json() const;
};

}  // namespace kiln::conformance
