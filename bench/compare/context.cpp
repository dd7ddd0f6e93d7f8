#include "context.h"

#include <cblas.h>
#include <kiln/runtime.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <fstream>
#include <thread>

namespace kiln::bench {

namespace {

// As Google Benchmark writes its context's date: local time with the UTC offset.
std::string iso_date_now() {
  std::time_t now = std::time(nullptr);
  std::tm local{};
  localtime_r(&now, &local);
  char text[40], zone[8];
  std::strftime(text, sizeof text, "%Y-%m-%dT%H:%M:%S", &local);
  std::strftime(zone, sizeof zone, "%z", &local);  // +0000
  std::string z(zone);
  if (z.size() == 5) z.insert(3, ":");
  return std::string(text) + z;
}

int cpu_mhz() {
  std::ifstream in("/proc/cpuinfo");
  std::string line;
  while (std::getline(in, line))
    if (line.rfind("cpu MHz", 0) == 0) {
      auto colon = line.find(':');
      if (colon != std::string::npos) return std::atoi(line.c_str() + colon + 1);
    }
  return 0;
}

std::string human_bytes(uint64_t bytes) {
  char text[32];
  std::snprintf(text, sizeof text, "%.1f GiB", double(bytes) / double(1ull << 30));
  return text;
}

}  // namespace

const DeviceEntry* RunContext::device(const std::string& spec) const {
  for (const DeviceEntry& d : devices)
    if (d.spec == spec) return &d;
  return nullptr;
}

std::string RunContext::openblas_line() const {
  return openblas_config + ", core " + openblas_core + ", " + std::to_string(openblas_threads) +
         " threads (OPENBLAS_CORETYPE=" + openblas_coretype_env + ")";
}

std::string RunContext::describe(const DeviceEntry& d) {
  if (!d.usable && d.plugin.empty()) return "unusable: " + d.reason;
  const DeviceInfo& i = d.info;
  std::string text = i.name + " [" + i.kind;
  if (i.compute_capability_major)
    text += ", compute " + std::to_string(i.compute_capability_major) + "." +
            std::to_string(i.compute_capability_minor);
  if (i.multiprocessor_count)
    text += ", " + std::to_string(i.multiprocessor_count) +
            (i.kind == "cpu" ? " threads" : " multiprocessors");
  if (i.total_memory_bytes) text += ", " + human_bytes(i.total_memory_bytes);
  text += "], plugin " + d.plugin + " " + d.plugin_version + " (ABI " + d.plugin_abi + ")";
  if (!d.usable) text += "; unusable: " + d.reason;
  return text;
}

RunContext collect_context(const CompareOptions& options, std::vector<DeviceEntry> devices,
                           std::string baseline, const std::string& executable) {
  RunContext c;
  c.date = iso_date_now();
  char host[256] = {};
  if (gethostname(host, sizeof host - 1) == 0) c.host_name = host;
  c.executable = executable;
  c.num_cpus = std::thread::hardware_concurrency();
  c.mhz_per_cpu = cpu_mhz();
  if (getloadavg(c.load_avg, 3) < 0) c.load_avg[0] = c.load_avg[1] = c.load_avg[2] = 0;
  c.kiln_version = kiln::version();
  c.kiln_abi_version = kiln::abi_version();
  c.openblas_config = openblas_get_config();
  c.openblas_core = openblas_get_corename();
  c.openblas_threads = openblas_get_num_threads();
  const char* coretype = std::getenv("OPENBLAS_CORETYPE");
  c.openblas_coretype_env = coretype ? coretype : "(unset)";
  c.options = options;
  c.devices = std::move(devices);
  c.load_failures = kiln::plugin_load_failures();
  c.baseline = std::move(baseline);
  return c;
}

}  // namespace kiln::bench
