// `kiln-bench compare`'s parts in process: the statistics, the command line, device
// selection, one cell on a device with every kernel and one on the "minimal" fixture
// plugin (every op but kiln.fill through the CPU fallback), and the CSV's shape.
// CTest runs it with KILN_CPU_DEVICES=2 and the good fixture folder on KILN_PLUGIN_PATH.

#include <gtest/gtest.h>
#include <kiln/error.h>

#include <algorithm>
#include <string>
#include <vector>

#include "compare/devices.h"
#include "compare/options.h"
#include "compare/report.h"
#include "compare/runner.h"
#include "compare/workloads.h"

namespace kb = kiln::bench;

namespace {

// parse_compare_options on a command line written as words after "compare".
int parse(std::vector<std::string> words, kb::CompareOptions& options) {
  words.insert(words.begin(), "compare");
  std::vector<char*> argv;
  for (std::string& w : words) argv.push_back(w.data());
  return kb::parse_compare_options(static_cast<int>(argv.size()), argv.data(), options);
}

kb::DeviceEntry usable_device(const std::string& spec) {
  for (const kb::DeviceEntry& d : kb::select_devices("all"))
    if (d.spec == spec && d.usable) return d;
  ADD_FAILURE() << spec << " is not a usable device here: " << kb::available_devices();
  return {};
}

kb::TimingOptions quick() {
  kb::TimingOptions t;
  t.repetitions = 3;
  t.warmup = 1;
  t.min_time = 0;
  return t;
}

// Splits RFC 4180 CSV into rows of fields.
std::vector<std::vector<std::string>> read_csv(const std::string& text) {
  std::vector<std::vector<std::string>> rows(1, std::vector<std::string>(1));
  bool quoted = false;
  for (size_t i = 0; i < text.size(); ++i) {
    char ch = text[i];
    if (quoted && ch == '"' && i + 1 < text.size() && text[i + 1] == '"') {
      rows.back().back() += '"';
      ++i;
    } else if (ch == '"') {
      quoted = !quoted;
    } else if (!quoted && ch == ',') {
      rows.back().emplace_back();
    } else if (!quoted && ch == '\n') {
      rows.emplace_back(1);
    } else {
      rows.back().back() += ch;
    }
  }
  if (rows.back().size() == 1 && rows.back()[0].empty()) rows.pop_back();
  return rows;
}

}  // namespace

TEST(CompareStats, MedianOfOddAndEvenCountsAndSpread) {
  kb::Stats odd = kb::summarize({3e-3, 1e-3, 2e-3});
  EXPECT_DOUBLE_EQ(odd.median, 2e-3);
  EXPECT_DOUBLE_EQ(odd.min, 1e-3);
  EXPECT_DOUBLE_EQ(odd.max, 3e-3);
  EXPECT_DOUBLE_EQ(odd.spread, 1.0);  // (3 - 1) / 2
  kb::Stats even = kb::summarize({4, 1, 3, 2});
  EXPECT_DOUBLE_EQ(even.median, 2.5);
  EXPECT_DOUBLE_EQ(even.mean, 2.5);
  EXPECT_NEAR(even.stddev, 1.2909944, 1e-6);  // sample standard deviation
  kb::Stats one = kb::summarize({5});
  EXPECT_EQ(one.median, 5);
  EXPECT_EQ(one.stddev, 0);
  EXPECT_EQ(one.spread, 0);
}

TEST(CompareStats, FormatSeconds) {
  EXPECT_EQ(kb::format_seconds(2.5), "2.50 s");
  EXPECT_EQ(kb::format_seconds(1.234e-3), "1.23 ms");
  EXPECT_EQ(kb::format_seconds(12.34e-6), "12.3 µs");
  EXPECT_EQ(kb::format_seconds(812e-9), "812 ns");
  EXPECT_EQ(kb::format_seconds(999.7e-6), "1.00 ms");  // not "1000 µs"
  EXPECT_EQ(kb::format_seconds(99.97e-6), "100 µs");   // not "100.0 µs"
}

