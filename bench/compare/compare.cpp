#include "compare.h"

#include <kiln/error.h>
#include <kiln/io/atomic_file.h>
#include <kiln/kiln.h>

#include <filesystem>
#include <iostream>

#include "chart.h"
#include "context.h"
#include "devices.h"
#include "json_report.h"
#include "options.h"
#include "report.h"
#include "runner.h"

namespace kiln::bench {

namespace {

namespace fs = std::filesystem;

// Makes --out and proves a file can be written there, before anything is timed.
void prepare_out(const fs::path& dir) {
  std::error_code ec;
  fs::create_directories(dir, ec);
  KILN_CHECK(!ec, "--out ", dir.string(), ": cannot create the folder: ", ec.message());
  KILN_CHECK(fs::is_directory(dir), "--out ", dir.string(), ": not a folder");
  try {
    io::AtomicFileWriter probe(dir / "compare.json");  // discarded: leaves nothing behind
  } catch (const kiln::Error& e) {
    KILN_FAIL("--out ", dir.string(), ": cannot write there: ", e.what());
  }
}

void write_file(const fs::path& path, const std::string& text) {
  io::AtomicFileWriter out(path);
  out.write(text.data(), text.size());
  out.commit();
}

// --baseline as given, checked against the selection; else the first usable device.
std::string choose_baseline(const std::string& requested, const std::vector<DeviceEntry>& devices) {
  if (requested.empty()) {
    for (const DeviceEntry& d : devices)
      if (d.usable) return d.spec;
    return "";
  }
  std::string spec;
  try {
    spec = Device(requested).str();
  } catch (const kiln::Error& e) {
    throw UsageError(std::string("--baseline: ") + e.what());
  }
  for (const DeviceEntry& d : devices) {
    if (d.spec != spec) continue;
    KILN_CHECK(d.usable, "--baseline ", spec, " is not usable: ", d.reason);
    return spec;
  }
  std::string selected;
  for (const DeviceEntry& d : devices) selected += (selected.empty() ? "" : ", ") + d.spec;
  throw UsageError("--baseline " + requested + " is not among the devices compared (" + selected +
                   ")");
}

int compare(int argc, char** argv) {
  CompareOptions options;
  if (int status = parse_compare_options(argc - 1, argv + 1, options); status >= 0) return status;
  if (!options.out.empty()) prepare_out(options.out);
  // Models and host operands are made on cpu:0 and then moved, whatever KILN_BACKEND says.
  set_default_device(Device("cpu", 0));
  std::vector<DeviceEntry> devices = select_devices(options.devices);
  std::string baseline = choose_baseline(options.baseline, devices);
  const RunContext context = collect_context(options, devices, baseline, argv[0]);
  std::cout << text_header(context) << std::flush;
  KILN_CHECK(!baseline.empty(), "no usable device among those selected (--devices ",
             options.devices, "); kiln-info says what Kiln found");

  std::vector<CellResult> cells;
  for (const std::string& name : options.workloads)
    for (const DeviceEntry& d : context.devices) {
      if (!d.usable) continue;
      std::cerr << "kiln-bench compare: " << name << " on " << d.spec << "..." << std::flush;
      cells.push_back(
          run_cell(*find_workload(name), d, options.dtype, options.size, options.timing));
      const CellResult& c = cells.back();
      std::cerr << " " << (c.ok ? format_seconds(c.seconds.median) : c.status()) << "\n";
    }
  compute_relative(cells, baseline);
  std::cout << "\n" << text_table(context, cells) << std::flush;

  if (!options.out.empty()) {
    const fs::path dir = options.out;
    write_file(dir / "compare.json", json_report(context, cells).dump(2) + "\n");
    write_file(dir / "compare.csv", csv_report(context, cells));
    write_file(dir / "compare.md", markdown_report(context, cells));
    std::cout << "\nWrote " << (dir / "compare.json").string() << ", compare.csv, compare.md\n";
    const ChartResult chart = draw_chart(dir, context, cells);
    std::cout << (chart.drawn ? "Chart: " : "Chart skipped: ") << chart.message << "\n";
  }
  int status = 0;
  for (const CellResult& c : cells)
    if (!c.ok && c.applicable) status = 1;
  // A device named in --devices that could not run is a failed comparison, not rows
  // quietly missing from the table (--devices all lists what is there, usable or not).
  if (options.devices != "all")
    for (const DeviceEntry& d : context.devices)
      if (!d.usable) {
        std::cerr << "kiln-bench compare: " << d.spec
                  << " was named in --devices but is not usable, so it has no rows: " << d.reason
                  << "\n";
        status = 1;
      }
  return status;
}

}  // namespace

int run_compare(int argc, char** argv) {
  try {
    return compare(argc, argv);
  } catch (const UsageError& e) {
    std::cerr << "kiln-bench compare: " << e.what() << "\nRun with --help for more information.\n";
    return 2;
  } catch (const std::exception& e) {
    std::cerr << "kiln-bench compare: error: " << e.what() << "\n";
    return 1;
  }
}

}  // namespace kiln::bench
