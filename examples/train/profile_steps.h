#pragma once
// kiln-train --profile FILE.json [--profile-steps N]: profiles N training steps after
// a warm-up (first-use kernel lookups, allocator growth), writes the Chrome trace and
// prints the ten ops that took the most host time.

#include <kiln/profiler.h>

#include <cstdint>
#include <memory>
#include <string>

namespace kiln::train {

class StepProfiler {
 public:
  static constexpr int64_t kWarmupSteps = 5;

  /// Does nothing when `path` is empty.
  StepProfiler(std::string path, int64_t steps);
  ~StepProfiler();

  /// Around each training step: starts the profiler once the warm-up is over and opens
  /// a "step N" scope; end_step closes it and, after the last profiled step, writes the
  /// trace and prints the table.
  void begin_step();
  void end_step();
  /// At the end of training: writes what was recorded if fewer steps ran than asked.
  void finish();

 private:
  void write();

  std::string path_;
  int64_t steps_;
  int64_t step_ = 0;      // steps begun so far
  int64_t profiled_ = 0;  // steps recorded
  std::unique_ptr<kiln::profiler::Profiler> profiler_;
  std::unique_ptr<kiln::profiler::RecordFunction> scope_;
};

}  // namespace kiln::train
