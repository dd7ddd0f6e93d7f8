#include "profile_steps.h"

#include <iostream>

namespace kiln::train {

StepProfiler::StepProfiler(std::string path, int64_t steps)
    : path_(std::move(path)), steps_(steps) {}

StepProfiler::~StepProfiler() = default;

void StepProfiler::begin_step() {
  if (path_.empty()) return;
  ++step_;
  if (step_ == kWarmupSteps + 1 && profiled_ == 0)
    profiler_ = std::make_unique<kiln::profiler::Profiler>();
  if (profiler_)
    scope_ = std::make_unique<kiln::profiler::RecordFunction>("step " + std::to_string(step_));
}

void StepProfiler::end_step() {
  if (!profiler_) return;
  scope_.reset();
  if (++profiled_ == steps_) write();
}

void StepProfiler::finish() {
  if (profiler_) write();
}

void StepProfiler::write() {
  scope_.reset();
  profiler_->stop();
  profiler_->export_chrome_trace(path_);
  std::cout << "kiln-train: profiled " << profiled_ << (profiled_ == 1 ? " step" : " steps")
            << " after " << kWarmupSteps << " warm-up steps (" << profiler_->events().size()
            << " events) -> " << path_ << " (open it in ui.perfetto.dev or chrome://tracing)\n"
            << profiler_->key_averages().table(kiln::profiler::SortBy::HostSelf, 10);
  profiler_.reset();
}

}  // namespace kiln::train
