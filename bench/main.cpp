// kiln-bench's main: runs the registered benchmarks, then prints, for each pair,
// the baseline's time over Kiln's ("speed relative to the raw library": 1.0 is
// parity, higher is better) against its target, and the OpenBLAS configuration
// the figures were taken with.

#include <benchmark/benchmark.h>
#include <cblas.h>

#include <cstdio>
#include <cstdlib>
#include <map>
#include <thread>

#include "ratio.h"

namespace kiln::bench {

std::vector<RatioPair>& ratio_pairs() {
  static std::vector<RatioPair> pairs;
  return pairs;
}

namespace {
// Remembers the median (or the only) real time of every benchmark run.
class CollectingReporter : public benchmark::ConsoleReporter {
 public:
  void ReportRuns(const std::vector<Run>& runs) override {
    for (const Run& run : runs) {
      if (run.error_occurred) continue;  // skipped (e.g. no GPU): no time to compare
      bool median = run.run_type == Run::RT_Aggregate && run.aggregate_name == "median";
      if (run.run_type == Run::RT_Iteration || median)
        times_[run.run_name.str()] =
            run.GetAdjustedRealTime() / benchmark::GetTimeUnitMultiplier(run.time_unit);
    }
    ConsoleReporter::ReportRuns(runs);
  }
  const std::map<std::string, double>& times() const { return times_; }

 private:
  std::map<std::string, double> times_;
};
}  // namespace

}  // namespace kiln::bench

int main(int argc, char** argv) {
  std::printf("OpenBLAS: %s, core %s, %d threads (OPENBLAS_CORETYPE=%s); %u hardware threads\n",
              openblas_get_config(), openblas_get_corename(), openblas_get_num_threads(),
              std::getenv("OPENBLAS_CORETYPE") ? std::getenv("OPENBLAS_CORETYPE") : "(unset)",
              std::thread::hardware_concurrency());
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
  kiln::bench::CollectingReporter reporter;
  benchmark::RunSpecifiedBenchmarks(&reporter);
  benchmark::Shutdown();

  const auto& times = reporter.times();
  std::printf("\nRatios (baseline time / Kiln time; 1.00 = parity, higher is faster;\n"
              "'ref' baselines are libtorch 1.13 figures measured on the 2-core CI machine):\n");
  for (const auto& pair : kiln::bench::ratio_pairs()) {
    auto k = times.find(pair.kiln), b = times.find(pair.baseline);
    if (k == times.end()) continue;  // filtered out
    double baseline = pair.reference_seconds;
    if (baseline <= 0) {
      if (b == times.end()) continue;
      baseline = b->second;
    }
    double ratio = baseline / k->second;
    std::printf("  %-48s %6.3f  (target >= %.2f: %s)\n", pair.label.c_str(), ratio, pair.target,
                ratio >= pair.target ? "met" : "NOT met");
  }
  return 0;
}
