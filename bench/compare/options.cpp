#include "options.h"

#include <CLI/CLI.hpp>

#include <algorithm>
#include <iostream>

#include "cli_checks.h"

namespace kiln::bench {

namespace {

std::vector<std::string> split(const std::string& list) {
  std::vector<std::string> items;
  size_t start = 0;
  while (true) {
    size_t comma = list.find(',', start);
    items.push_back(
        list.substr(start, comma == std::string::npos ? std::string::npos : comma - start));
    if (comma == std::string::npos) return items;
    start = comma + 1;
  }
}

// "all" or names from workloads(); the result keeps workloads() order, without repeats.
std::vector<std::string> parse_workloads(const std::string& list) {
  std::vector<std::string> chosen;
  const std::vector<std::string> names = split(list);
  for (const std::string& name : names)
    if (name != "all" && !find_workload(name))
      throw CLI::ValidationError("--workloads", "unknown workload '" + name +
                                                    "' (expected all or " + workload_names() + ")");
  const bool all = std::find(names.begin(), names.end(), "all") != names.end();
  for (const Workload& w : workloads())
    if (all || std::find(names.begin(), names.end(), w.name) != names.end())
      chosen.push_back(w.name);
  return chosen;
}

Size parse_size(const std::string& text) {
  for (Size s : {Size::Tiny, Size::Small, Size::Medium})
    if (text == size_name(s)) return s;
  throw CLI::ValidationError("--size", "expected tiny, small or medium, got '" + text + "'");
}

DType parse_dtype(const std::string& text) {
  for (DType d : {float32, float64, float16, bfloat16})
    if (text == dtype_name(d)) return d;
  throw CLI::ValidationError("--dtype",
                             "expected float32, float64, float16 or bfloat16, got '" + text + "'");
}

}  // namespace

int parse_compare_options(int argc, char** argv, CompareOptions& options) {
  CLI::App app{
      "kiln-bench compare: runs the same workloads on several devices and prints, per workload\n"
      "and device, the median time per step, the spread of the repetitions, the throughput, the\n"
      "speed relative to a baseline device and the ops that fell back to the CPU plugin.\n"
      "KILN_BACKEND plays no part: the devices are those of --devices.\n\n"
      "  kiln-bench compare                                    # every device Kiln found\n"
      "  KILN_CPU_DEVICES=2 kiln-bench compare --devices cpu:0,cpu:1 --out results\n\n"
      "Exit status: 0, also when a device cannot run a workload by design (an n/a cell: a\n"
      "graph on a plugin that lacks kernels); 1 when a cell failed or nothing could run (an\n"
      "unwritable --out, no usable device); 2 on a wrong command line (an unknown device,\n"
      "workload or option).",
      "kiln-bench compare"};
  std::string workloads = "all", dtype = "float32", size = "small";
  app.add_option("--devices", options.devices,
                 "'all' (every device of every loaded plugin) or a comma-separated list, e.g. "
                 "cpu:0,cuda:0,acme (a name alone is device 0)")
      ->capture_default_str();
  app.add_option("--workloads", workloads,
                 "'all' or a comma-separated list of: " + workload_names())
      ->capture_default_str();
  app.add_option("--dtype", dtype,
                 "element type of every workload: float32, float64, float16, bfloat16")
      ->capture_default_str();
  app.add_option("--size", size, "tiny (for tests), small or medium (the suites' sizes)")
      ->capture_default_str();
  app.add_option("--repetitions", options.timing.repetitions,
                 "timed repetitions per cell; the median and spread are taken over them")
      ->check(kiln::train::integer_in(1, 1000000))
      ->capture_default_str();
  app.add_option(
         "--warmup", options.timing.warmup,
         "untimed steps per cell before timing (warm-up also lasts a fifth of --min-time at least)")
      ->check(kiln::train::integer_in(0, 1000000))
      ->capture_default_str();
  app.add_option("--min-time", options.timing.min_time,
                 "seconds of timed steps per cell at least: a repetition repeats the step to last "
                 "min-time / repetitions")
      ->check(kiln::train::number_in(0, 3600))
      ->capture_default_str();
  app.add_option("--out", options.out,
                 "folder (created if missing) for compare.json (Google Benchmark's schema), "
                 "compare.csv, compare.md and the chart compare.svg/.png (gnuplot, if installed)");
  app.add_option("--baseline", options.baseline,
                 "device the others are compared with (default: the first usable device)");
  try {
    app.parse(argc, argv);
    options.workloads = parse_workloads(workloads);
    options.size = parse_size(size);
    options.dtype = parse_dtype(dtype);
  } catch (const CLI::ParseError& e) {
    if (e.get_exit_code() == 0) return app.exit(e);  // --help: the usage, on stdout
    std::cerr << "kiln-bench compare: " << e.what() << "\nRun with --help for more information.\n";
    return 2;
  }
  return -1;
}

}  // namespace kiln::bench
