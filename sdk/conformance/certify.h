#pragma once
// certify.h — the whole conformance run: ABI answers, loading through libkiln, every
// provided catalogue op against the CPU reference, and a short training run, each
// group in its own process.

#include <functional>
#include <string>
#include <vector>

#include "isolation.h"
#include "report.h"

namespace kiln::conformance {

struct CertifyOptions {
  std::string plugin_path;       ///< the plugin file
  int device = 0;                ///< device index under test
  std::vector<std::string> ops;  ///< only these catalogue ops (empty: all)
  bool training = true;          ///< run the training check
  IsolationOptions isolation;
  /// Called with each group's name before it runs (progress for --verbose).
  std::function<void(const std::string&)> progress;
};

/// Runs every check. Must be called before anything in this process touches libkiln's
/// plugin registry (the child processes load the plugin; this one stays clean so that
/// forking is safe).
Report certify(const CertifyOptions& options);

}  // namespace kiln::conformance
