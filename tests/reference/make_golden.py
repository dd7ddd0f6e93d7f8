#!/usr/bin/python3
"""Golden files for Kiln's random reference suite (tests/reference/reference_test.cpp).

Run by hand with Debian's python3 and python3-torch (PyTorch 1.13); PyTorch is not a
CI dependency. For a seed it draws random cases from the OpInfo-style table OPS (golden_ops.py; inputs drawn by golden_draw.py)
and writes, for each, one JSON line: the op (Kiln's spelling), its inputs (dtype, the
values of a base tensor and the view taken of it), its attributes, and PyTorch's
answer: the outputs (dtype, shape, values) or the fact that it raised, and for
differentiable float cases the gradients of sum(out * w) for a random w (stored too)
with respect to each base tensor.

    /usr/bin/python3 tests/reference/make_golden.py            # rewrites golden/
    /usr/bin/python3 tests/reference/make_golden.py --seed 7 --out /tmp/ref7
    KILN_REFERENCE_DIR=/tmp/ref7 build/bin/kiln_reference_test

Encoding: finite numbers are JSON numbers (floats as Python's repr, which reads back
exactly); "nan", "inf", "-inf" and "-0" are strings. Input values are exact in their
dtype; float outputs and gradients are written with the shortest decimal that reads
back as the same value of the output's dtype.
"""
import argparse
import json
import math
import os
import random
import sys

import numpy as np
import torch

from golden_draw import *  # noqa: F401,F403
from golden_ops import *  # noqa: F401,F403

# -- running a case -----------------------------------------------------------------------

HALF_MSG = ("'Half'", "'BFloat16'")


def as_list(y):
    return list(y) if isinstance(y, (list, tuple)) else [y]


def run_case(info, specs, attrs, rng, upcast=False):
    bases = [build_base(s) for s in specs]
    # The dtype PyTorch's type promotion gives the float inputs (0-d ones take part
    # only as they do there), for results computed in float32 below.
    floats = [apply_view(b, s.get("view")) for b, s in zip(bases, specs) if b.is_floating_point()]
    target = floats[0].dtype if floats else torch.float32
    rank = floats[0].dim() if floats else 0
    for f in floats[1:]:
        target = torch.result_type(torch.empty([1] * rank, dtype=target), f)
        rank = max(rank, f.dim())
    if upcast:
        bases = [b.float() if b.dtype in (torch.float16, torch.bfloat16) else b for b in bases]
    want_grad = info["grad"]
    for k, b in enumerate(bases):
        if want_grad and b.is_floating_point() and k in (info.get("grad_inputs") or [k]):
            b.requires_grad_(True)
    views = [apply_view(b, s.get("view")) for b, s in zip(bases, specs)]
    outs = as_list(info["ref"](views, attrs))
    if upcast:
        outs = [o.to(target) if o.dtype == torch.float32 else o for o in outs]
    result = {"out": [enc_out(o) for o in outs]}
    if not want_grad or not any(b.requires_grad for b in bases):
        return result
    ws = []
    loss = None
    for o in outs:
        if not o.is_floating_point() or not o.requires_grad:
            ws.append(None)
            continue
        w = torch.tensor([rng.randint(-8, 8) / 4 for _ in range(o.numel())], dtype=torch.float64)
        w = w.to(o.dtype).reshape(o.shape)
        ws.append({"v": enc_tensor_values(w, exact=True)})
        term = (o.float() * w.float()).sum() if upcast else (o * w).sum()
        loss = term if loss is None else loss + term
    if loss is None:
        return result
    try:
        grads = torch.autograd.grad(loss, [b for b in bases if b.requires_grad], allow_unused=True)
    except RuntimeError as e:
        if not upcast and any(h in str(e) for h in HALF_MSG):
            return None  # the caller redoes the case in float32
        result["w"] = ws
        result["grad_error"] = str(e).splitlines()[0][:200]
        return result
    result["w"] = ws
    it = iter(grads)
    gs = []
    for b, s in zip(bases, specs):
        if not b.requires_grad:
            gs.append(None)
            continue
        g = next(it)
        if g is None:
            g = torch.zeros_like(b)
        g = g.to(DTYPES[s["dt"]])
        gs.append({"v": enc_tensor_values(g)})
    result["grad"] = gs
    slack = grad_slack(info, specs, attrs, ws)
    if any(v is not None for v in slack):
        result["grad_slack"] = slack
    return result


