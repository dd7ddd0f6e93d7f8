#pragma once
// abi_check.h — a helper for writing one check of the ABI groups: collect problems,
// then report passed / warning / FAILED with every problem listed.

#include <string>
#include <vector>

#include "abi_session.h"
#include "isolation.h"

namespace kiln::conformance {

class Check {
 public:
  Check(Reporter& reporter, std::string name) : reporter_(reporter), name_(std::move(name)) {
    reporter_.begin("abi: " + name_);
  }
  Check(const Check&) = delete;
  Check& operator=(const Check&) = delete;
  ~Check() { finish(); }

  /// Records a broken promise of the ABI: the check fails.
  void fail(const std::string& why) { failures_.push_back(why); }
  /// Records something allowed but not recommended: a warning.
  void warn(const std::string& why) { warnings_.push_back(why); }
  /// The message shown when nothing failed.
  void note(const std::string& text) { note_ = text; }
  bool failed() const { return !failures_.empty(); }

  /// `outcome` must be an error; warns when its code is not `expected`.
  void expect_error(const Outcome& outcome, int32_t expected, const std::string& call) {
    if (outcome.ok()) {
      fail(call + " succeeded; it must return an error status");
    } else if (outcome.code != expected) {
      warn(call + " returned " + status_code_name(outcome.code) + ", expected " +
           status_code_name(expected) + " (\"" + outcome.message + "\")");
    }
  }
  /// `outcome` must be a success.
  bool expect_ok(const Outcome& outcome, const std::string& call) {
    if (outcome.ok()) return true;
    fail(call + " failed: " + status_code_name(outcome.code) + ": " + outcome.message);
    return false;
  }

  void finish() {
    if (finished_) return;
    finished_ = true;
    CheckResult r;
    r.section = "abi";
    r.name = name_;
    const std::vector<std::string>& listed = failures_.empty() ? warnings_ : failures_;
    r.status = !failures_.empty()   ? Status::Failed
               : !warnings_.empty() ? Status::Warning
                                    : Status::Passed;
    for (size_t i = 0; i < listed.size(); ++i) r.message += (i ? "\n" : "") + listed[i];
    if (listed.empty()) r.message = note_;
    reporter_.result(r);
  }

 private:
  Reporter& reporter_;
  std::string name_;
  std::string note_;
  std::vector<std::string> failures_, warnings_;
  bool finished_ = false;
};

}  // namespace kiln::conformance
