#include "json_report.h"

namespace kiln::bench {

namespace {

using json = nlohmann::json;

json context_json(const RunContext& c) {
  json devices = json::array();
  for (const DeviceEntry& d : c.devices)
    devices.push_back(
        {{"device", d.spec},
         {"name", d.info.name},
         {"kind", d.info.kind},
         {"plugin", d.plugin},
         {"plugin_version", d.plugin_version},
         {"plugin_abi", d.plugin_abi},
         {"compute_capability", d.info.compute_capability_major
                                    ? std::to_string(d.info.compute_capability_major) + "." +
                                          std::to_string(d.info.compute_capability_minor)
                                    : ""},
         {"multiprocessor_count", d.info.multiprocessor_count},
         {"total_memory_bytes", d.info.total_memory_bytes},
         {"usable", d.usable},
         {"reason", d.reason}});
  json failures = json::array();
  for (const PluginLoadFailure& f : c.load_failures)
    failures.push_back({{"path", f.path}, {"reason", f.reason}});
  const CompareOptions& o = c.options;
  return {
      {"date", c.date},
      {"host_name", c.host_name},
      {"executable", c.executable},
      {"num_cpus", c.num_cpus},
      {"mhz_per_cpu", c.mhz_per_cpu},
      {"load_avg", {c.load_avg[0], c.load_avg[1], c.load_avg[2]}},
#ifdef NDEBUG
      {"library_build_type", "release"},
#else
      {"library_build_type", "debug"},
#endif
      {"kiln_version", c.kiln_version},
      {"kiln_abi_version", c.kiln_abi_version},
      {"openblas",
       {{"config", c.openblas_config},
        {"core", c.openblas_core},
        {"threads", c.openblas_threads},
        {"coretype_env", c.openblas_coretype_env}}},
      {"kiln_compare",
       {{"size", size_name(o.size)},
        {"dtype", std::string(dtype_name(o.dtype))},
        {"repetitions", o.timing.repetitions},
        {"warmup", o.timing.warmup},
        {"min_time", o.timing.min_time},
        {"baseline", c.baseline},
        {"workloads", o.workloads}}},
      {"kiln_devices", devices},
      {"kiln_plugin_load_failures", failures},
  };
}

json cell_json(const RunContext& context, const CellResult& c) {
  const DeviceEntry* d = context.device(c.device);
  const std::string name = c.workload + "/" + c.device;
  json b = {{"name", name},
            {"run_name", name},
            {"run_type", "iteration"},
            {"repetitions", c.repetitions},
            {"threads", 1},
            {"workload", c.workload},
            {"device", c.device},
            {"device_name", d ? d->info.name : ""},
            {"dtype", c.dtype},
            {"shape", c.shape}};
  if (!c.ok) {
    if (!c.applicable) b["not_applicable"] = true;
    b["error_occurred"] = true;
    b["error_message"] = c.error;
    b["iterations"] = 0;
    b["real_time"] = 0;
    b["cpu_time"] = 0;
    b["time_unit"] = "ns";
    return b;
  }
  const Stats& s = c.seconds;
  b["iterations"] = c.steps_per_repetition * c.repetitions;
  b["real_time"] = s.median * 1e9;
  b["cpu_time"] = c.cpu_seconds * 1e9;
  b["time_unit"] = "ns";
  b["min_time_ns"] = s.min * 1e9;
  b["max_time_ns"] = s.max * 1e9;
  b["mean_time_ns"] = s.mean * 1e9;
  b["stddev_time_ns"] = s.stddev * 1e9;
  b["spread"] = s.spread;
  b["noisy"] = c.noisy();
  b["steps_per_repetition"] = c.steps_per_repetition;
  b["throughput"] = c.throughput;
  b["throughput_unit"] = throughput_unit(c.unit);
  b["relative_to_baseline"] = c.relative > 0 ? json(c.relative) : json(nullptr);
  b["fallback_calls"] = c.fallbacks.calls;
  b["fallback_calls_per_step"] = c.fallbacks.calls_per_step;
  b["fallback_ops"] = c.fallbacks.ops;
  return b;
}

}  // namespace

nlohmann::json json_report(const RunContext& context, const std::vector<CellResult>& cells) {
  json benchmarks = json::array();
  for (const CellResult& c : cells) benchmarks.push_back(cell_json(context, c));
  return {{"context", context_json(context)}, {"benchmarks", benchmarks}};
}

}  // namespace kiln::bench
