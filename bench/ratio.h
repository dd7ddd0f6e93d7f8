#pragma once
// Pairs of benchmarks whose time ratio is printed after the run: Kiln's version
// of a workload and the raw-library (or plain-loop) baseline measured in the same
// process. Register a pair next to the two benchmarks.

#include <string>
#include <vector>

namespace kiln::bench {

struct RatioPair {
  std::string label;             // what the ratio means, e.g. "matmul 1024^2 vs cblas_sgemm"
  std::string kiln;              // benchmark name (as printed) of Kiln's run
  std::string baseline;          // benchmark name of the baseline run
  double target;                 // the target for baseline_time / kiln_time (>= target is good)
  double reference_seconds = 0;  // if > 0: a fixed reference time instead of `baseline`
};

std::vector<RatioPair>& ratio_pairs();

struct RegisterRatio {
  RegisterRatio(std::string label, std::string kiln, std::string baseline, double target) {
    ratio_pairs().push_back({std::move(label), std::move(kiln), std::move(baseline), target});
  }
};

/// A ratio against a figure measured elsewhere (e.g. libtorch on this machine),
/// for workloads whose baseline cannot run in the same process.
struct RegisterReference {
  RegisterReference(std::string label, std::string kiln, double reference_seconds, double target) {
    ratio_pairs().push_back({std::move(label), std::move(kiln), "", target, reference_seconds});
  }
};

}  // namespace kiln::bench
