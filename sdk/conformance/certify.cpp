// The order of a conformance run and the facts passed between its groups.
#include "certify.h"

#include <kiln/c_api.h>
#include <kiln/kiln.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <set>

#include <kiln/sdk/kernel_table.h>

#include "abi_checks.h"
#include "collectives_check.h"
#include "op_runner.h"
#include "op_suite.h"
#include "training_check.h"

namespace fs = std::filesystem;

namespace kiln::conformance {

namespace {

// Runs one group, appends its results, and turns a crash or a timeout into a result
// of its own.
GroupOutcome run(Report& report, const CertifyOptions& options, const std::string& section,
                 const std::string& name, const GroupBody& body) {
  if (options.progress) options.progress(name);
  GroupOutcome outcome = run_group(name, body, options.isolation);
  for (CheckResult r : outcome.results) {
    if (r.section.empty()) r.section = section;
    report.checks.push_back(r);
  }
  if (outcome.abnormal) {
    CheckResult r;
    r.section = section;
    r.name = name;
    r.status = *outcome.abnormal;
    r.message = outcome.abnormal_message;
    report.checks.push_back(r);
  }
  return outcome;
}

CheckResult simple(const std::string& section, const std::string& name, Status status,
                   const std::string& message) {
  CheckResult r;
  r.section = section;
  r.name = name;
  r.status = status;
  r.message = message;
  return r;
}

// A supports() that throws, behind the plugin kit's firewall (kiln/sdk/kernel_table.h):
// the kit logs "<op>: supports() threw: <what>; declining the arguments" and answers 0,
// so the op runs on the CPU plugin and its cases pass. The exception is a defect all the
// same (api/README.md), found in the log lines of the op's group.
void fail_throwing_supports(const std::string& op, const GroupOutcome& outcome,
                            CheckResult& check) {
  const std::string marker = op + ": " + kiln::sdk::kSupportsThrew;
  const size_t at = outcome.output.find(marker);
  if (at == std::string::npos) return;
  const size_t end = std::min(outcome.output.find('\n', at), outcome.output.size());
  std::string what = outcome.output.substr(at + marker.size(), end - at - marker.size());
  what = what.substr(0, what.find("; declining"));
  if (what.rfind(": ", 0) == 0) what.erase(0, 2);
  const std::string message =
      "ABI violation: supports() of " + op + " threw" + (what.empty() ? "" : " (" + what + ")") +
      "; a supports() must answer 0 or 1 and never throw (the plugin kit caught the "
      "exception and declined, so the op ran on the CPU plugin)";
  if (check.status == Status::Failed)
    check.message = message + "\n" + check.message;
  else
    check.message = message;
  check.status = Status::Failed;
}

// A private plugin folder holding only the plugin under test, under its own file name
// (so that libkiln's verdict on that name is the one a user gets), put first on
// KILN_PLUGIN_PATH for the child processes: it then wins over a plugin of the same
// name installed beside libkiln.
class PluginFolder {
 public:
  explicit PluginFolder(const std::string& plugin) {
    std::string pattern = (fs::temp_directory_path() / "kiln-conformance-XXXXXX").string();
    if (::mkdtemp(pattern.data()) == nullptr) return;
    folder_ = pattern;
    std::error_code ec;
    fs::create_symlink(fs::absolute(plugin), fs::path(folder_) / fs::path(plugin).filename(), ec);
    if (ec) folder_.clear();
  }
  ~PluginFolder() {
    std::error_code ec;
    if (!folder_.empty()) fs::remove_all(folder_, ec);
  }
  const std::string& path() const { return folder_; }

