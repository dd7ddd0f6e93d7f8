#!/usr/bin/env python3
"""Joins Kiln's and PyTorch's figures from one GPU run into one table (issue 22).

    python3 bench/same_run_table.py --kiln kiln.json --torch torch.jsonl \\
        [--libtorch libtorch.jsonl] [--torch-clock events|wall] [--json merged.json]

--kiln: kiln-bench's Google Benchmark JSON (--benchmark_out=FILE
--benchmark_out_format=json), with or without repetitions (a "median" aggregate is
preferred, else the median of the runs). --torch: bench/torch_reference.py's JSON lines.
--libtorch: the JSON lines of bench/libtorch_reference.cpp (optional). Standard library
only. Prints a markdown table on stdout: per workload Kiln's time, PyTorch's, the ratio
PyTorch time / Kiln time (> 1: Kiln is faster), both throughputs and, for the
memory-bound workloads, the fraction of the device-to-device copy bandwidth each
reaches (the best copy measured in the run: cudaMemcpyAsync, Kiln's copy_ or PyTorch's).
Exit status 0 when at least one workload has both figures, 1 when none has, 2 for
unreadable input.
"""

import argparse
import json
import math
import statistics
import sys

GB = 1e9
E24, E26 = 1 << 24, 1 << 26

# name (shared with torch_reference.py), label, Kiln's benchmark, bytes, flops.
# Bytes: what the workload must move at least (inputs read once, outputs written once).
# Flops: 2n^3 for a GEMM; 2·N·O·H·W·C·9 per convolution pass (forward, weight gradient
# and, for conv2, input gradient).


def _conv_flops(n, c, o, hw, passes):
    return passes * 2.0 * n * o * hw * hw * c * 9


WORKLOADS = [
    ("sum", "sum 2^24 f32", "BM_KilnReduce/sum/manual_time", 4 * E24, None),
    ("mean", "mean 2^24 f32", "BM_KilnReduce/mean/manual_time", 4 * E24, None),
    ("var", "var 2^24 f32", "BM_KilnReduce/var/manual_time", 4 * E24, None),
    ("max", "max 2^24 f32", "BM_KilnReduce/max/manual_time", 4 * E24, None),
    ("argmax", "argmax 2^24 f32", "BM_KilnReduce/argmax/manual_time", 4 * E24, None),
    ("norm", "2-norm 2^24 f32", "BM_KilnReduce/norm/manual_time", 4 * E24, None),
    ("cumsum", "cumsum 2^24 f32", "BM_KilnScanSort/cumsum/manual_time", 8 * E24, None),
    ("sort", "sort 2^24 f32", "BM_KilnScanSort/sort/manual_time", 16 * E24, None),
    ("sort_rows", "sort rows of 4096x4096 f32", "BM_KilnScanSort/sort_rows/manual_time",
     16 * E24, None),
    ("sort_short_rows", "sort rows of 65536x256 f32",
     "BM_KilnScanSort/sort_short_rows/manual_time", 16 * E24, None),
    ("conv1_bias_grad", "conv1 bias grad (sum N,H,W of 256x32x28x28)",
     "BM_KilnBiasGrad/conv1/manual_time", 4 * 256 * 32 * 28 * 28, None),
    ("conv2_bias_grad", "conv2 bias grad (sum N,H,W of 256x64x14x14)",
     "BM_KilnBiasGrad/conv2/manual_time", 4 * 256 * 64 * 14 * 14, None),
    ("add", "add 2^26 f32 (new output)", "BM_KilnElementwise/add/manual_time", 12 * E26, None),
    ("mul", "mul 2^26 f32 (new output)", "BM_KilnElementwise/mul/manual_time", 12 * E26, None),
    ("relu", "relu 2^26 f32 (new output)", "BM_KilnElementwise/relu/manual_time", 8 * E26, None),
    ("copy_d2d", "copy_ 2^26 f32 device to device", "BM_KilnCopy/manual_time", 8 * E26, None),
    ("gemm_f32", "matmul 4096^3 f32", "BM_KilnGemm/f32/manual_time", None, 2.0 * 4096**3),
    ("gemm_tf32", "matmul 4096^3 TF32", "BM_KilnGemm/tf32/manual_time", None, 2.0 * 4096**3),
    ("gemm_bf16", "matmul 4096^3 bf16", "BM_KilnGemm/bf16/manual_time", None, 2.0 * 4096**3),
    ("conv1", "conv 1->32 28x28 b256 fwd+bwd f32", "BM_KilnConv/conv1/manual_time", None,
     _conv_flops(256, 1, 32, 28, 2)),
    ("conv2", "conv 32->64 14x14 b256 fwd+bwd f32", "BM_KilnConv/conv2/manual_time", None,
     _conv_flops(256, 32, 64, 14, 3)),
    ("conv1_tf32", "conv 1->32 fwd+bwd TF32", "BM_KilnConv/conv1_tf32/manual_time", None,
     _conv_flops(256, 1, 32, 28, 2)),
    ("conv2_tf32", "conv 32->64 fwd+bwd TF32", "BM_KilnConv/conv2_tf32/manual_time", None,
     _conv_flops(256, 32, 64, 14, 3)),
]
# The raw copy in Kiln's process: the bandwidth ceiling beside the two copy_ figures.
CUDA_MEMCPY = ("BM_CudaCopy/two_streams/manual_time", 8 * E26)

