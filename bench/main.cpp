// kiln-bench's main, in two modes.
//
//   kiln-bench [Google Benchmark flags]: runs the registered suites on the default device
//   (KILN_BACKEND), then prints, for each pair, the baseline's time over Kiln's ("speed
//   relative to the raw library": 1.0 is parity, higher is better) against its target, and
//   the OpenBLAS configuration the figures were taken with.
//
//   kiln-bench compare [options]: the same workloads on several devices, side by side
//   (compare/compare.h).

#include <benchmark/benchmark.h>
#include <cblas.h>
#include <kiln/kiln.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <thread>

#include "compare/compare.h"
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

void print_help() {
  std::printf(
      "kiln-bench: Kiln's benchmarks, in two modes.\n\n"
      "  kiln-bench [Google Benchmark flags]\n"
      "      Runs the suites on the default device (KILN_BACKEND, else cpu:0): each Kiln\n"
      "      workload beside its baseline in the same process (raw cblas_sgemm, a plain\n"
      "      OpenMP loop; cuBLAS and cuDNN where the CUDA plugin is built), then a table of\n"
      "      ratios (baseline time / Kiln time; 1.00 is parity, higher is faster).\n"
      "      e.g. kiln-bench --benchmark_filter='Matmul|Sgemm' --benchmark_repetitions=5\n\n"
      "  kiln-bench compare [--devices all|cpu:0,cuda:0,acme] [--workloads gemm,conv,...]\n"
      "                     [--dtype float32] [--size tiny|small|medium] [--repetitions N]\n"
      "                     [--warmup N] [--min-time S] [--baseline DEVICE] [--out DIR]\n"
      "      Runs the same workloads on several devices (every device of every loaded\n"
      "      plugin by default) and prints median time, spread, throughput, speed\n"
      "      relative to a baseline device and CPU fallbacks per workload and device;\n"
      "      --out writes JSON (Google Benchmark's schema), CSV, markdown and a chart.\n"
      "      `kiln-bench compare --help` explains every option.\n\n"
      "Environment: KILN_BACKEND, KILN_PLUGIN_PATH, KILN_PLUGINS, KILN_CPU_DEVICES (see\n"
      "README.md); OPENBLAS_CORETYPE pins OpenBLAS's kernel, printed on the first line.\n\n"
      "Google Benchmark flags (suite mode):\n");
  benchmark::PrintDefaultHelp();
}

}  // namespace

}  // namespace kiln::bench

int main(int argc, char** argv) {
  if (argc > 1 && std::strcmp(argv[1], "compare") == 0) return kiln::bench::run_compare(argc, argv);
  for (int i = 1; i < argc; ++i)
    if (std::strcmp(argv[i], "--help") == 0 || std::strcmp(argv[i], "-h") == 0) {
      kiln::bench::print_help();
      return 0;
    }
  std::printf("OpenBLAS: %s, core %s, %d threads (OPENBLAS_CORETYPE=%s); %u hardware threads\n",
              openblas_get_config(), openblas_get_corename(), openblas_get_num_threads(),
              std::getenv("OPENBLAS_CORETYPE") ? std::getenv("OPENBLAS_CORETYPE") : "(unset)",
              std::thread::hardware_concurrency());
  benchmark::Initialize(&argc, argv, kiln::bench::print_help);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
  // The suites run on the default device: check it now, and say which it is, rather
  // than let the first benchmark throw through Google Benchmark.
  try {
    const kiln::Device device = kiln::default_device();
    std::string name;
    for (const auto& plugin : kiln::loaded_plugins())
      for (const auto& d : plugin.devices)
        if (d.device == device) name = d.name + ", plugin " + plugin.name + " " + plugin.version;
    std::printf("Kiln %s, default device %s (%s)\n", kiln::version().c_str(), device.str().c_str(),
                name.c_str());
  } catch (const kiln::Error& e) {
    std::fprintf(stderr, "kiln-bench: %s\n", e.what());
    return 1;
  }
  kiln::bench::CollectingReporter reporter;
  try {
    benchmark::RunSpecifiedBenchmarks(&reporter);
  } catch (const std::exception& e) {
    std::fflush(stdout);
    std::fprintf(stderr, "kiln-bench: a benchmark failed: %s\n", e.what());
    return 1;
  }
  benchmark::Shutdown();

  const auto& times = reporter.times();
  std::printf(
      "\nRatios (baseline time / Kiln time; 1.00 = parity, higher is faster;\n"
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
