#pragma once
// What a comparison ran on and how: the machine, Kiln, OpenBLAS, the devices and the
// options. Every report (table, markdown, CSV, JSON, chart) is made from a RunContext
// and the cells (runner.h).

#include <string>
#include <vector>

#include "devices.h"
#include "options.h"

namespace kiln::bench {

struct RunContext {
  std::string date;  ///< local time, ISO 8601 with offset: "2026-11-25T04:10:00+00:00"
  std::string host_name;
  std::string executable;  ///< argv[0]
  unsigned num_cpus = 0;   ///< hardware threads
  int mhz_per_cpu = 0;     ///< from /proc/cpuinfo; 0 when unknown
  double load_avg[3] = {0, 0, 0};
  std::string kiln_version, kiln_abi_version;
  std::string openblas_config, openblas_core;  ///< openblas_get_config(), _get_corename()
  int openblas_threads = 0;
  std::string openblas_coretype_env;  ///< OPENBLAS_CORETYPE, "(unset)" when unset
  CompareOptions options;
  std::vector<DeviceEntry> devices;  ///< usable and unusable, in the order selected
  std::vector<PluginLoadFailure> load_failures;
  std::string baseline;  ///< device spec; "" when no device was usable

  /// The device entry for `spec`, or null.
  const DeviceEntry* device(const std::string& spec) const;
  /// "OpenBLAS 0.3.21 DYNAMIC_ARCH ..., core Haswell, 2 threads (OPENBLAS_CORETYPE=Haswell)"
  std::string openblas_line() const;
  /// What the device is, from its plugin: "CPU (Intel(R) Xeon(R) Processor) [cpu, 2 threads,
  /// 23.5 GiB], plugin cpu 0.1.0 (ABI 1.2)"; for an unusable one, also why.
  static std::string describe(const DeviceEntry& device);
};

/// Gathers the machine's, Kiln's and OpenBLAS's side of the context now.
RunContext collect_context(const CompareOptions& options, std::vector<DeviceEntry> devices,
                           std::string baseline, const std::string& executable);

}  // namespace kiln::bench