UNIT_TO_US = {"ns": 1e-3, "us": 1.0, "ms": 1e3, "s": 1e6}


def fail(msg):
    print("same_run_table.py: " + msg, file=sys.stderr)
    sys.exit(2)


def read_kiln(path):
    """{benchmark name: (microseconds or None, error message or None)}, plus the context."""
    try:
        with open(path) as f:
            doc = json.load(f)
    except (OSError, ValueError) as exc:
        fail("--kiln %s: %s" % (path, exc))
    runs = {}
    for b in doc.get("benchmarks", []):
        name = b.get("run_name") or b.get("name", "")
        runs.setdefault(name, []).append(b)
    out = {}
    for name, entries in runs.items():
        medians = [b for b in entries
                   if b.get("run_type") == "aggregate" and b.get("aggregate_name") == "median"]
        plain = [b for b in entries
                 if b.get("run_type", "iteration") == "iteration" and not b.get("error_occurred")]
        errors = [b for b in entries if b.get("error_occurred")]

        def us(b):
            return float(b["real_time"]) * UNIT_TO_US.get(b.get("time_unit", "ns"), 1e-3)

        if medians:
            out[name] = (us(medians[0]), None)
        elif plain:
            out[name] = (statistics.median(us(b) for b in plain), None)
        elif errors:
            out[name] = (None, errors[0].get("error_message", "failed"))
    return out, doc.get("context", {})


def read_lines(path, what):
    """{name: record} and the context record of a JSON-lines file."""
    results, context, errors = {}, {}, {}
    try:
        with open(path) as f:
            lines = f.read().splitlines()
    except OSError as exc:
        fail("--%s %s: %s" % (what, path, exc))
    for i, line in enumerate(lines, 1):
        line = line.strip()
        if not line.startswith("{"):
            continue  # warnings or other text mixed in: not ours
        try:
            rec = json.loads(line)
        except ValueError:
            print("same_run_table.py: %s:%d: not JSON, ignored" % (path, i), file=sys.stderr)
            continue
        kind = rec.get("kind", "result")
        if kind == "context":
            context = rec
        elif kind == "error":
            errors[rec.get("name", "?")] = rec.get("error", "failed")
        elif kind == "result" and "name" in rec and "median_us" in rec:
            results[rec["name"]] = rec
    return results, context, errors


def fmt_time(us):
    if us is None:
        return "—"
    if us >= 1000:
        return "%.3g ms" % (us / 1000)
    return "%.3g µs" % us


