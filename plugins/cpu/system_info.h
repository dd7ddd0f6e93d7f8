// system_info.h — what the plugin reports about the machine it runs on.
#ifndef KILN_CPU_SYSTEM_INFO_H
#define KILN_CPU_SYSTEM_INFO_H

#include <cstdint>
#include <optional>
#include <string>

namespace kiln::cpu {

/// The first "model name" in /proc/cpuinfo (e.g. "AMD EPYC 7B13"), or "unknown CPU".
std::string cpu_model_name();

/// Physical memory in bytes (sysconf), 0 if unknown.
uint64_t total_memory_bytes();

/// MemAvailable from /proc/meminfo, else free pages from sysconf; 0 if unknown.
uint64_t available_memory_bytes();

/// "OpenBLAS 0.3.21, core Haswell" from the linked library itself.
std::string blas_description();

/// Parses environment variable `name` as a decimal integer in [min, max].
/// Returns std::nullopt when unset or empty; sets `*error` (and returns nullopt) when set but
/// not a valid integer in range.
std::optional<int> int_from_env(const char* name, int min, int max, std::string* error);

}  // namespace kiln::cpu

#endif  // KILN_CPU_SYSTEM_INFO_H
