#!/usr/bin/env python3
"""PyTorch eager on CUDA, the same workloads as Kiln's CUDA benchmarks (issue 22).

The PyTorch side of bench/gpu_same_run.sh; bench/cuda_bench.cpp is Kiln's side and
bench/same_run_table.py joins the two by workload name. Run it on the GPU machine with
PyTorch's own libraries, not the ones the Kiln build was linked against:

    env -u LD_LIBRARY_PATH python3 bench/torch_reference.py [--out FILE] [--only REGEX]

Prints one JSON object per line on stdout: first {"kind": "context", ...} (versions,
GPU, timing settings), then one {"kind": "result", "name": ..., "median_us": ...} per
workload (or {"kind": "error", "name": ..., "error": ...} when one fails; the others
still run). --out writes the same lines to FILE as well.

Timing, per workload: warm-up calls first (cuDNN's algorithm choice, the caching
allocator), then `--reps` repetitions; each repetition records a CUDA event, enqueues
`--batch` calls, records a second event and waits for it; the time of one call is the
events' elapsed time / batch, and median_us is the median over the repetitions. Kiln's
side (bench/cuda_bench.cpp) enqueues the same 10 calls per repetition and stops a host
clock after synchronizing; wall_median_us here is that figure for PyTorch (host clock
around the batch and the wait), printed so that the two clocks can be compared.
"""

import argparse
import json
import re
import statistics
import sys
import time

try:
    import torch
    import torch.nn.functional as F
except Exception as exc:  # ImportError, or a library that fails to load
    sys.exit(
        "torch_reference.py: cannot import torch (%s: %s). It needs PyTorch 2.x with CUDA in "
        "this python3; on the GPU machine run it as `env -u LD_LIBRARY_PATH python3 ...` so "
        "that PyTorch loads its own cuDNN." % (type(exc).__name__, exc)
    )

REDUCE_N = 1 << 24  # reductions: 2^24 float32 (64 MiB)
ELEMENTWISE_N = 1 << 26  # add/mul/relu and the copy: 2^26 float32 (256 MiB)
GEMM_N = 4096
# The CNN's two convolutions (kiln-train's CNN): batch, in channels, out channels, H = W,
# and whether the input needs a gradient (the second layer's input is an activation).
CONV_LAYERS = {"conv1": (256, 1, 32, 28, False), "conv2": (256, 32, 64, 14, True)}


def set_tf32(matmul, conv):
    """TF32 for cuBLAS matmuls and cuDNN convolutions, through one API only: PyTorch 2.9+
    refuses some mixes of the legacy allow_tf32 flags and the newer fp32_precision ones."""
    try:
        torch.backends.cuda.matmul.allow_tf32 = matmul
        torch.backends.cudnn.allow_tf32 = conv
    except Exception:  # a PyTorch without the legacy flags
        torch.backends.cuda.matmul.fp32_precision = "tf32" if matmul else "ieee"
        torch.backends.cudnn.conv.fp32_precision = "tf32" if conv else "ieee"


class Timer:
    def __init__(self, reps, batch, warmup):
        self.reps, self.batch, self.warmup = reps, batch, warmup

    def __call__(self, fn):
        for _ in range(self.warmup):
            fn()
        torch.cuda.synchronize()
        events, walls = [], []
        for _ in range(self.reps):
            start = torch.cuda.Event(enable_timing=True)
            end = torch.cuda.Event(enable_timing=True)
            t0 = time.perf_counter()
            start.record()
            for _ in range(self.batch):
                fn()
            end.record()
            end.synchronize()
            walls.append((time.perf_counter() - t0) * 1e6 / self.batch)
            events.append(start.elapsed_time(end) * 1e3 / self.batch)  # ms -> us
        return events, walls


# ---- the workloads: each returns (what, fn, bytes or None, flops or None, settings) ----------