EPS = {"float64": 2.0 ** -52, "float32": 2.0 ** -23, "float16": 2.0 ** -10, "bfloat16": 2.0 ** -7}


def grad_slack(info, specs, attrs, ws):
    """A gradient that sums terms (over broadcast dims or the copies of an expanded
    input) can cancel: PyTorch's answer is then only good to eps times the sum of the
    magnitudes of its terms, and another order of summation or precision of the terms
    (Kiln's) differs by as much. The terms are the op's gradients in float64 with respect
    to each element of its input views (expanded to the output's shape for elementwise
    ops, `broadcast_sum`); their magnitudes are summed back onto each input as the view
    sums them. Returns, per input, 2 eps(dtype) times the largest such sum (None for
    inputs without a gradient, or where float64 cannot take the case)."""
    views = [apply_view(build_base(s).double() if s["dt"] in FLOATS else build_base(s),
                        s.get("view")) for s in specs]
    shape = torch.broadcast_shapes(*[v.shape for v in views]) if info.get("broadcast_sum") else None
    leaves = [(v.expand(shape) if shape is not None else v).clone() for v in views]
    for leaf in leaves:
        if leaf.is_floating_point():
            leaf.requires_grad_(True)
    try:
        outs = as_list(info["ref"](leaves, attrs))
        loss = None
        for o, w in zip(outs, ws):
            if w is None or not o.requires_grad:
                continue
            wt = torch.tensor([decode(v) for v in w["v"]], dtype=torch.float64).reshape(o.shape)
            term = (o.double() * wt).sum()
            loss = term if loss is None else loss + term
        if loss is None:
            return [None] * len(specs)
        wanted = [leaf for leaf in leaves if leaf.requires_grad]
        terms = iter(torch.autograd.grad(loss, wanted, allow_unused=True))
    except (RuntimeError, IndexError, ValueError, TypeError, OverflowError):
        return [None] * len(specs)
    slack = []
    for leaf, s in zip(leaves, specs):
        term = next(terms) if leaf.requires_grad else None
        if s["dt"] not in EPS or term is None or term.numel() == 0:
            slack.append(None)
            continue
        base = build_base(s).double().requires_grad_(True)
        spread = apply_view(base, s.get("view"))
        if shape is not None:
            spread = spread.expand(shape)
        size = term.abs().nan_to_num(nan=0.0, posinf=0.0)
        (m,) = torch.autograd.grad((spread * size).sum(), base)
        slack.append(2 * EPS[s["dt"]] * m.max().item())
    return slack


def reference(info, specs, attrs, rng):
    state = rng.getstate()
    if any(s["dt"] in info.get("float32_for", ()) for s in specs):
        return float32_reference(info, specs, attrs, rng)
    try:
        r = run_case(info, specs, attrs, rng)
        if r is not None:
            return r
    except (RuntimeError, IndexError, ValueError, TypeError, OverflowError) as e:
        if not any(h in str(e) for h in HALF_MSG):
            error = {"error": (str(e).splitlines() or [type(e).__name__])[0][:200]}
            if "not implemented for" in str(e):
                error["unsupported"] = True  # PyTorch has no kernel: no reference
            return error
    # PyTorch 1.13 lacks this half-precision kernel on the CPU: compute in float32 and
    # round the result, as a GPU kernel would.
    rng.setstate(state)
    return float32_reference(info, specs, attrs, rng)