 private:
  std::string folder_;
};

void load_through_libkiln(const std::string& name, const std::string& folder, int index,
                          Reporter& reporter) {
  reporter.begin("load: discovering plugins through libkiln");
  CheckResult r = simple("load", "loads through libkiln", Status::Passed, "");
  bool found = false;
  for (const PluginInfo& p : loaded_plugins()) {
    if (p.name != name) continue;
    found = true;
    if (fs::path(p.path).parent_path() != fs::path(folder)) {
      r.status = Status::Failed;
      r.message =
          "libkiln loaded '" + name + "' from " + p.path + " instead of the plugin under test";
    } else {
      r.message = "loaded as '" + name + "', " + std::to_string(p.devices.size()) + " device(s)";
    }
  }
  if (!found) {
    r.status = Status::Failed;
    r.message = "libkiln did not load it";
    const std::string expected =
        std::string(KILN_PLUGIN_FILE_PREFIX) + name + KILN_PLUGIN_FILE_SUFFIX;
    for (const auto& entry : fs::directory_iterator(folder))
      if (entry.path().filename() != expected)
        r.message += ": libkiln loads the plugin '" + name + "' only from a file named '" +
                     expected + "', and this one is named '" + entry.path().filename().string() +
                     "'";
    for (const PluginLoadFailure& f : plugin_load_failures())
      if (f.path.find(folder) == 0) r.message += ": " + f.reason;
  } else if (r.status == Status::Passed) {
    reporter.begin("load: opening " + name + ":" + std::to_string(index));
    try {
      memory_stats(Device(name, index));
    } catch (const std::exception& e) {
      r.status = Status::Failed;
      r.message = e.what();
    }
  }
  reporter.result(r);
}

}  // namespace

Report certify(const CertifyOptions& options) {
  Report report;
  report.plugin_path = fs::absolute(options.plugin_path).string();
  report.device_index = options.device;

  AbiTarget target{options.plugin_path, options.device, catalogue_op_names()};
  GroupOutcome entry = run(report, options, "abi", "entry point and versions",
                           [&](Reporter& r) { abi_entry(target, r); });
  if (!entry.facts.count("name") || !entry.facts.count("device_count")) {
    report.checks.push_back(simple("abi", "remaining checks", Status::Skipped,
                                   "the plugin cannot be initialized, see above"));
    return report;
  }
  report.plugin_name = entry.facts["name"].get<std::string>();
  report.plugin_version =
      entry.facts.count("version") ? entry.facts["version"].get<std::string>() : "";
  report.plugin_abi = entry.facts.count("abi") ? entry.facts["abi"].get<std::string>() : "";
  const int devices = entry.facts["device_count"].get<int>();
  if (options.device >= devices) {
    report.checks.push_back(simple("abi", "remaining checks", Status::Skipped,
                                   "device " + std::to_string(options.device) + " does not exist"));
    return report;
  }

  run(report, options, "abi", "versions", [&](Reporter& r) { abi_versions(target, r); });
  run(report, options, "abi", "devices", [&](Reporter& r) { abi_devices(target, r); });
  run(report, options, "abi", "memory", [&](Reporter& r) { abi_memory(target, r); });
  run(report, options, "abi", "copies", [&](Reporter& r) { abi_copies(target, r); });
  run(report, options, "abi", "streams and events", [&](Reporter& r) { abi_streams(target, r); });
  GroupOutcome kernels =
      run(report, options, "abi", "kernel lookups", [&](Reporter& r) { abi_kernels(target, r); });

  // Everything from here on runs through libkiln, which finds the plugin in a private
  // folder; the CPU plugin beside libkiln is the reference.
  const std::string name = report.plugin_name;
  PluginFolder folder(options.plugin_path);
  if (folder.path().empty()) {
    report.checks.push_back(simple("load", "loads through libkiln", Status::Failed,
                                   "cannot create a temporary plugin folder"));
    return report;
  }
  ::setenv("KILN_PLUGIN_PATH", folder.path().c_str(), 1);
  const Device device(name, options.device);
  GroupOutcome load = run(report, options, "load", "loads through libkiln", [&](Reporter& r) {
    load_through_libkiln(name, folder.path(), options.device, r);
  });
  bool loaded = !load.abnormal;
  for (const CheckResult& r : load.results) loaded = loaded && r.status == Status::Passed;
  if (!loaded) {
    report.checks.push_back(simple("ops", "ops and training", Status::Skipped,
                                   "the plugin does not load through libkiln"));
    return report;
  }

  std::set<std::string> provided;
  if (kernels.facts.count("provided"))
    for (const auto& op : kernels.facts["provided"]) provided.insert(op["name"].get<std::string>());
  else
    report.checks.push_back(simple("ops", "ops", Status::Skipped,
                                   "the kernel lookups did not finish, so no op is checked"));
  for (const OpSuite& suite : op_suites()) {
    if (!options.ops.empty() &&
        std::find(options.ops.begin(), options.ops.end(), suite.op) == options.ops.end())
      continue;
    if (!provided.count(suite.op)) {
      if (kernels.facts.count("provided"))
        report.checks.push_back(
            simple("ops", suite.op, Status::Fallback, "not provided: runs on the CPU plugin"));
      continue;
    }
    const size_t first = report.checks.size();
    const GroupOutcome outcome =
        run(report, options, "ops", suite.op, [&](Reporter& r) { run_op_suite(suite, device, r); });
    if (report.checks.size() > first && !outcome.abnormal)
      fail_throwing_supports(suite.op, outcome, report.checks[first]);
  }
  // Collectives across all of the plugin's devices (skipped when --op narrows the run).
  if (options.ops.empty())
    run(report, options, "collectives", "collectives",
        [&](Reporter& r) { collectives_check(name, r); });
  if (options.training)
    run(report, options, "training", "tiny CNN, 8 Adam steps",
        [&](Reporter& r) { training_check(device, r); });
  return report;
}

}  // namespace kiln::conformance