def reductions(dev):
    x = torch.randn(REDUCE_N, device=dev)
    ops = {
        "sum": torch.sum,
        "mean": torch.mean,
        "var": torch.var,  # unbiased, as Kiln's default correction = 1
        "max": torch.max,  # the whole tensor, 0-d (Kiln's x.max())
        "argmax": torch.argmax,
        "norm": torch.linalg.vector_norm,  # Kiln composes it: (x * x).sum().sqrt()
    }
    for name, op in ops.items():
        # Bytes: the input read once, the least any implementation moves.
        yield name, "%s of 2^24 float32" % name, (lambda op=op: op(x)), 4 * REDUCE_N, None, {}


def scans_and_sorts(dev):
    x = torch.randn(REDUCE_N, device=dev)
    rows = x.view(4096, 4096)
    # Bytes: the input read once and the outputs written once (sort: values + int64 indices).
    yield "cumsum", "cumsum of 2^24 float32", (lambda: torch.cumsum(x, 0)), 8 * REDUCE_N, None, {}
    yield "sort", "sort of 2^24 float32", (lambda: torch.sort(x)), 16 * REDUCE_N, None, {}
    yield ("sort_rows", "sort of each row of [4096, 4096] float32", (lambda: torch.sort(rows, 1)),
           16 * REDUCE_N, None, {})
    short = x.view(65536, 256)
    yield ("sort_short_rows", "sort of each row of [65536, 256] float32",
           (lambda: torch.sort(short, 1)), 16 * REDUCE_N, None, {})


def bias_grads(dev):
    for layer, (n, _c, o, hw, _ig) in CONV_LAYERS.items():
        g = torch.randn(n, o, hw, hw, device=dev)
        yield (
            layer + "_bias_grad",
            "bias gradient of %s: sum over N,H,W of [%d,%d,%d,%d]" % (layer, n, o, hw, hw),
            (lambda g=g: g.sum((0, 2, 3))),
            4 * g.numel(),
            None,
            {},
        )


def elementwise(dev):
    a = torch.randn(ELEMENTWISE_N, device=dev)
    b = torch.randn(ELEMENTWISE_N, device=dev)
    nbytes = 4 * ELEMENTWISE_N
    yield "add", "a + b, 2^26 float32, new output", (lambda: a + b), 3 * nbytes, None, {}
    yield "mul", "a * b, 2^26 float32, new output", (lambda: a * b), 3 * nbytes, None, {}
    yield "relu", "relu(a), 2^26 float32, new output", (lambda: torch.relu(a)), 2 * nbytes, None, {}
    src, dst = a, torch.empty_like(a)
    yield (
        "copy_d2d",
        "dst.copy_(src), 2^26 float32 device to device",
        (lambda: dst.copy_(src)),
        2 * nbytes,  # read + written
        None,
        {},
    )


def gemms(dev):
    n = GEMM_N
    for label, dtype, tf32 in (
        ("f32", torch.float32, False),
        ("tf32", torch.float32, True),
        ("bf16", torch.bfloat16, False),
    ):
        # Uniform in [-0.5, 0.5), as bench/cuda_bench.cpp draws its operands.
        a = torch.rand(n, n, device=dev, dtype=dtype) - 0.5
        b = torch.rand(n, n, device=dev, dtype=dtype) - 0.5

        def fn(a=a, b=b):
            return torch.matmul(a, b)

        settings = {"matmul_tf32": tf32}
        if dtype == torch.bfloat16:
            settings["bf16_reduced_precision_reduction"] = bool(
                torch.backends.cuda.matmul.allow_bf16_reduced_precision_reduction
            )
        yield "gemm_" + label, "matmul %d^3 %s" % (n, label), fn, None, 2.0 * n**3, settings


def convs(dev):
    for tf32 in (False, True):
        for layer, (n, c, o, hw, input_grad) in CONV_LAYERS.items():
            x = torch.randn(n, c, hw, hw, device=dev, requires_grad=input_grad)
            w = (torch.randn(o, c, 3, 3, device=dev) * 0.1).requires_grad_()
            bias = torch.zeros(o, device=dev, requires_grad=True)
            g = torch.randn(n, o, hw, hw, device=dev)

            def step(x=x, w=w, bias=bias, g=g):
                # Gradients cleared, not accumulated, as Kiln's benchmark does.
                x.grad = w.grad = bias.grad = None
                F.conv2d(x, w, bias, 1, 1).backward(g)

            # Forward, weight gradient and (second layer) input gradient: 2·N·O·H·W·C·9 each.
            passes = 3 if input_grad else 2
            flops = passes * 2.0 * n * o * hw * hw * c * 9
            yield (
                layer + ("_tf32" if tf32 else ""),
                "conv2d %d->%d 3x3 pad 1, %dx%d, batch %d, forward + backward%s"
                % (c, o, hw, hw, n, ", TF32" if tf32 else ""),
                step,
                None,
                flops,
                {"cudnn_tf32": tf32, "cudnn_benchmark": bool(torch.backends.cudnn.benchmark)},
            )