TEST(CompareOptions, DefaultsAndValues) {
  kb::CompareOptions o;
  ASSERT_EQ(parse({}, o), -1);
  EXPECT_EQ(o.devices, "all");
  EXPECT_EQ(o.workloads.size(), kb::workloads().size());
  EXPECT_EQ(o.dtype, kiln::float32);
  EXPECT_EQ(o.size, kb::Size::Small);
  EXPECT_EQ(o.timing.repetitions, 10);
  EXPECT_TRUE(o.out.empty());

  kb::CompareOptions p;
  ASSERT_EQ(parse({"--workloads", "train-mlp,gemm,gemm", "--size", "tiny", "--dtype", "float64",
                   "--repetitions", "3", "--warmup", "0", "--min-time", "0.25", "--devices",
                   "cpu:1", "--baseline", "cpu:1", "--out", "results"},
                  p),
            -1);
  EXPECT_EQ(p.workloads, (std::vector<std::string>{"gemm", "train-mlp"}));  // catalogue order
  EXPECT_EQ(p.size, kb::Size::Tiny);
  EXPECT_EQ(p.dtype, kiln::float64);
  EXPECT_EQ(p.timing.repetitions, 3);
  EXPECT_EQ(p.timing.warmup, 0);
  EXPECT_DOUBLE_EQ(p.timing.min_time, 0.25);
  EXPECT_EQ(p.devices, "cpu:1");
  EXPECT_EQ(p.baseline, "cpu:1");
  EXPECT_EQ(p.out, "results");
}

TEST(CompareOptions, WrongValuesExitTwoWithAShortMessage) {
  const std::vector<std::pair<std::vector<std::string>, std::string>> cases = {
      {{"--workloads", "gemm,nosuch"}, "unknown workload 'nosuch'"},
      {{"--repetitions", "0"}, "--repetitions: must be a positive integer, got 0"},
      {{"--warmup", "-1"}, "--warmup: must be a non-negative integer, got -1"},
      {{"--min-time", "1e309"}, "--min-time: must be a number from 0 to 3600"},
      {{"--size", "huge"}, "--size: expected tiny, small or medium, got 'huge'"},
      {{"--dtype", "int64"}, "--dtype: expected float32"},
      {{"--frobnicate"}, "--frobnicate"},
  };
  for (const auto& [words, message] : cases) {
    kb::CompareOptions o;
    testing::internal::CaptureStderr();
    EXPECT_EQ(parse(words, o), 2) << words[0];
    const std::string err = testing::internal::GetCapturedStderr();
    EXPECT_NE(err.find(message), std::string::npos) << err;
    EXPECT_EQ(err.find("179769"), std::string::npos) << "DBL_MAX in: " << err;
  }
}

TEST(CompareDevices, AllListsEveryDeviceCpuFirst) {
  auto devices = kb::select_devices("all");
  ASSERT_GE(devices.size(), 3u);
  EXPECT_EQ(devices[0].spec, "cpu:0");
  EXPECT_EQ(devices[1].spec, "cpu:1");
  EXPECT_TRUE(std::any_of(devices.begin(), devices.end(),
                          [](auto& d) { return d.spec == "minimal:0" && d.usable; }));
  // Every device of the test plugins is usable; a plugin that loaded with no device (the
  // CUDA plugin on a machine without a GPU) is listed as unusable, with its reason.
  for (const auto& d : devices) {
    if (d.plugin == "cpu" || d.plugin == "minimal") {
      EXPECT_TRUE(d.usable) << d.spec << ": " << d.reason;
    }
    if (d.usable) {
      EXPECT_FALSE(d.info.name.empty()) << d.spec;
      EXPECT_FALSE(d.plugin_version.empty()) << d.spec;
      EXPECT_FALSE(d.plugin_abi.empty()) << d.spec;
    } else {
      EXPECT_FALSE(d.reason.empty()) << d.spec;
    }
  }
}

TEST(CompareDevices, NamedDevicesKeepTheirOrder) {
  auto devices = kb::select_devices("minimal,cpu:1");
  ASSERT_EQ(devices.size(), 2u);
  EXPECT_EQ(devices[0].spec, "minimal:0");
  EXPECT_EQ(devices[1].spec, "cpu:1");
  EXPECT_EQ(devices[1].plugin, "cpu");
}

TEST(CompareDevices, WrongNamesAreUsageErrors) {
  for (const char* spec : {"nosuch", "cpu:2", "cpu:0,cpu", "cpu:0,", "CPU", "cpu:x"}) {
    try {
      kb::select_devices(spec);
      ADD_FAILURE() << "'" << spec << "' was accepted";
    } catch (const kb::UsageError& e) {
      EXPECT_NE(std::string(e.what()).find("--devices"), std::string::npos) << e.what();
    }
  }
}