def fmt_rate(nbytes, flops, us):
    if us is None or us <= 0:
        return ""
    if nbytes:
        gbs = nbytes / (us * 1e-6) / GB
        return "%.0f GB/s" % gbs
    return "%.1f TFLOP/s" % (flops / (us * 1e-6) / 1e12)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--kiln", required=True, help="kiln-bench's Google Benchmark JSON")
    ap.add_argument("--torch", required=True, help="bench/torch_reference.py's JSON lines")
    ap.add_argument("--libtorch", help="bench/libtorch_reference.cpp's JSON lines (optional)")
    # The host clock by default: Kiln is timed that way, and on an H200 CUDA events
    # read 5-7 % less than it for PyTorch's ~25 µs ops (launch and wait included).
    ap.add_argument("--torch-clock", choices=("events", "wall"), default="wall",
                    help="PyTorch's figure: the host clock around batch + wait (default, "
                         "Kiln's own method) or CUDA events")
    ap.add_argument("--json", help="write the merged rows here as JSON too")
    args = ap.parse_args()

    kiln, kiln_ctx = read_kiln(args.kiln)
    torch, torch_ctx, torch_err = read_lines(args.torch, "torch")
    libtorch, lt_ctx, lt_err = ({}, {}, {})
    if args.libtorch:
        libtorch, lt_ctx, lt_err = read_lines(args.libtorch, "libtorch")
    key = "median_us" if args.torch_clock == "events" else "wall_median_us"

    def torch_us(rec):
        if rec is None:
            return None
        v = rec.get(key, rec.get("median_us"))
        return float(v) if v is not None else None

    notes = []
    # The copy ceiling: the best device-to-device copy bandwidth measured in this run.
    copies = {}
    memcpy_us = kiln.get(CUDA_MEMCPY[0], (None, None))[0]
    if memcpy_us:
        copies["cudaMemcpyAsync (Kiln's process)"] = CUDA_MEMCPY[1] / (memcpy_us * 1e-6)
    if kiln.get("BM_KilnCopy/manual_time", (None,))[0]:
        copies["Kiln copy_"] = 8 * E26 / (kiln["BM_KilnCopy/manual_time"][0] * 1e-6)
    if torch_us(torch.get("copy_d2d")):
        copies["PyTorch copy_"] = 8 * E26 / (torch_us(torch["copy_d2d"]) * 1e-6)
    ceiling = max(copies.values()) if copies else None

    rows = []
    for name, label, kiln_name, nbytes, flops in WORKLOADS:
        k_us, k_err = kiln.get(kiln_name, (None, "not in --kiln"))
        t_rec = torch.get(name)
        t_us = torch_us(t_rec)
        if t_rec is not None:
            # The two scripts must count the same work.
            for field, mine in (("bytes", nbytes), ("flops", flops)):
                theirs = t_rec.get(field)
                if mine and theirs and not math.isclose(float(theirs), mine, rel_tol=1e-6):
                    notes.append("%s: torch_reference.py counts %s %s, this table %s"
                                 % (name, field, theirs, mine))
        rows.append({"name": name, "label": label, "kiln_us": k_us, "torch_us": t_us,
                     "kiln_error": k_err if k_us is None else None,
                     "torch_error": None if t_rec else torch_err.get(name, "not in --torch"),
                     "bytes": nbytes, "flops": flops, "against": "PyTorch"})
        if name == "sum" and "sum" in libtorch:
            rows.append({"name": "sum_libtorch", "label": "sum 2^24 f32, vs libtorch C++",
                         "kiln_us": k_us, "torch_us": float(libtorch["sum"]["median_us"]),
                         "kiln_error": None, "torch_error": None, "bytes": nbytes,
                         "flops": None, "against": "libtorch"})
    if args.libtorch and "sum" not in libtorch:
        notes.append("libtorch: no sum figure (%s)" % (lt_err.get("sum") or "see its log"))

    # Header: what ran where.
    print("Same-run ratios: Kiln (kiln-bench) and PyTorch %s eager on %s, one call"
          % (torch_ctx.get("torch", "(not run)"), torch_ctx.get("device", "the GPU")))
    print()
    print("Kiln: %s on %s; PyTorch: CUDA %s, cuDNN %s, %s clock; libtorch: %s"
          % (kiln_ctx.get("date", "?"), kiln_ctx.get("host_name", "?"), torch_ctx.get("cuda", "?"),
             torch_ctx.get("cudnn", "?"), "CUDA-event" if key == "median_us" else "host",
             lt_ctx.get("torch", "not run") if args.libtorch else "not run"))
    print()
    print("| workload | Kiln | PyTorch | PyTorch ÷ Kiln | Kiln throughput | PyTorch throughput "
          "| % of copy bandwidth (Kiln / PyTorch) |")
    print("|---|---:|---:|---:|---:|---:|---:|")
    joined = 0
    for r in rows:
        k, t = r["kiln_us"], r["torch_us"]
        ratio = "%.2f" % (t / k) if k and t else "—"
        if k and t:
            joined += 1
        r["ratio"] = t / k if k and t else None
        frac = ""
        if r["bytes"] and ceiling:
            parts = []
            for us in (k, t):
                parts.append("%.0f %%" % (100 * r["bytes"] / (us * 1e-6) / ceiling) if us else "—")
            frac = " / ".join(parts)
            r["kiln_copy_fraction"] = r["bytes"] / (k * 1e-6) / ceiling if k else None
            r["torch_copy_fraction"] = r["bytes"] / (t * 1e-6) / ceiling if t else None
        other = fmt_time(t) + (" (libtorch)" if r["against"] == "libtorch" else "")
        print("| %s | %s | %s | %s | %s | %s | %s |"
              % (r["label"], fmt_time(k), other, ratio, fmt_rate(r["bytes"], r["flops"], k),
                 fmt_rate(r["bytes"], r["flops"], t), frac))
    print()
    if ceiling:
        print("Copy bandwidth (bytes read + written / time): "
              + "; ".join("%s %.0f GB/s" % (n, bw / GB) for n, bw in copies.items())
              + ". The fractions use the best, %.0f GB/s." % (ceiling / GB))
    else:
        print("Copy bandwidth: not measured (no copy figure on either side).")
    # What is missing, and why: one line for a side with no figures at all.
    if not kiln:
        print("- no Kiln figures in %s" % args.kiln)
    if not torch:
        print("- no PyTorch figures in %s%s" % (args.torch, "".join(
            "; %s: %s" % kv for kv in torch_err.items())))
    for r in rows:
        if kiln and r["kiln_error"]:
            print("- %s: no Kiln figure: %s" % (r["name"], r["kiln_error"]))
        if torch and r["torch_error"]:
            print("- %s: no PyTorch figure: %s" % (r["name"], r["torch_error"]))
    for n in notes:
        print("- " + n)
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"kiln_context": kiln_ctx, "torch_context": torch_ctx,
                       "libtorch_context": lt_ctx, "torch_clock": args.torch_clock,
                       "copy_bandwidth_GB_per_s": {n: bw / GB for n, bw in copies.items()},
                       "rows": rows}, f, indent=1)
    return 0 if joined else 1


if __name__ == "__main__":
    sys.exit(main())
