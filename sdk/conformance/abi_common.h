#pragma once
// abi_common.h — what the ABI check groups share: opening a session, reporting a
// group that cannot run, and size-prefixed structs with guard bytes.

#include <cstring>
#include <string>
#include <vector>

#include "abi_check.h"
#include "abi_checks.h"
#include "abi_session.h"
#include "isolation.h"

namespace kiln::conformance {

/// A struct T declared with a smaller struct_size (an older caller's), followed in
/// memory by guard bytes: tail_intact() tells whether the plugin wrote past the size.
template <class T>
class SentinelBox {
 public:
  explicit SentinelBox(size_t struct_size) : bytes_(sizeof(T) + 64, kGuard), size_(struct_size) {
    std::memset(bytes_.data(), 0, struct_size);
    get()->struct_size = struct_size;
  }
  T* get() { return reinterpret_cast<T*>(bytes_.data()); }
  bool tail_intact() const {
    for (size_t i = size_; i < bytes_.size(); ++i)
      if (bytes_[i] != kGuard) return false;
    return true;
  }

 private:
  static constexpr unsigned char kGuard = 0xAB;
  std::vector<unsigned char> bytes_;  // operator new: aligned for any T
  size_t size_;
};

/// Reports one skipped check naming the group and why it could not run.
inline void skip_group(Reporter& reporter, const std::string& group, const std::string& why) {
  CheckResult r;
  r.section = "abi";
  r.name = group;
  r.status = Status::Skipped;
  r.message = why;
  reporter.result(r);
}

/// Loads and initializes the plugin (and opens the device under test); on failure
/// reports group `group` as skipped (abi_entry reports the cause itself).
inline bool start_session(AbiSession& session, const AbiTarget& target, Reporter& reporter,
                          const std::string& group, bool open_device) {
  if (!session.error().empty()) {
    skip_group(reporter, group, session.error());
    return false;
  }
  const HostApi host;
  const Outcome outcome = session.init(host.get());
  if (!outcome.ok()) {
    skip_group(reporter, group, "kiln_plugin_init failed: " + outcome.message);
    return false;
  }
  if (open_device) {
    const std::string why = session.open(target.device);
    if (!why.empty()) {
      skip_group(reporter, group, why);
      return false;
    }
  }
  return true;
}

/// A failed check listing malformed status objects the plugin returned, if any.
inline void report_status_defects(const AbiSession& session, Reporter& reporter) {
  if (session.defects().empty()) return;
  Check check(reporter, "status objects");
  for (const std::string& d : session.defects()) check.fail("the plugin returned " + d);
}

}  // namespace kiln::conformance
