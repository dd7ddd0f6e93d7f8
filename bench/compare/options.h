#pragma once
// The command line of `kiln-bench compare`, with its defaults in one place.

#include <kiln/dtype.h>

#include <string>
#include <vector>

#include "runner.h"
#include "workloads.h"

namespace kiln::bench {

struct CompareOptions {
  std::string devices = "all";         ///< "all" or "cpu:0,cuda:0,acme"
  std::vector<std::string> workloads;  ///< names, in workloads() order; every one by default
  DType dtype = float32;
  Size size = Size::Small;
  TimingOptions timing;
  std::string out;       ///< folder for the JSON, CSV, markdown and chart; "" writes none
  std::string baseline;  ///< device the others are compared with; "" means the first usable
};

/// Parses `kiln-bench compare ...` (argv[0] is "compare") into `options`. Returns -1
/// when the options are ready; otherwise the exit status after printing: 0 for --help,
/// 2 for a wrong command line, with a short message on stderr (an unknown option,
/// workload, size or dtype; a number out of range: "--repetitions: must be a positive
/// integer, got 0"). Device names are checked later, by select_devices().
int parse_compare_options(int argc, char** argv, CompareOptions& options);

}  // namespace kiln::bench
