// What a stopped Profiler gives back: the Chrome trace (the Trace Event Format that
// Perfetto UI and chrome://tracing load) and key_averages tables.
#include <algorithm>
#include <cstdio>
#include <map>
#include <nlohmann/json.hpp>
#include <sstream>

#include "kiln/error.h"
#include "kiln/io/atomic_file.h"
#include "kiln/profiler.h"

namespace kiln::profiler {

namespace {

using json = nlohmann::json;

constexpr int kHostPid = 0;

double us(int64_t ns) { return static_cast<double>(ns) / 1000.0; }

// Per event, the host time of the events directly nested in it (same thread, inside
// its interval): what makes self time. `events` are sorted by start, longest first.
std::vector<int64_t> child_time(const std::vector<Event>& events) {
  std::vector<int64_t> children(events.size(), 0);
  std::map<int, std::vector<size_t>> open;  // per thread, a stack of enclosing events
  for (size_t i = 0; i < events.size(); ++i) {
    std::vector<size_t>& stack = open[events[i].thread];
    while (!stack.empty() && events[stack.back()].end_ns <= events[i].start_ns) stack.pop_back();
    if (!stack.empty() && events[i].end_ns <= events[stack.back()].end_ns)
      children[stack.back()] += events[i].end_ns - events[i].start_ns;
    stack.push_back(i);
  }
  return children;
}

}  // namespace

std::string Profiler::chrome_trace() const {
  require_stopped("chrome_trace");
  json trace = json::array();
  auto meta = [&](const char* what, int pid, int tid, const std::string& name) {
    trace.push_back(
        {{"ph", "M"}, {"name", what}, {"pid", pid}, {"tid", tid}, {"args", {{"name", name}}}});
  };
  meta("process_name", kHostPid, 0, "Kiln (host threads)");
  std::map<std::string, int> device_pid;  // one process per device, its default stream
  auto pid_of = [&](const std::string& device) {
    auto [it, added] = device_pid.emplace(device, static_cast<int>(device_pid.size()) + 1);
    if (added) {
      meta("process_name", it->second, 0, device + " (device)");
      meta("thread_name", it->second, 0, "default stream");
    }
    return it->second;
  };
  std::map<int, bool> threads;
  for (const Event& e : events_) {
    if (!threads[e.thread]) {
      threads[e.thread] = true;
      meta("thread_name", kHostPid, e.thread, "host thread " + std::to_string(e.thread));
    }
    json args = {{"phase", phase_name(e.phase)}, {"id", e.id}};
    if (e.kind == Event::Kind::Op) {
      args["device"] = e.device;
      if (!e.shapes.empty()) args["inputs"] = e.shapes;
      args["bytes_allocated"] = e.bytes_allocated;
      args["fallback"] = e.fallback;
    }
    trace.push_back({{"ph", "X"},
                     {"cat", e.kind == Event::Kind::Op ? "op" : "user_annotation"},
                     {"name", e.name},
                     {"pid", kHostPid},
                     {"tid", e.thread},
                     {"ts", us(e.start_ns)},
                     {"dur", us(e.end_ns - e.start_ns)},
                     {"args", args}});
    if (e.kind != Event::Kind::Op || e.device_start_ns < 0) continue;
    const int pid = pid_of(e.device);
    trace.push_back({{"ph", "X"},
                     {"cat", "kernel"},
                     {"name", e.name},
                     {"pid", pid},
                     {"tid", 0},
                     {"ts", us(e.device_start_ns)},
                     {"dur", us(e.device_end_ns - e.device_start_ns)},
                     {"args", {{"id", e.id}, {"inputs", e.shapes}}}});
    // A flow arrow from the launch on the host to the execution on the device.
    trace.push_back({{"ph", "s"},
                     {"cat", "launch"},
                     {"name", "launch"},
                     {"id", e.id},
                     {"pid", kHostPid},
                     {"tid", e.thread},
                     {"ts", us(e.start_ns)}});
    trace.push_back({{"ph", "f"},
                     {"bp", "e"},
                     {"cat", "launch"},
                     {"name", "launch"},
                     {"id", e.id},
                     {"pid", pid},
                     {"tid", 0},
                     {"ts", us(e.device_start_ns)}});
  }
  for (const MemorySample& m : memory_)
    trace.push_back({{"ph", "C"},
                     {"name", "memory " + m.device},
                     {"pid", pid_of(m.device)},
                     {"tid", 0},
                     {"ts", us(m.time_ns)},
                     {"args", {{"bytes_in_use", m.bytes_in_use}}}});
  json doc = {{"traceEvents", std::move(trace)},
              {"displayTimeUnit", "ms"},
              {"otherData", {{"producer", "kiln::profiler"}}}};
  return doc.dump(-1, ' ', false, json::error_handler_t::replace);
}

void Profiler::export_chrome_trace(const std::filesystem::path& path) const {
  const std::string text = chrome_trace();
  io::AtomicFileWriter out(path);
  out.write(text.data(), text.size());
  out.commit();
}

KeyAverages Profiler::key_averages(bool group_by_shapes) const {
  require_stopped("key_averages");
  const std::vector<int64_t> children = child_time(events_);
  std::map<std::pair<std::string, std::string>, KeyAverage> rows;
  for (size_t i = 0; i < events_.size(); ++i) {
    const Event& e = events_[i];
    KeyAverage& r = rows[{e.name, group_by_shapes ? e.shapes : std::string()}];
    r.name = e.name;
    r.shapes = group_by_shapes ? e.shapes : "";
    ++r.calls;
    r.host_total_us += us(e.end_ns - e.start_ns);
    r.host_self_us += us(e.end_ns - e.start_ns - children[i]);
    if (e.device_start_ns >= 0) {
      r.device_total_us += us(e.device_end_ns - e.device_start_ns);
      ++r.device_calls;
    }
    r.bytes_allocated += e.bytes_allocated;
    r.fallbacks += e.fallback;
  }
  KeyAverages out;
  for (auto& [key, row] : rows) out.rows.push_back(std::move(row));
  return out;
}

std::string KeyAverages::table(SortBy sort_by, size_t limit) const {
  std::vector<KeyAverage> sorted = rows;
  auto key = [&](const KeyAverage& r) {
    switch (sort_by) {
      case SortBy::HostTotal:
        return r.host_total_us;
      case SortBy::HostSelf:
        return r.host_self_us;
      case SortBy::DeviceTotal:
        return r.device_total_us;
      case SortBy::Calls:
        return static_cast<double>(r.calls);
      case SortBy::Name:
        return 0.0;
    }
    return 0.0;
  };
  std::stable_sort(sorted.begin(), sorted.end(), [&](const KeyAverage& a, const KeyAverage& b) {
    return sort_by == SortBy::Name ? a.name < b.name : key(a) > key(b);
  });
  double self_sum = 0;
  for (const KeyAverage& r : rows) self_sum += r.host_self_us;
  const size_t shown = limit == 0 ? sorted.size() : std::min(limit, sorted.size());
  size_t width = 4;
  bool shapes = false;
  for (size_t i = 0; i < shown; ++i) {
    width = std::max(width, sorted[i].name.size());
    shapes = shapes || !sorted[i].shapes.empty();
  }
  std::ostringstream out;
  char line[512];
  std::snprintf(line, sizeof line, "%-*s %8s %12s %7s %12s %12s %12s %10s%s\n",
                static_cast<int>(width), "Name", "Calls", "Self host", "Self %", "Host total",
                "Host avg", "Device total", "Fallbacks", shapes ? "  Input shapes" : "");
  out << line << std::string(width + 82, '-') << "\n";
  for (size_t i = 0; i < shown; ++i) {
    const KeyAverage& r = sorted[i];
    const double share = self_sum > 0 ? 100.0 * r.host_self_us / self_sum : 0.0;
    std::snprintf(line, sizeof line,
                  "%-*s %8lld %10.1fus %6.1f%% %10.1fus %10.2fus %10.1fus %10lld",
                  static_cast<int>(width), r.name.c_str(), static_cast<long long>(r.calls),
                  r.host_self_us, share, r.host_total_us, r.host_avg_us(), r.device_total_us,
                  static_cast<long long>(r.fallbacks));
    out << line;
    if (shapes) out << "  " << r.shapes;
    out << "\n";
  }
  std::snprintf(line, sizeof line, "Self host time total: %.1fus over %zu rows%s\n", self_sum,
                rows.size(), shown < sorted.size() ? " (top rows shown)" : "");
  out << line;
  return out.str();
}

}  // namespace kiln::profiler