GROUPS = (reductions, scans_and_sorts, bias_grads, elementwise, gemms, convs)


def run_group(group, dev, timer, only, emit):
    set_tf32(False, False)
    try:
        items = [it for it in group(dev) if not only or only.search(it[0])]
    except Exception as exc:  # e.g. out of memory while making the operands
        emit({"kind": "error", "name": group.__name__, "error": repr(exc)})
        return
    for name, what, fn, nbytes, flops, settings in items:
        set_tf32(settings.get("matmul_tf32", False), settings.get("cudnn_tf32", False))
        try:
            events, walls = timer(fn)
        except Exception as exc:
            emit({"kind": "error", "name": name, "error": repr(exc)})
            continue
        med = statistics.median(events)
        rec = {
            "kind": "result",
            "name": name,
            "what": what,
            "median_us": round(med, 3),
            "min_us": round(min(events), 3),
            "max_us": round(max(events), 3),
            "wall_median_us": round(statistics.median(walls), 3),
        }
        if nbytes:
            rec["bytes"] = nbytes
            rec["GB_per_s"] = round(nbytes / med / 1e3, 1)
        if flops:
            rec["flops"] = flops
            rec["TFLOP_per_s"] = round(flops / med / 1e6, 2)
        if settings:
            rec["settings"] = settings
        emit(rec)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--reps", type=int, default=15, help="timed repetitions (median over them)")
    ap.add_argument("--batch", type=int, default=10, help="calls enqueued per repetition")
    ap.add_argument("--warmup", type=int, default=3, help="untimed calls first")
    ap.add_argument("--only", default="", help="regex: run only the workloads it matches")
    ap.add_argument("--cudnn-benchmark", action="store_true",
                    help="torch.backends.cudnn.benchmark = True (default False: heuristics, as Kiln)")
    ap.add_argument("--out", help="also write the JSON lines to this file")
    args = ap.parse_args()

    out = open(args.out, "w") if args.out else None

    def emit(obj):
        line = json.dumps(obj, sort_keys=False)
        print(line, flush=True)
        if out:
            out.write(line + "\n")
            out.flush()

    if not torch.cuda.is_available():
        sys.exit("torch_reference.py: torch %s sees no CUDA device (torch.version.cuda = %s)"
                 % (torch.__version__, torch.version.cuda))
    dev = torch.device("cuda:0")
    torch.backends.cudnn.benchmark = args.cudnn_benchmark
    props = torch.cuda.get_device_properties(dev)
    emit({
        "kind": "context",
        "torch": torch.__version__,
        "cuda": torch.version.cuda,
        "cudnn": torch.backends.cudnn.version(),
        "device": torch.cuda.get_device_name(dev),
        "capability": "%d.%d" % (props.major, props.minor),
        "multiprocessors": props.multi_processor_count,
        "reps": args.reps,
        "batch": args.batch,
        "warmup": args.warmup,
        "clock": "cuda events (median_us); host clock (wall_median_us)",
        "date": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
    })
    timer = Timer(args.reps, args.batch, args.warmup)
    only = re.compile(args.only) if args.only else None
    t_start = time.perf_counter()
    for group in GROUPS:
        run_group(group, dev, timer, only, emit)
        torch.cuda.empty_cache()  # the group's tensors are gone with run_group's frame
    set_tf32(False, True)  # PyTorch's defaults again
    emit({"kind": "done", "seconds": round(time.perf_counter() - t_start, 1)})
    if out:
        out.close()


if __name__ == "__main__":
    main()
