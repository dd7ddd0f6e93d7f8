#pragma once
// The comparison's chart: grouped bars, one group per workload and one bar per device,
// the bar's height the device's speed relative to the baseline device (1 = as fast;
// higher is faster), on a log scale when the figures span more than 10x. A bar whose
// device ran ops through the CPU fallback is labelled with a '*'.
//
// Drawn by gnuplot (Debian: gnuplot-nox), an optional dependency: without it on PATH
// the chart is skipped and the caller says so; the data and the script stay in the
// folder, so `cd DIR && gnuplot compare.gp` draws it later on any machine.

#include <filesystem>
#include <string>
#include <vector>

#include "context.h"
#include "runner.h"

namespace kiln::bench {

struct ChartResult {
  bool drawn = false;
  std::string message;  ///< the files drawn, or why the chart was skipped
};

/// Writes `dir`/compare.dat and compare.gp, then runs gnuplot in `dir` to draw
/// compare.svg and compare.png (each written to a temporary file, then put in place
/// atomically). Throws kiln::Error when the data or script cannot be written; a missing
/// or failing gnuplot, or no figure to draw, comes back as drawn == false.
ChartResult draw_chart(const std::filesystem::path& dir, const RunContext& context,
                       const std::vector<CellResult>& cells);

/// The full path of an executable `program` in a folder of PATH, or "".
std::string find_on_path(const std::string& program);

}  // namespace kiln::bench
