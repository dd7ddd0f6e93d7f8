#include "system_info.h"

#include <unistd.h>

#include <cblas.h>

#include <cerrno>
#include <cstdlib>
#include <fstream>
#include <sstream>

namespace kiln::cpu {

namespace {

std::string trim(const std::string& s) {
  const auto first = s.find_first_not_of(" \t");
  if (first == std::string::npos) return {};
  const auto last = s.find_last_not_of(" \t\r\n");
  return s.substr(first, last - first + 1);
}

}  // namespace

std::string cpu_model_name() {
  std::ifstream in("/proc/cpuinfo");
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind("model name", 0) == 0) {
      const auto colon = line.find(':');
      if (colon != std::string::npos) {
        std::string name = trim(line.substr(colon + 1));
        if (!name.empty()) return name;
      }
    }
  }
  return "unknown CPU";
}

uint64_t total_memory_bytes() {
  const long pages = sysconf(_SC_PHYS_PAGES);
  const long page_size = sysconf(_SC_PAGESIZE);
  if (pages <= 0 || page_size <= 0) return 0;
  return static_cast<uint64_t>(pages) * static_cast<uint64_t>(page_size);
}

uint64_t available_memory_bytes() {
  std::ifstream in("/proc/meminfo");
  std::string key;
  uint64_t value = 0;
  std::string unit;
  while (in >> key >> value) {
    std::getline(in, unit);
    if (key == "MemAvailable:") return value * 1024;  // the file states kB
  }
  const long pages = sysconf(_SC_AVPHYS_PAGES);
  const long page_size = sysconf(_SC_PAGESIZE);
  if (pages <= 0 || page_size <= 0) return 0;
  return static_cast<uint64_t>(pages) * static_cast<uint64_t>(page_size);
}

std::string blas_description() {
  // openblas_get_config() reads like "OpenBLAS 0.3.21 DYNAMIC_ARCH NO_AFFINITY Zen ...":
  // keep the first two words, the library's name and version.
  std::istringstream config(openblas_get_config());
  std::string library, version;
  config >> library >> version;
  std::string out = library.empty() ? std::string("OpenBLAS") : library;
  if (!version.empty()) {
    out += ' ';
    out += version;
  }
  if (const char* core = openblas_get_corename()) out += std::string(", core ") + core;
  return out;
}

std::optional<int> int_from_env(const char* name, int min, int max, std::string* error) {
  const char* text = std::getenv(name);
  if (text == nullptr || *text == '\0') return std::nullopt;  // empty counts as unset
  errno = 0;
  char* end = nullptr;
  const long value = std::strtol(text, &end, 10);
  if (end == text || *end != '\0' || errno != 0 || value < min || value > max) {
    *error = std::string(name) + "='" + text + "' is not an integer in [" + std::to_string(min) +
             ", " + std::to_string(max) + "]";
    return std::nullopt;
  }
  return static_cast<int>(value);
}

}  // namespace kiln::cpu
