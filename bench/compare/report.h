#pragma once
// The comparison as people read it: a text table for the terminal, the same table in
// markdown (compare.md, ready to paste into a README), and CSV for spreadsheets.
//
// One row per cell: workload, device, median time per step, spread of the repetitions
// (marked "!" above 10 %), throughput, speed relative to the baseline device (its
// median over this one's: 2.00 is twice as fast) and the CPU fallbacks per step with
// the ops that fell back. Failed cells say "failed" and their error follows the table.

#include <string>
#include <vector>

#include "context.h"
#include "runner.h"

namespace kiln::bench {

/// "1.43 ms", "812 ns", "2.51 s": three significant digits.
std::string format_seconds(double seconds);

/// What the run is on, printed before it starts: date, host, Kiln, OpenBLAS, every
/// device (usable or not, with the reason) and the plugins that did not load.
std::string text_header(const RunContext& context);

/// The workloads with their shapes and how they were timed, the aligned table, and its
/// notes (noisy cells, fallbacks, failures).
std::string text_table(const RunContext& context, const std::vector<CellResult>& cells);

/// compare.md: the header as a list, the table in markdown and the notes.
std::string markdown_report(const RunContext& context, const std::vector<CellResult>& cells);

/// compare.csv: one header line, then one line per cell, times in seconds (RFC 4180
/// quoting). Columns: workload, device, device_name, dtype, shape, status, median_s,
/// min_s, max_s, mean_s, stddev_s, spread, cpu_s, steps_per_repetition, repetitions,
/// throughput, throughput_unit, relative, baseline, fallback_calls_per_step,
/// fallback_ops (';'-separated), error.
std::string csv_report(const RunContext& context, const std::vector<CellResult>& cells);

}  // namespace kiln::bench