def float32_reference(info, specs, attrs, rng):
    try:
        result = run_case(info, specs, attrs, rng, upcast=True)
        result["ref"] = "float32"
        return result
    except (RuntimeError, IndexError, ValueError, TypeError, OverflowError) as e:
        return {"error": (str(e).splitlines() or [type(e).__name__])[0][:200]}


def tolerance(info, result, specs, attrs=None):
    dts = [o["dt"] for o in result.get("out", [])] + [s["dt"] for s in specs]
    scale = 1.0
    if info.get("atol_by_input"):
        finite = [abs(decode(v)) for s in specs for v in s["v"] if math.isfinite(decode(v))]
        scale = max([1.0] + finite)
    if info.get("atol_by_terms") and "out" in result and all(s["dt"] in FLOATS for s in specs):
        absolute = [apply_view(build_base(s).double().abs().nan_to_num(nan=0.0, posinf=0.0), s.get("view"))
                    for s in specs]
        try:
            terms = info["ref"](absolute, attrs or {})
        except (RuntimeError, IndexError, ValueError):
            terms = None
        if terms is not None and terms.numel():
            scale = max(1.0, terms.max().item())
    for dt in ["bfloat16", "float16", "float32", "float64"]:
        if dt in dts:
            atol, rtol = TOL[dt]
            return [atol * info["tol"] * scale, rtol * info["tol"]]
    return [0, 0]


def make_cases(seed, scale):
    cases = []
    for name in sorted(OPS):
        info = OPS[name]
        rng = random.Random(f"{seed}/{name}")
        d = Draw(rng)
        for k in range(max(1, int(info["n"] * scale))):
            specs, attrs = info["sampler"](d)
            result = reference(info, specs, attrs, rng)
            case = {"id": f"{name}/{seed}/{k}", "op": name, "in": specs, "attrs": attrs}
            # Flags that differences.json keys documented differences on.
            if name == "topk" and len(set(specs[0]["v"])) < len(specs[0]["v"]):
                case["ties"] = True
            if name == "conv2d" and any(p > 0 for p in attrs["padding"]) and any(
                    isinstance(v, str) and v != "-0" for spec in specs[1:] for v in spec["v"]):
                case["nonfinite_weight_padded"] = True
            if name == "norm" and specs[0]["dt"] in ("float16", "bfloat16"):
                case["half_input"] = True
            if name == "batch_norm" and any(isinstance(v, str) and v != "-0"
                                            for spec in specs[1:] for v in spec["v"]):
                case["nonfinite_params"] = True
            if name == "batch_norm" and attrs["training"] and constant_channel(specs):
                case["constant_row"] = True
            if name == "layer_norm" and constant_row(specs, attrs):
                case["constant_row"] = True
            if name == "adam" and specs[0]["dt"] == "float16" and any(
                    isinstance(v, (int, float)) and abs(v) >= 200 for g in specs[1:] for v in g["v"]):
                case["half_state_overflows"] = True
            if name in ("var", "std") and tiny_spread(specs, attrs):
                case["tiny_spread"] = True
            if name == "unique" and has_nan(specs[0]):
                case["nan"] = True
            if name == "unique" and specs[0]["dt"] == "bfloat16" and "-0" in specs[0]["v"]:
                case["signed_zeros"] = True
            if name == "to" and unrepresentable(specs, attrs):
                case["unrepresentable"] = True
            if (name == "interpolate" or name.startswith("fft_")) and any(
                    isinstance(v, str) and v != "-0" for v in specs[0]["v"]):
                case["nonfinite"] = True
            if name == "pow" and attrs.get("side") == "lhs" and specs[0]["dt"] in FLOATS and \
                    abs(float(scalar_value(attrs["scalar"]))) > torch.finfo(DTYPES[specs[0]["dt"]]).max:
                case["base_overflows"] = True
            if name == "pow" and attrs.get("side") == "rhs":
                kind, v = attrs["scalar"]["kind"], decode(attrs["scalar"]["v"])
                if kind == "bool":
                    case["bool_exponent"] = True
                dt = specs[0]["dt"]
                if kind == "int" and (abs(v) > 2 ** 53 or dt in FLOATS and abs(v) < 2 ** 63 and
                                      float(torch.tensor(v - 1, dtype=DTYPES[dt])) != v - 1):
                    case["inexact_exponent"] = True
                if kind == "float" and v in (0.5, -0.5):
                    case["half_exponent"] = True
            case.update(result)
            case["tol"] = tolerance(info, result, specs, attrs)
            cases.append(case)
    return cases


