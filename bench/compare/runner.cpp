#include "runner.h"

#include <kiln/kiln.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <ctime>
#include <map>

namespace kiln::bench {

namespace {

double wall_now() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

// CPU time of the whole process: a device that computes on the host's cores shows it
// here (the CPU plugin's pool), one that computes elsewhere leaves it near zero.
double cpu_now() {
  timespec t{};
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &t);
  return double(t.tv_sec) + double(t.tv_nsec) * 1e-9;
}

FallbackCount count_fallbacks(const std::string& device, int64_t steps) {
  FallbackCount count;
  std::map<std::string, uint64_t> per_op;
  for (const FallbackEntry& e : fallback_report().entries) {
    if (e.device != device) continue;
    count.calls += e.calls;
    per_op[e.op] += e.calls;
  }
  std::vector<std::pair<std::string, uint64_t>> ops(per_op.begin(), per_op.end());
  std::stable_sort(ops.begin(), ops.end(), [](auto& a, auto& b) { return a.second > b.second; });
  for (auto& [op, calls] : ops) count.ops.push_back(op);
  count.calls_per_step = steps > 0 ? double(count.calls) / double(steps) : 0;
  return count;
}

}  // namespace

Stats summarize(std::vector<double> samples) {
  Stats s;
  if (samples.empty()) return s;
  std::sort(samples.begin(), samples.end());
  const size_t n = samples.size();
  s.median = n % 2 ? samples[n / 2] : (samples[n / 2 - 1] + samples[n / 2]) / 2;
  s.min = samples.front();
  s.max = samples.back();
  double sum = 0;
  for (double v : samples) sum += v;
  s.mean = sum / double(n);
  double squares = 0;
  for (double v : samples) squares += (v - s.mean) * (v - s.mean);
  s.stddev = n > 1 ? std::sqrt(squares / double(n - 1)) : 0;
  s.spread = s.median > 0 ? (s.max - s.min) / s.median : 0;
  return s;
}

CellResult run_cell(const Workload& workload, const DeviceEntry& entry, DType dtype, Size size,
                    const TimingOptions& timing) {
  CellResult cell;
  cell.workload = workload.name;
  cell.device = entry.spec;
  cell.dtype = std::string(dtype_name(dtype));
  const Device device = entry.info.device;
  try {
    manual_seed(0);
    PreparedWorkload w = workload.prepare(device, dtype, size);
    cell.shape = w.shape;
    cell.unit = w.unit;
    // Warm-up: caches, the allocator's pool, a sleeping thread pool or GPU clock all
    // settle within a few steps or a fraction of a second, whichever is longer.
    const double warmup_start = wall_now();
    for (int64_t i = 0; i < timing.warmup || wall_now() - warmup_start < timing.min_time / 5; ++i) {
      w.step();
      synchronize(device);
    }

    double start = wall_now();
    w.step();
    synchronize(device);
    const double one_step = std::max(wall_now() - start, 1e-9);
    const double per_repetition = timing.min_time / double(timing.repetitions);
    cell.steps_per_repetition =
        std::clamp<int64_t>(int64_t(std::ceil(per_repetition / one_step)), 1, 1000000);
    cell.repetitions = timing.repetitions;

    reset_fallback_report();
    std::vector<double> wall, cpu;
    for (int64_t r = 0; r < timing.repetitions; ++r) {
      const double cpu_start = cpu_now();
      start = wall_now();
      for (int64_t i = 0; i < cell.steps_per_repetition; ++i) w.step();
      synchronize(device);
      const double steps = double(cell.steps_per_repetition);
      wall.push_back((wall_now() - start) / steps);
      cpu.push_back((cpu_now() - cpu_start) / steps);
    }
    cell.fallbacks = count_fallbacks(entry.spec, cell.steps_per_repetition * cell.repetitions);
    cell.seconds = summarize(wall);
    cell.cpu_seconds = summarize(cpu).median;
    cell.throughput = w.work_per_step / cell.seconds.median / throughput_scale(w.unit);
    cell.ok = true;
  } catch (const NotApplicable& e) {
    cell.applicable = false;
    cell.error = e.what();
  } catch (const std::exception& e) {
    cell.error = e.what();
  }
  return cell;
}

void compute_relative(std::vector<CellResult>& cells, const std::string& baseline) {
  for (CellResult& cell : cells) {
    cell.relative = 0;
    if (!cell.ok) continue;
    for (const CellResult& base : cells)
      if (base.ok && base.device == baseline && base.workload == cell.workload)
        cell.relative = base.seconds.median / cell.seconds.median;
  }
}

}  // namespace kiln::bench
