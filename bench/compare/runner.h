#pragma once
// Times one workload on one device: a "cell" of the comparison.
//
// Procedure, per cell: prepare the operands on the device (untimed); warm up with at least
// `warmup` steps, for at least min_time / 5 seconds; time one more step to choose how many
// steps one repetition runs (enough to last min_time / repetitions, at least one); then
// `repetitions` times: start the clock, run the steps, kiln::synchronize(device), stop the
// clock. Each repetition gives one time per step. The CPU-fallback report is reset before the
// timed repetitions and read after them, so a cell counts only its own fallbacks.

#include <cstdint>
#include <string>
#include <vector>

#include "devices.h"
#include "workloads.h"

namespace kiln::bench {

/// How a cell is timed; the command line's defaults.
struct TimingOptions {
  int64_t repetitions = 10;
  int64_t warmup = 2;     ///< untimed steps at least (and min_time / 5 seconds at least)
  double min_time = 0.5;  ///< seconds of timed steps per cell, at least
};

/// Median and spread of a set of times.
struct Stats {
  double median = 0, min = 0, max = 0, mean = 0, stddev = 0;
  /// (max - min) / median: how far apart the repetitions were, relative to the median.
  double spread = 0;
};

/// The statistics of `samples` (at least one; the median of an even count is the mean
/// of the two middle values; stddev is the sample standard deviation, 0 for one sample).
Stats summarize(std::vector<double> samples);

/// A spread above this (10 %) marks a cell as noisy in every report.
inline constexpr double kNoisySpread = 0.10;

/// Fallbacks to the CPU plugin during a cell's timed repetitions.
struct FallbackCount {
  uint64_t calls = 0;  ///< every fallback call, all ops
  double calls_per_step = 0;
  std::vector<std::string> ops;  ///< the ops that fell back, most calls first
};

struct CellResult {
  std::string workload;
  std::string device;  ///< "cpu:1"
  std::string dtype;   ///< "float32"
  std::string shape;   ///< PreparedWorkload::shape
  bool ok = false;
  bool applicable = true;  ///< false: the device cannot run the workload (NotApplicable)
  std::string error;       ///< why the cell failed or is not applicable, when !ok
  Stats seconds;           ///< wall time per step over the repetitions
  double cpu_seconds = 0;  ///< median process CPU time per step (all threads)
  int64_t steps_per_repetition = 0;
  int64_t repetitions = 0;
  WorkUnit unit = WorkUnit::Flops;
  double throughput = 0;  ///< in throughput_unit(unit), at the median time
  FallbackCount fallbacks;
  double relative = 0;  ///< baseline's median / this median (0: no baseline figure)

  bool noisy() const { return ok && seconds.spread > kNoisySpread; }
  /// "ok", "failed" or "n/a".
  const char* status() const { return ok ? "ok" : applicable ? "failed" : "n/a"; }
};

/// Runs one cell. A kiln::Error (or any std::exception) from preparing or running the
/// workload does not escape: the cell comes back with ok == false and the message.
CellResult run_cell(const Workload& workload, const DeviceEntry& device, DType dtype, Size size,
                    const TimingOptions& timing);

/// Sets every cell's `relative` against the cell of the same workload on `baseline`
/// (left at 0 where either cell failed).
void compute_relative(std::vector<CellResult>& cells, const std::string& baseline);

}  // namespace kiln::bench
