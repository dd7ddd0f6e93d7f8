#include "report.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <sstream>

namespace kiln::bench {

namespace {

std::string printf_string(const char* format, double value) {
  char text[64];
  std::snprintf(text, sizeof text, format, value);
  return text;
}

// Three significant digits: 187, 18.7, 1.87.
std::string three_digits(double value) {
  const char* format = value >= 99.95 ? "%.0f" : value >= 9.995 ? "%.1f" : "%.2f";
  return printf_string(format, value);
}

std::string format_throughput(const CellResult& c) {
  return three_digits(c.throughput) + " " + throughput_unit(c.unit);
}

std::string format_fallbacks(const FallbackCount& f) {
  if (f.calls == 0) return "none";
  std::string text = three_digits(f.calls_per_step) + "/step (";
  const size_t shown = std::min<size_t>(f.ops.size(), 2);
  for (size_t i = 0; i < shown; ++i) text += (i ? ", " : "") + f.ops[i];
  if (f.ops.size() > shown) text += ", +" + std::to_string(f.ops.size() - shown) + " ops";
  return text + ")";
}

using Row = std::vector<std::string>;

Row header_row(const RunContext& context) {
  return {"workload",     "device",
          "median",       "spread",
          "throughput",   context.baseline.empty() ? "relative" : "vs " + context.baseline,
          "CPU fallbacks"};
}

std::vector<Row> cell_rows(const std::vector<CellResult>& cells) {
  std::vector<Row> rows;
  for (const CellResult& c : cells) {
    if (!c.ok) {
      rows.push_back({c.workload, c.device, c.status(), "-", "-", "-", "-"});
      continue;
    }
    rows.push_back({c.workload, c.device, format_seconds(c.seconds.median),
                    printf_string("%.1f%%", c.seconds.spread * 100) + (c.noisy() ? " !" : ""),
                    format_throughput(c), c.relative > 0 ? printf_string("%.2f", c.relative) : "-",
                    format_fallbacks(c.fallbacks)});
  }
  return rows;
}

// Display width of UTF-8 text (the "µ" of microseconds is two bytes, one column).
size_t columns(const std::string& text) {
  size_t n = 0;
  for (unsigned char ch : text) n += (ch & 0xC0) != 0x80;
  return n;
}

std::string notes(const RunContext& context, const std::vector<CellResult>& cells, bool markdown) {
  std::ostringstream out;
  const char* bullet = markdown ? "- " : "  ";
  bool noisy = std::any_of(cells.begin(), cells.end(), [](auto& c) { return c.noisy(); });
  bool fallbacks =
      std::any_of(cells.begin(), cells.end(), [](auto& c) { return c.fallbacks.calls > 0; });
  if (!context.baseline.empty())
    out << bullet << "Relative speed: " << context.baseline
        << "'s median over the device's (higher is faster).\n";
  if (noisy)
    out << bullet << "! spread (max - min) / median above " << int(kNoisySpread * 100)
        << "%: the repetitions disagree; rerun on an idle machine or with more "
           "--repetitions / --min-time.\n";
  if (fallbacks)
    out << bullet
        << "CPU fallbacks: ops the device's plugin lacks ran on the CPU plugin "
           "(with copies), per step; their time is part of the device's.\n";
  for (const CellResult& c : cells)
    if (!c.ok) {
      std::string error = c.error;  // one line, so that it stays one list item
      std::replace(error.begin(), error.end(), '\n', ' ');
      out << bullet << c.workload << " on " << c.device
          << (c.applicable ? " failed: " : " is not applicable: ") << error << "\n";
    }
  return out.str();
}

std::string csv_field(const std::string& text) {
  if (text.find_first_of(",\"\n") == std::string::npos) return text;
  std::string quoted = "\"";
  for (char ch : text) quoted += ch == '"' ? std::string("\"\"") : std::string(1, ch);
  return quoted + "\"";
}

std::string number(double value) { return printf_string("%.9g", value); }

// The workloads with the shape each ran at, and how they were timed.
std::string workload_list(const RunContext& c, const std::vector<CellResult>& cells,
                          bool markdown) {
  std::ostringstream out;
  const TimingOptions& t = c.options.timing;
  out << (markdown ? "- " : "") << "Workloads (" << size_name(c.options.size) << ", "
      << dtype_name(c.options.dtype) << "; median of " << t.repetitions << " repetitions after "
      << t.warmup << "+ warm-up steps (" << t.min_time / 5 << " s at least), " << t.min_time
      << " s timed per cell at least):\n";
  for (const std::string& name : c.options.workloads) {
    const Workload* w = find_workload(name);
    std::string shape;
    for (const CellResult& cell : cells)
      if (cell.workload == name && !cell.shape.empty()) shape = cell.shape;
    if (markdown)
      out << "  - `" << name << "`: ";
    else
      out << "  " << name << std::string(name.size() < 13 ? 13 - name.size() : 1, ' ');
    out << (shape.empty() ? "" : shape + ": ") << (w ? w->description : "") << "\n";
  }
  return out.str();
}

}  // namespace

std::string format_seconds(double s) {
  // The smallest unit in which the figure stays below 1000 once rounded.
  for (auto [scale, unit] : {std::pair{1e9, " ns"}, std::pair{1e6, " µs"}, std::pair{1e3, " ms"}})
    if (s * scale < 999.5) return three_digits(s * scale) + unit;
  return three_digits(s) + " s";
}

std::string text_header(const RunContext& c) {
  std::ostringstream out;
  out << "kiln-bench compare, " << c.date << " on " << c.host_name << " (" << c.num_cpus
      << " hardware threads, load " << printf_string("%.2f", c.load_avg[0]) << ")\n";
  out << "Kiln " << c.kiln_version << " (plugin ABI " << c.kiln_abi_version << "); "
      << c.openblas_line() << "\n";
  out << "Devices:\n";
  for (const DeviceEntry& d : c.devices)
    out << "  " << d.spec << std::string(d.spec.size() < 14 ? 14 - d.spec.size() : 1, ' ')
        << RunContext::describe(d) << (d.spec == c.baseline ? "  (baseline)" : "") << "\n";
  if (!c.load_failures.empty()) {
    out << "Plugins that did not load:\n";
    for (const PluginLoadFailure& f : c.load_failures)
      out << "  " << f.path << ": " << f.reason << "\n";
  }
  return out.str();
}

std::string text_table(const RunContext& context, const std::vector<CellResult>& cells) {
  std::ostringstream out;
  out << workload_list(context, cells, false) << "\n";
  std::vector<Row> rows = cell_rows(cells);
  rows.insert(rows.begin(), header_row(context));
  std::vector<size_t> width(rows[0].size(), 0);
  for (const Row& r : rows)
    for (size_t i = 0; i < r.size(); ++i) width[i] = std::max(width[i], columns(r[i]));
  for (const Row& r : rows) {
    std::string line;
    for (size_t i = 0; i < r.size(); ++i) {
      // Names left-aligned, figures right-aligned, the last column unpadded.
      const std::string pad(width[i] - columns(r[i]), ' ');
      bool left = i < 2 || i + 1 == r.size();
      line += (i ? "  " : "") + (left ? r[i] + (i + 1 == r.size() ? "" : pad) : pad + r[i]);
    }
    out << line << "\n";
  }
  return out.str() + notes(context, cells, false);
}

std::string markdown_report(const RunContext& c, const std::vector<CellResult>& cells) {
  std::ostringstream out;
  out << "- Date: " << c.date << "; host: " << c.host_name << " (" << c.num_cpus
      << " hardware threads, load " << printf_string("%.2f", c.load_avg[0]) << ")\n";
  out << "- Kiln " << c.kiln_version << " (plugin ABI " << c.kiln_abi_version << "); "
      << c.openblas_line() << "\n";
  for (const DeviceEntry& d : c.devices)
    out << "- `" << d.spec << "`: " << RunContext::describe(d) << "\n";
  out << workload_list(c, cells, true) << "\n";
  Row header = header_row(c);
  std::string rule = "|";
  out << "|";
  for (size_t i = 0; i < header.size(); ++i) {
    out << " " << header[i] << " |";
    rule += i < 2 || i + 1 == header.size() ? "---|" : "---:|";
  }
  out << "\n" << rule << "\n";
  for (const Row& r : cell_rows(cells)) {
    out << "|";
    for (const std::string& field : r) out << " " << field << " |";
    out << "\n";
  }
  return out.str() + "\n" + notes(c, cells, true);
}

std::string csv_report(const RunContext& context, const std::vector<CellResult>& cells) {
  std::ostringstream out;
  out << "workload,device,device_name,dtype,shape,status,median_s,min_s,max_s,mean_s,stddev_s,"
         "spread,cpu_s,steps_per_repetition,repetitions,throughput,throughput_unit,relative,"
         "baseline,fallback_calls_per_step,fallback_ops,error\n";
  for (const CellResult& c : cells) {
    const DeviceEntry* d = context.device(c.device);
    std::string ops;
    for (const std::string& op : c.fallbacks.ops) ops += (ops.empty() ? "" : ";") + op;
    const Stats& s = c.seconds;
    out << csv_field(c.workload) << "," << csv_field(c.device) << ","
        << csv_field(d ? d->info.name : "") << "," << c.dtype << "," << csv_field(c.shape) << ","
        << c.status() << ",";
    if (c.ok)
      out << number(s.median) << "," << number(s.min) << "," << number(s.max) << ","
          << number(s.mean) << "," << number(s.stddev) << "," << number(s.spread) << ","
          << number(c.cpu_seconds) << "," << c.steps_per_repetition << "," << c.repetitions << ","
          << number(c.throughput) << "," << throughput_unit(c.unit) << ","
          << (c.relative > 0 ? number(c.relative) : "") << ",";
    else
      out << ",,,,,,,,,,,,";
    out << csv_field(context.baseline) << "," << number(c.fallbacks.calls_per_step) << ","
        << csv_field(ops) << "," << csv_field(c.error) << "\n";
  }
  return out.str();
}

}  // namespace kiln::bench