TEST(CompareRunner, CellOnTheCpuHasNoFallbacks) {
  kb::DeviceEntry cpu1 = usable_device("cpu:1");
  kb::CellResult c =
      kb::run_cell(*kb::find_workload("gemm"), cpu1, kiln::float32, kb::Size::Tiny, quick());
  ASSERT_TRUE(c.ok) << c.error;
  EXPECT_EQ(c.device, "cpu:1");
  EXPECT_EQ(c.shape, "64x64x64");
  EXPECT_GT(c.seconds.median, 0);
  EXPECT_LE(c.seconds.min, c.seconds.median);
  EXPECT_GE(c.seconds.max, c.seconds.median);
  EXPECT_EQ(c.repetitions, 3);
  EXPECT_GE(c.steps_per_repetition, 1);
  EXPECT_NEAR(c.throughput, 2.0 * 64 * 64 * 64 / c.seconds.median / 1e9, 1e-6 * c.throughput);
  EXPECT_EQ(c.fallbacks.calls, 0u);
}

TEST(CompareRunner, CellOnAPluginWithoutKernelsCountsItsFallbacks) {
  kb::DeviceEntry minimal = usable_device("minimal:0");
  kb::CellResult c = kb::run_cell(*kb::find_workload("train-mlp"), minimal, kiln::float32,
                                  kb::Size::Tiny, quick());
  ASSERT_TRUE(c.ok) << c.error;
  EXPECT_GT(c.fallbacks.calls, 0u);
  EXPECT_EQ(c.fallbacks.calls_per_step * double(c.steps_per_repetition * c.repetitions),
            double(c.fallbacks.calls));
  EXPECT_NE(std::find(c.fallbacks.ops.begin(), c.fallbacks.ops.end(), "kiln.matmul"),
            c.fallbacks.ops.end());
}

TEST(CompareRunner, AFailingWorkloadIsAFailedCellNotAnException) {
  kb::Workload broken{"broken", "throws",
                      [](const kiln::Device&, kiln::DType, kb::Size) -> kb::PreparedWorkload {
                        throw kiln::Error("no such kernel");
                      }};
  kb::CellResult c =
      kb::run_cell(broken, usable_device("cpu:0"), kiln::float32, kb::Size::Tiny, quick());
  EXPECT_FALSE(c.ok);
  EXPECT_EQ(c.error, "no such kernel");
}

TEST(CompareRunner, RelativeSpeedIsTheBaselinesMedianOverTheCells) {
  std::vector<kb::CellResult> cells(3);
  cells[0].workload = cells[1].workload = cells[2].workload = "gemm";
  cells[0].device = "cpu:0";
  cells[1].device = "acme:0";
  cells[2].device = "broken:0";
  cells[0].ok = cells[1].ok = true;
  cells[0].seconds.median = 4e-3;
  cells[1].seconds.median = 1e-3;
  kb::compute_relative(cells, "cpu:0");
  EXPECT_DOUBLE_EQ(cells[0].relative, 1.0);
  EXPECT_DOUBLE_EQ(cells[1].relative, 4.0);  // four times as fast
  EXPECT_EQ(cells[2].relative, 0);           // failed: no figure
}

TEST(CompareReport, CsvHasEveryColumnOnEveryLine) {
  kb::RunContext context;
  context.baseline = "cpu:0";
  std::vector<kb::CellResult> cells(2);
  cells[0].workload = "conv";
  cells[0].device = "cpu:0";
  cells[0].shape = "batch 2, 8->16 ch";  // a comma: quoted
  cells[0].ok = true;
  cells[0].seconds = kb::summarize({1e-3, 2e-3});
  cells[0].fallbacks.ops = {"kiln.conv2d", "kiln.add"};
  cells[1].workload = "gemm";
  cells[1].device = "acme:0";
  cells[1].error = "kernel said \"no\",\nthen stopped";  // quotes, comma, newline
  const auto rows = read_csv(kb::csv_report(context, cells));
  ASSERT_EQ(rows.size(), 3u);
  for (const auto& row : rows) EXPECT_EQ(row.size(), rows[0].size());
  EXPECT_EQ(rows[1][4], "batch 2, 8->16 ch");
  EXPECT_EQ(rows[1][5], "ok");
  EXPECT_EQ(rows[2][5], "failed");
  EXPECT_EQ(rows[2].back(), "kernel said \"no\",\nthen stopped");
  EXPECT_EQ(rows[1][rows[0].size() - 2], "kiln.conv2d;kiln.add");
}
