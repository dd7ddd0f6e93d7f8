#pragma once
// compare.json: the comparison in Google Benchmark's JSON schema, so that tools made
// for it (benchmark's tools/compare.py, dashboards) read it.
//
//   {"context": {"date": ..., "host_name": ..., "executable": ..., "num_cpus": 2,
//                "mhz_per_cpu": ..., "load_avg": [...], "library_build_type": "release",
//                "kiln_version": "0.1.0", "kiln_abi_version": "1.2",
//                "openblas": {"config", "core", "threads", "coretype_env"},
//                "kiln_compare": {"size", "dtype", "repetitions", "warmup", "min_time",
//                                 "baseline", "workloads"},
//                "kiln_devices": [{"device": "cpu:0", "name", "kind", "plugin",
//                                  "plugin_version", "plugin_abi", "usable", "reason"}],
//                "kiln_plugin_load_failures": [{"path", "reason"}]},
//    "benchmarks": [{"name": "gemm/cpu:0", "run_name": "gemm/cpu:0",
//                    "run_type": "iteration", "repetitions": 10, "threads": 1,
//                    "iterations": <timed steps in all>, "real_time": <median>,
//                    "cpu_time": <median process CPU time>, "time_unit": "ns",
//                    "workload", "device", "device_name", "dtype", "shape",
//                    "min_time_ns", "max_time_ns", "mean_time_ns", "stddev_time_ns",
//                    "spread", "noisy", "throughput", "throughput_unit",
//                    "relative_to_baseline", "fallback_calls", "fallback_calls_per_step",
//                    "fallback_ops": [...]}, ...]}
//
// Times are per step, in nanoseconds. A failed cell has "error_occurred": true and
// "error_message", as Google Benchmark marks a skipped benchmark, and no times.

#include <nlohmann/json.hpp>

#include <vector>

#include "context.h"
#include "runner.h"

namespace kiln::bench {

nlohmann::json json_report(const RunContext& context, const std::vector<CellResult>& cells);

}  // namespace kiln::bench
