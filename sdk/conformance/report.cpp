// Rendering the conformance report as text and JSON.
#include "report.h"

#include <kiln/runtime.h>

#include <cstdio>
#include <map>
#include <sstream>

namespace kiln::conformance {

const char* status_name(Status status) {
  switch (status) {
    case Status::Passed:
      return "passed";
    case Status::Failed:
      return "FAILED";
    case Status::Crashed:
      return "CRASHED";
    case Status::TimedOut:
      return "TIMED OUT";
    case Status::Fallback:
      return "fallback";
    case Status::Skipped:
      return "skipped";
    case Status::Warning:
      return "warning";
  }
  return "?";
}

bool is_failure(Status status) {
  return status == Status::Failed || status == Status::Crashed || status == Status::TimedOut;
}

namespace {

const char* json_status(Status status) {
  switch (status) {
    case Status::Passed:
      return "passed";
    case Status::Failed:
      return "failed";
    case Status::Crashed:
      return "crashed";
    case Status::TimedOut:
      return "timed_out";
    case Status::Fallback:
      return "fallback";
    case Status::Skipped:
      return "skipped";
    case Status::Warning:
      return "warning";
  }
  return "failed";
}

Status status_from_json(const std::string& s) {
  for (Status st : {Status::Passed, Status::Failed, Status::Crashed, Status::TimedOut,
                    Status::Fallback, Status::Skipped, Status::Warning})
    if (s == json_status(st)) return st;
  return Status::Failed;
}

std::string format_error(double e) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.3g", e);
  return buf;
}

const char* section_title(const std::string& section) {
  if (section == "load") return "Loading";
  if (section == "abi") return "ABI answers (the C entry points, called directly)";
  if (section == "ops") return "Ops against the CPU reference";
  if (section == "training") return "Training a tiny model against the CPU";
  return "Other";
}

}  // namespace

nlohmann::json to_json(const CheckResult& r) {
  nlohmann::json j = {{"section", r.section},
                      {"name", r.name},
                      {"status", json_status(r.status)},
                      {"message", r.message}};
  if (r.max_error) j["max_error"] = *r.max_error;
  if (r.cases) j["cases"] = r.cases;
  if (!r.fallback.empty()) j["fallback"] = r.fallback;
  return j;
}

CheckResult check_from_json(const nlohmann::json& j) {
  CheckResult r;
  r.section = j.value("section", "");
  r.name = j.value("name", "");
  r.status = status_from_json(j.value("status", "failed"));
  r.message = j.value("message", "");
  if (j.contains("max_error") && j["max_error"].is_number())
    r.max_error = j["max_error"].get<double>();
  r.cases = j.value("cases", 0);
  if (j.contains("fallback")) r.fallback = j["fallback"].get<std::vector<std::string>>();
  return r;
}

bool Report::passed() const {
  for (const CheckResult& c : checks)
    if (is_failure(c.status)) return false;
  return !checks.empty();
}

std::string Report::text() const {
  std::ostringstream out;
  out << "kiln-conformance " << kiln::version() << " (ABI " << kiln::abi_version() << ")\n";
  out << "plugin: " << plugin_path << "\n";
  if (!plugin_name.empty())
    out << "        " << plugin_name << " " << plugin_version << ", ABI " << plugin_abi
        << ", device " << plugin_name << ":" << device_index << "\n";
  std::string section;
  std::map<Status, int> counts;
  for (const CheckResult& c : checks) {
    if (c.section != section) {
      section = c.section;
      out << "\n" << section_title(section) << "\n";
    }
    ++counts[c.status];
    char head[128];
    std::snprintf(head, sizeof head, "  %-10s %-34s ", status_name(c.status), c.name.c_str());
    out << head;
    std::string detail = c.message;
    if (c.cases)
      detail = std::to_string(c.cases) + (c.cases == 1 ? " case" : " cases") +
               (c.max_error ? ", max error " + format_error(*c.max_error) : "") +
               (detail.empty() ? "" : "; " + detail);
    else if (c.max_error && c.status != Status::Failed)
      detail +=
          (detail.empty() ? "" : "; ") + std::string("max error ") + format_error(*c.max_error);
    if (!c.fallback.empty()) {
      detail += (detail.empty() ? "" : "; ") + std::string("CPU fallback for ");
      for (size_t i = 0; i < c.fallback.size(); ++i) detail += (i ? ", " : "") + c.fallback[i];
    }
    // Indent continuation lines of multi-line messages under the detail column.
    std::string indented;
    for (char ch : detail) {
      indented += ch;
      if (ch == '\n') indented += std::string(48, ' ');
    }
    out << indented << "\n";
  }
  out << "\nSummary: " << counts[Status::Passed] << " passed, " << counts[Status::Fallback]
      << " not provided (CPU fallback), " << counts[Status::Warning] << " warnings, "
      << counts[Status::Skipped] << " skipped, "
      << counts[Status::Failed] + counts[Status::Crashed] + counts[Status::TimedOut] << " failed\n";
  out << (passed() ? "CONFORMANT: the plugin passed every check it was given\n"
                   : "NOT CONFORMANT: see the checks marked FAILED, CRASHED or TIMED OUT\n");
  return out.str();
}

nlohmann::json Report::json() const {
  nlohmann::json checks_json = nlohmann::json::array();
  for (const CheckResult& c : checks) checks_json.push_back(to_json(c));
  return {{"kiln_version", kiln::version()},
          {"abi", kiln::abi_version()},
          {"plugin",
           {{"path", plugin_path},
            {"name", plugin_name},
            {"version", plugin_version},
            {"abi", plugin_abi},
            {"device", device_index}}},
          {"checks", checks_json},
          {"passed", passed()}};
}

}  // namespace kiln::conformance
