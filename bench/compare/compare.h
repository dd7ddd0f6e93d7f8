#pragma once
// `kiln-bench compare`: the same workloads on several devices, side by side.
//
//   kiln-bench compare                                   # every device Kiln found
//   kiln-bench compare --devices cpu:0,cuda:0 --workloads gemm,train-cnn --out results
//
// Order of work: parse the command line; make --out and check that it can be written;
// select and open the devices; print what the run is on; time every workload on every
// usable device (runner.h); print the table; write compare.json, .csv, .md and the
// chart into --out. Nothing is timed before every check has passed.

namespace kiln::bench {

/// Runs the comparison; argv[0] is the program, argv[1] "compare". Returns the exit status:
/// 0 when every cell ran; 1 when a cell failed (the reports are still written and say why),
/// --out cannot be written, or no selected device is usable; 2 for a wrong command line (an
/// unknown device, workload or option, a number out of range), with a message on stderr.
/// Never throws.
int run_compare(int argc, char** argv);

}  // namespace kiln::bench
