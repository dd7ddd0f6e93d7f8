// kiln-conformance: certifies a Kiln backend plugin against the CPU reference.
//
//   kiln-conformance path/to/libkiln_acme.so            # the report, exit 1 on failure
//   kiln-conformance --json libkiln_acme.so > report.json
//   kiln-conformance --op kiln.matmul --op kiln.add libkiln_acme.so
//
// Exit status: 0 every check passed, 1 a check failed (or crashed, or timed out),
// 2 the command line was wrong.
#include <kiln/base/regular_file.h>
#include <kiln/runtime.h>
#include <CLI/CLI.hpp>

#include <cstdlib>
#include <iostream>

#include "certify.h"
#include "op_suite.h"

namespace kc = kiln::conformance;

int main(int argc, char** argv) {
  CLI::App app{
      "Certifies a Kiln backend plugin: checks its answers through the C ABI (versions, devices, "
      "memory, copies, streams, kernel lookups), runs every catalogue op it provides against the "
      "CPU reference (dtypes, shapes, broadcasting, strided operands, gradients), and trains a "
      "tiny model on it. Each group of checks runs in its own process, so a crash is reported, "
      "not fatal.",
      "kiln-conformance"};
  std::string plugin;
  bool json = false, list_ops = false, no_fork = false, no_training = false, verbose = false;
  int device = 0, timeout = 300;
  std::vector<std::string> ops;
  app.add_option("plugin", plugin, "the plugin to certify, e.g. build/libkiln_acme.so")
      ->check(CLI::ExistingFile);
  app.add_flag("--json", json, "print the report as JSON (for machines) instead of text");
  app.add_option("--device", device, "index of the device to test")
      ->check(CLI::NonNegativeNumber)
      ->capture_default_str();
  app.add_option("--op", ops, "check only this catalogue op (repeatable), e.g. --op kiln.add")
      ->expected(1)
      ->allow_extra_args(false)
      ->multi_option_policy(CLI::MultiOptionPolicy::TakeAll);
  app.add_option("--timeout", timeout, "seconds each group of checks may take before it is killed")
      ->check(CLI::Range(1, 86400))
      ->capture_default_str();
  app.add_flag("--no-fork", no_fork,
               "run every check in this process (for a debugger; a crash then ends the run)");
  app.add_flag("--no-training", no_training, "skip the training check");
  app.add_flag("--list-ops", list_ops,
               "print the catalogue ops that have conformance cases and exit");
  app.add_flag("-v,--verbose", verbose, "print each group of checks to stderr as it starts");
  try {
    app.parse(argc, argv);
    if (list_ops) {
      for (const std::string& op : kc::catalogue_op_names()) std::cout << op << "\n";
      return 0;
    }
    if (plugin.empty()) throw CLI::RequiredError("plugin");
    // dlopen of a FIFO would wait for a writer (in a child, until its timeout).
    if (std::string problem = kiln::base::regular_file_problem(plugin); !problem.empty())
      throw CLI::ValidationError("plugin", "'" + plugin + "' " + problem);
    const auto known = kc::catalogue_op_names();
    for (const std::string& op : ops)
      if (std::find(known.begin(), known.end(), op) == known.end())
        throw CLI::ValidationError(
            "--op", "unknown op '" + op + "' (kiln-conformance --list-ops lists them)");
  } catch (const CLI::ParseError& e) {
    return app.exit(e) == 0 ? 0 : 2;   // CLI11 prints the error and points at --help
  } catch (const std::exception& e) {  // the suites disagree with the catalogue
    std::cerr << "kiln-conformance: " << e.what() << "\n";
    return 2;
  }

  // The child processes must see only the plugin under test and the CPU reference,
  // and every op a plugin lacks must fall back rather than fail.
  ::unsetenv("KILN_BACKEND");
  ::setenv("KILN_FALLBACK", "allow", 1);

  kc::CertifyOptions options;
  options.plugin_path = plugin;
  options.device = device;
  options.ops = ops;
  options.training = !no_training;
  options.isolation.fork = !no_fork;
  options.isolation.timeout_seconds = timeout;
  if (verbose)
    options.progress = [](const std::string& group) {
      std::cerr << "kiln-conformance: " << group << "\n";
    };
  const kc::Report report = kc::certify(options);
  if (json) {
    std::cout << report.json().dump(2) << "\n";
  } else {
    std::cout << report.text();
  }
  return report.passed() ? 0 : 1;
}
