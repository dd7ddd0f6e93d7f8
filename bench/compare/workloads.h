#pragma once
// The workloads `kiln-bench compare` times on every device: a few ops and three training
// steps, each in three sizes. A workload prepares its operands on one device and hands
// back a step that only enqueues work; the runner (runner.h) warms it up, repeats it
// and synchronizes the device around the clock.
//
//   const kiln::bench::Workload* gemm = kiln::bench::find_workload("gemm");
//   auto w = gemm->prepare("cpu:1", kiln::float32, kiln::bench::Size::Small);
//   w.step();                        // one matmul, enqueued on cpu:1
//   kiln::synchronize("cpu:1");

#include <kiln/device.h>
#include <kiln/dtype.h>
#include <kiln/error.h>

#include <functional>
#include <string>
#include <vector>

namespace kiln::bench {

/// How big each workload is. Tiny runs in milliseconds (for tests); small is the
/// default, sized so that the whole comparison on two CPU devices takes seconds;
/// medium matches the Google Benchmark suites' sizes where they overlap.
enum class Size { Tiny, Small, Medium };

/// "tiny", "small", "medium".
const char* size_name(Size size);

/// What a step's work is counted in, and so how throughput is printed.
enum class WorkUnit {
  Flops,    ///< floating-point operations: GFLOP/s
  Bytes,    ///< bytes read and written: GB/s
  Samples,  ///< training samples: samples/s
};

/// "GFLOP/s", "GB/s", "samples/s".
const char* throughput_unit(WorkUnit unit);
/// The divisor that turns work per second into throughput_unit(unit): 1e9 or 1.
double throughput_scale(WorkUnit unit);

/// One workload made ready on one device.
struct PreparedWorkload {
  std::string shape;         ///< what one step computes, e.g. "512x512x512", "batch 32"
  double work_per_step = 0;  ///< in `unit`: flops, bytes or samples of one step
  WorkUnit unit = WorkUnit::Flops;
  std::function<void()> step;  ///< enqueues one step on the device; does not synchronize
};

struct Workload {
  std::string name;         ///< as written on the command line: "gemm", "train-cnn"
  std::string description;  ///< one line for --help and the report
  /// Allocates the operands (and model) on `device` in `dtype`; throws kiln::Error
  /// when the device cannot hold or compute them.
  std::function<PreparedWorkload(const Device& device, DType dtype, Size size)> prepare;
};

/// Thrown by Workload::prepare when the device cannot run the workload by design (a
/// step that cannot be captured into a graph there): the cell is "n/a", not failed.
struct NotApplicable : Error {
  using Error::Error;
};

/// Every workload, in the order the report lists them.
const std::vector<Workload>& workloads();
/// The workload named `name`, or null.
const Workload* find_workload(const std::string& name);
/// "gemm, conv, ...": the names, for messages.
std::string workload_names();

}  // namespace kiln::bench