# -- the type promotion table ---------------------------------------------------------------

PROMO_OPS = {"add": torch.add, "mul": torch.mul, "div": torch.div, "lt": torch.lt,
             "maximum": torch.maximum, "where": None}


def promotion_cases():
    cases = []
    one = {"float32": 1.5, "float64": 1.5, "float16": 1.5, "bfloat16": 1.5, "int32": 3,
           "int64": 3, "uint8": 3, "bool": 1}
    scalars = {"int": {"kind": "int", "v": 2}, "float": {"kind": "float", "v": 0.5},
               "bool": {"kind": "bool", "v": True}}
    for opname in PROMO_OPS:
        for a in ALL:
            for a_kind in ["tensor", "0d"]:
                kinds = [("tensor", b) for b in ALL] + [("0d", b) for b in ALL]
                if opname not in ("maximum",):
                    kinds += [("scalar", s) for s in scalars]
                for b_kind, b in kinds:
                    xa = make_input(a, [] if a_kind == "0d" else [2], [], [one[a]] * (1 if a_kind == "0d" else 2))
                    if opname == "where":
                        cond = make_input("bool", [2], [], [True, False])
                        specs = [cond, xa]
                    else:
                        specs = [xa]
                    attrs = {}
                    if b_kind == "scalar":
                        attrs = {"scalar": scalars[b], "side": "rhs"}
                    else:
                        specs.append(make_input(b, [] if b_kind == "0d" else [2], [],
                                                [one[b]] * (1 if b_kind == "0d" else 2)))
                    info = {"ref": (r_where if opname == "where" else scalar_binary(PROMO_OPS[opname])),
                            "grad": False, "tol": 1.0}
                    result = reference(info, specs, attrs, random.Random(0))
                    case = {"id": f"promotion/{opname}/{a_kind}:{a}/{b_kind}:{b}", "op": opname,
                            "in": specs, "attrs": attrs, "group": "promotion"}
                    case.update(result)
                    case["tol"] = tolerance(info, result, specs)
                    cases.append(case)
    return cases


def write(path, cases):
    with open(path, "w") as f:
        for c in cases:
            f.write(json.dumps(c, separators=(",", ":"), allow_nan=False) + "\n")
    print(f"{path}: {len(cases)} cases, {os.path.getsize(path)} bytes", file=sys.stderr)


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--seed", type=int, action="append", help="seeds (default: 1)")
    p.add_argument("--out", default=os.path.join(os.path.dirname(os.path.abspath(__file__)), "golden"))
    p.add_argument("--scale", type=float, default=1.0, help="multiply every op's case count")
    p.add_argument("--ops", help="comma-separated op names (default: all)")
    args = p.parse_args()
    torch.manual_seed(0)
    torch.set_num_threads(1)
    if args.ops:
        for name in list(OPS):
            if name not in args.ops.split(","):
                del OPS[name]
    os.makedirs(args.out, exist_ok=True)
    for seed in args.seed or [1]:
        write(os.path.join(args.out, f"ops_seed{seed}.jsonl"), make_cases(seed, args.scale))
    if not args.ops:
        write(os.path.join(args.out, "promotion.jsonl"), promotion_cases())


if __name__ == "__main__":
    main()
