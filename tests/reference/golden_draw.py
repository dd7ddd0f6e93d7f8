"""Inputs for the reference suite's golden files: dtypes, tolerances, the exact
encoding of values, and the samplers that draw each op's random inputs (used by
golden_ops.py and make_golden.py)."""
import argparse
import json
import math
import os
import random
import sys

import numpy as np
import torch

import torch.nn.functional as F

DTYPES = {
    "float32": torch.float32, "float64": torch.float64, "float16": torch.float16,
    "bfloat16": torch.bfloat16, "int32": torch.int32, "int64": torch.int64,
    "uint8": torch.uint8, "bool": torch.bool,
}
NAME = {v: k for k, v in DTYPES.items()}
FLOATS = ["float32", "float64", "float16", "bfloat16"]
INTS = ["int32", "int64", "uint8"]
ALL = FLOATS + INTS + ["bool"]
SIGNED = FLOATS + ["int32", "int64"]
NUMERIC = FLOATS + INTS

# Tolerance (atol, rtol) per dtype; an op may scale it (OpInfo's "tol" factor).
TOL = {"float64": (1e-10, 1e-7), "float32": (1e-5, 1e-4), "float16": (2e-3, 1e-2),
       "bfloat16": (1e-2, 2e-2)}
DENORMAL = {"float32": 2.0 ** -140, "float64": 2.0 ** -1060, "float16": 2.0 ** -20,
            "bfloat16": 2.0 ** -130}


# -- encoding -----------------------------------------------------------------------------

def enc_float(v):
    if math.isnan(v):
        return "nan"
    if math.isinf(v):
        return "inf" if v > 0 else "-inf"
    if v == 0 and math.copysign(1, v) < 0:
        return "-0"
    return v


def shortest(v, dtype):
    """The shortest decimal that reads back as v in dtype (v is exact in dtype)."""
    if dtype in ("float32", "bfloat16"):
        return float(repr(np.float32(v)))
    if dtype == "float16":
        return float(repr(np.float16(v)))
    return v


def enc_tensor_values(t, exact=False):
    dt = NAME[t.dtype]
    flat = t.detach().reshape(-1)
    if dt in FLOATS:
        if exact:
            return [enc_float(v) for v in flat.double().tolist()]
        return [enc_float(shortest(v, dt)) for v in flat.double().tolist()]
    if dt == "bool":
        return [int(v) for v in flat.tolist()]
    return [int(v) for v in flat.tolist()]


def enc_out(t):
    return {"dt": NAME[t.dtype], "shape": list(t.shape), "v": enc_tensor_values(t)}


# -- drawing inputs -----------------------------------------------------------------------

class Draw:
    def __init__(self, rng):
        self.rng = rng

    def dim_size(self):
        return self.rng.choices([0, 1, 2, 3, 4, 5], [4, 22, 30, 24, 12, 8])[0]

    def shape(self, rank=None, min_rank=0, max_rank=4, max_numel=64):
        if rank is None:
            rank = self.rng.choices(range(min_rank, max_rank + 1),
                                    [5, 20, 30, 25, 20][min_rank:max_rank + 1])[0]
        while True:
            s = [self.dim_size() for _ in range(rank)]
            if math.prod(s) <= max_numel:
                return s

    def values(self, dtype, n, mode=None):
        r = self.rng
        mode = mode or r.choices(["plain", "ties", "edge", "wide"], [50, 20, 20, 10])[0]
        out = []
        for _ in range(n):
            if dtype == "bool":
                out.append(r.random() < 0.5)
            elif dtype in INTS:
                info = torch.iinfo(DTYPES[dtype])
                if mode == "edge" and r.random() < 0.3:
                    edges = [info.min, info.max, 0, 1, info.max - 1]
                    out.append(r.choice(edges + ([2 ** 53, 2 ** 53 + 1] if dtype == "int64" else [])))
                elif mode == "ties":
                    out.append(r.choice([0, 1, 2]) if dtype == "uint8" else r.choice([-1, 0, 1]))
                elif mode == "wide":
                    out.append(r.randint(max(info.min, -1000), min(info.max, 1000)))
                else:
                    out.append(r.randint(0, 9) if dtype == "uint8" else r.randint(-9, 9))
            else:
                if mode == "edge" and r.random() < 0.35:
                    out.append(r.choice([0.0, -0.0, math.inf, -math.inf, math.nan,
                                         DENORMAL[dtype], -DENORMAL[dtype], 1.0, -1.0]))
                elif mode == "ties":
                    out.append(r.choice([-1.0, -0.5, 0.0, 0.5, 1.0]))
                elif mode == "wide":
                    out.append(r.randint(-64, 64) / 16 * 2.0 ** r.randint(-12, 12))
                else:
                    out.append(r.randint(-64, 64) / 16)
        return out

    def view_for(self, shape):
        """A base shape and the view ops that turn it into `shape`."""
        r = self.rng
        kinds = ["contig"]
        if len(shape) >= 2:
            kinds.append("transpose")
        if len(shape) >= 1:
            kinds += ["slice", "expand"]
        kind = r.choices(kinds, [50, 20, 20, 20][:len(kinds)])[0]
        base = list(shape)
        if kind == "contig":
            return base, []
        if kind == "transpose":
            i, j = sorted(r.sample(range(len(shape)), 2))
            base[i], base[j] = base[j], base[i]
            if r.random() < 0.5:
                i, j = i - len(shape), j - len(shape)
            return base, [["transpose", i, j]]
        if kind == "slice":
            d = r.randrange(len(shape))
            step, start = r.choice([2, 3]), r.choice([0, 1])
            base[d] = start + (shape[d] - 1) * step + 1 if shape[d] > 0 else start
            return base, [["slice", d, start, base[d], step]]
        dims = [d for d in range(len(shape)) if r.random() < 0.6] or [0]
        for d in dims:
            base[d] = 1
        return base, [["expand", list(shape)]]

    def tensor(self, dtype, shape, view=True, mode=None, values=None):
        base, ops = self.view_for(shape) if view and values is None else (list(shape), [])
        n = math.prod(base)
        vals = values if values is not None else self.values(dtype, n, mode)
        return make_input(dtype, base, ops, vals)


def make_input(dtype, base, ops, vals):
    t = torch.tensor(vals, dtype=torch.float64 if dtype in FLOATS else None)
    t = t.to(DTYPES[dtype]).reshape(base) if len(vals) else torch.zeros(base, dtype=DTYPES[dtype])
    spec = {"dt": dtype, "shape": base, "v": enc_tensor_values(t, exact=True)}
    if ops:
        spec["view"] = ops
    return spec


def apply_view(t, ops):
    for op in ops or []:
        if op[0] == "transpose":
            t = t.transpose(op[1], op[2])
        elif op[0] == "slice":
            idx = [slice(None)] * op[1] + [slice(op[2], op[3], op[4])]
            t = t[tuple(idx)]
        elif op[0] == "expand":
            t = t.expand(op[1])
    return t


def decode(v):
    if isinstance(v, str):
        return {"nan": math.nan, "inf": math.inf, "-inf": -math.inf, "-0": -0.0}[v]
    return v


def build_base(spec):
    dt = spec["dt"]
    vals = [decode(v) for v in spec["v"]]
    if dt in FLOATS:
        t = torch.tensor(vals, dtype=torch.float64).to(DTYPES[dt])
    elif dt == "bool":
        t = torch.tensor([bool(v) for v in vals], dtype=torch.bool)
    else:
        t = torch.tensor(vals, dtype=torch.int64).to(DTYPES[dt])
    return t.reshape(spec["shape"])


def broadcast_partner(d, shape):
    """A shape that broadcasts with `shape` (and occasionally one that does not)."""
    r = d.rng
    if r.random() < 0.04 and shape:
        s = list(shape)
        k = r.randrange(len(s))
        s[k] = s[k] + 2
        return s
    s = [r.choice([n, n, 1]) for n in shape]
    if s and r.random() < 0.25:
        s = s[r.randint(1, len(s)):]
    elif r.random() < 0.15 and len(s) < 4:
        s = [r.choice([1, 2])] + s
    return s


def scalar_operand(d, kind=None):
    r = d.rng
    kind = kind or r.choice(["int", "float", "bool"])
    if kind == "int":
        v = r.choice([r.randint(-5, 5)] * 6 + [300, -3, 2 ** 31, 2 ** 53 + 1, 2 ** 62, -2 ** 63])
    elif kind == "float":
        v = r.choice([r.randint(-40, 40) / 8] * 6 + [0.0, -0.0, math.inf, -math.inf, math.nan,
                                                     1e300, 0.5])
    else:
        v = r.random() < 0.5
    return {"kind": kind, "v": enc_float(v) if kind == "float" else (int(v) if kind == "int" else v)}


def scalar_value(s):
    if s["kind"] == "float":
        return float(decode(s["v"]))
    if s["kind"] == "bool":
        return bool(s["v"])
    return int(s["v"])


def pick(r, xs):
    return r.choice(xs)


# -- samplers: each returns (inputs, attrs) ---------------------------------------------

def s_unary(dtypes):
    def f(d):
        return [d.tensor(pick(d.rng, dtypes), d.shape())], {}
    return f


def s_gelu(d):
    return [d.tensor(pick(d.rng, ALL), d.shape())], {"approximate": d.rng.choice(["none", "tanh"])}


def binary_dtypes(d, dtypes):
    a = pick(d.rng, dtypes)
    b = a if d.rng.random() < 0.6 else pick(d.rng, ALL)
    return a, b


def s_binary(dtypes, scalar=True, lhs_scalar=True):
    def f(d):
        r = d.rng
        a, b = binary_dtypes(d, dtypes)
        sa = d.shape()
        x = d.tensor(a, sa)
        u = r.random()
        if scalar and u < 0.25:
            return [x], {"scalar": scalar_operand(d), "side": "rhs"}
        if lhs_scalar and u < 0.32:
            return [x], {"scalar": scalar_operand(d), "side": "lhs"}
        sb = broadcast_partner(d, sa)
        if r.random() < 0.5:
            sa, sb = sb, sa
            x = d.tensor(a, sa)
        return [x, d.tensor(b, sb)], {}
    return f


def s_inplace(d):
    r = d.rng
    a, b = binary_dtypes(d, NUMERIC)
    sa = d.shape()
    x = d.tensor(a, sa, view=False)
    if r.random() < 0.3:
        return [x], {"scalar": scalar_operand(d)}
    sb = broadcast_partner(d, sa)
    return [x, d.tensor(b, sb)], {}


def rand_dims(d, rank, allow_none=True):
    r = d.rng
    if allow_none and r.random() < 0.25:
        return None
    if rank == 0:
        return r.choice([[], [0], [-1]]) if r.random() < 0.7 else [r.choice([1, -2])]
    dims = [k for k in range(rank) if r.random() < 0.45] or [r.randrange(rank)]
    dims = [k - rank if r.random() < 0.3 else k for k in dims]
    if r.random() < 0.04:
        dims.append(dims[0])
    if r.random() < 0.03:
        dims.append(rank + 1)
    r.shuffle(dims)
    return dims


def rand_dim(d, rank):
    r = d.rng
    if r.random() < 0.03:
        return rank + 1
    n = max(rank, 1)
    k = r.randrange(n)
    return k - n if r.random() < 0.35 else k


def s_reduce(dtypes):
    def f(d):
        x = d.tensor(pick(d.rng, dtypes), d.shape())
        return [x], {"dims": rand_dims(d, len(x_shape(x))), "keepdim": d.rng.random() < 0.4}
    return f


def x_shape(spec):
    """The logical (viewed) shape of an input spec."""
    shape = list(spec["shape"])
    for op in spec.get("view", []):
        if op[0] == "transpose":
            i, j = op[1] % len(shape), op[2] % len(shape)
            shape[i], shape[j] = shape[j], shape[i]
        elif op[0] == "slice":
            shape[op[1]] = len(range(op[2], op[3], op[4]))
        else:
            shape = list(op[1])
    return shape


def s_var(d):
    inputs, attrs = s_reduce(ALL if d.rng.random() < 0.1 else FLOATS)(d)
    attrs["correction"] = d.rng.choice([0, 1, 1, 2])
    return inputs, attrs


def s_norm(d):
    inputs, attrs = s_reduce(FLOATS + (["int64"] if d.rng.random() < 0.1 else []))(d)
    attrs["p"] = enc_float(d.rng.choice([1.0, 2.0, 2.0, 3.0, 0.5, 0.0, math.inf, -math.inf]))
    return inputs, attrs


def s_dim_op(dtypes, keepdim=True, optional=False):
    def f(d):
        x = d.tensor(pick(d.rng, dtypes), d.shape())
        attrs = {"dim": rand_dim(d, len(x_shape(x)))}
        if optional and d.rng.random() < 0.3:
            attrs["dim"] = None
        if keepdim:
            attrs["keepdim"] = d.rng.random() < 0.4
        return [x], attrs
    return f


def s_sort(d):
    x = d.tensor(pick(d.rng, NUMERIC), d.shape())
    return [x], {"dim": rand_dim(d, len(x_shape(x))), "descending": d.rng.random() < 0.5}


def s_topk(d):
    r = d.rng
    shape = d.shape(min_rank=1)
    n = math.prod(shape)
    if r.random() < 0.3:  # ties: Kiln keeps input order, which PyTorch leaves unspecified
        vals = [r.choice([-1.0, 0.0, 0.5, 1.0]) for _ in range(n)]
    else:
        vals = [v / 4 for v in r.sample(range(-200, 200), n)]
    x = d.tensor(pick(r, ["float32", "float64"]), shape, view=False, values=vals)
    dim = rand_dim(d, len(shape))
    size = shape[dim] if -len(shape) <= dim < len(shape) else 1
    return [x], {"k": r.randint(0, size + (1 if r.random() < 0.05 else 0)), "dim": dim,
                 "largest": r.random() < 0.5}


def s_clamp(d):
    r = d.rng
    x = d.tensor(pick(r, SIGNED + ["uint8"]), d.shape())

    def bound():
        if r.random() < 0.3:
            return None
        return scalar_operand(d, r.choice(["int", "float", "float"]))
    lo, hi = bound(), bound()
    if lo is None and hi is None and r.random() < 0.8:
        lo = scalar_operand(d, "int")
    return [x], {"min": lo, "max": hi}


def s_where(d):
    r = d.rng
    shape = d.shape()
    cond = d.tensor("bool", broadcast_partner(d, shape))
    a, b = binary_dtypes(d, ALL)
    attrs = {}
    ins = [cond]
    if r.random() < 0.2:
        attrs = {"scalar": scalar_operand(d), "side": r.choice(["lhs", "rhs"])}
        ins.append(d.tensor(a, shape))
    else:
        ins += [d.tensor(a, shape), d.tensor(b, broadcast_partner(d, shape))]
    return ins, attrs


def s_masked_fill(d):
    r = d.rng
    shape = d.shape()
    mask_shape = [r.choice([n, 1]) for n in shape]
    if mask_shape and r.random() < 0.3:
        mask_shape = mask_shape[r.randint(1, len(mask_shape)):]
    return [d.tensor(pick(r, ALL), shape), d.tensor("bool", mask_shape)], \
        {"scalar": scalar_operand(d)}


def s_matmul(d):
    r = d.rng
    dt = pick(r, FLOATS) if r.random() < 0.9 else pick(r, ["int64", "int32"])
    m, k, n = (d.dim_size() for _ in range(3))
    ra, rb = r.choice([1, 2, 2, 3, 4]), r.choice([1, 2, 2, 3])
    batch = [r.choice([1, 2, 3]) for _ in range(max(ra, rb) - 2)] if max(ra, rb) > 2 else []
    sa = [k] if ra == 1 else [r.choice([b, 1]) for b in batch[len(batch) - (ra - 2):]] + [m, k]
    sb = [k] if rb == 1 else [r.choice([b, 1]) for b in batch[len(batch) - (rb - 2):]] + [k, n]
    if r.random() < 0.05:
        sb[-2 if rb > 1 else 0] += 1
    return [d.tensor(dt, sa), d.tensor(dt, sb)], {}


def s_index_select(d):
    r = d.rng
    shape = d.shape(min_rank=1) if r.random() < 0.9 else []
    dim = rand_dim(d, len(shape))
    size = shape[dim] if shape and -len(shape) <= dim < len(shape) else 1
    # An index into an empty dim corrupts PyTorch 1.13's heap: none are drawn.
    # So does more than one index into a 0-d tensor.
    idx = [r.randrange(size) for _ in range(r.randint(0, 5 if shape else 1))] if size else []
    if size and r.random() < 0.05:
        idx.append(r.choice([size, -1]))
    return [d.tensor(pick(r, ALL), shape), d.tensor("int64", [len(idx)], view=False, values=idx)], \
        {"dim": dim}


def shape_and_dim(d):
    """A shape of rank >= 1, a dim drawn for it (sometimes out of range, to test the
    error) and that dim wrapped into range (0 when it is out of range)."""
    shape = d.shape(min_rank=1)
    dim = rand_dim(d, len(shape))
    return shape, dim, dim % len(shape) if -len(shape) <= dim < len(shape) else 0


def s_gather(d):
    r = d.rng
    shape, dim, dd = shape_and_dim(d)
    ishape = [r.randint(0, n) if k != dd else r.randint(0, 4) for k, n in enumerate(shape)]
    size = shape[dd]
    if size == 0:
        ishape[dd] = 0
    n = math.prod(ishape)
    idx = [r.randrange(size) if size else 0 for _ in range(n)]
    if n and r.random() < 0.05:
        idx[0] = size
    return [d.tensor(pick(r, ALL), shape), d.tensor("int64", ishape, view=False, values=idx)], \
        {"dim": dim}


def s_cat(d):
    r = d.rng
    shape, dim, dd = shape_and_dim(d)
    ins = []
    for _ in range(r.randint(1, 3)):
        s = list(shape)
        s[dd] = r.randint(0, 3)
        ins.append(d.tensor(pick(r, ALL) if r.random() < 0.3 else "float32", s))
    return ins, {"dim": dim}


def s_stack(d):
    r = d.rng
    shape = d.shape(max_rank=3)
    dim = r.randint(-len(shape) - 1, len(shape))
    dt = pick(r, ALL)
    return [d.tensor(dt if r.random() < 0.8 else pick(r, ALL), shape)
            for _ in range(r.randint(1, 3))], {"dim": dim}


def s_flip(d):
    x = d.tensor(pick(d.rng, ALL), d.shape(min_rank=1))
    return [x], {"dims": rand_dims(d, len(x_shape(x)), allow_none=False)}


def s_roll(d):
    r = d.rng
    x = d.tensor(pick(r, ALL), d.shape(min_rank=1))
    rank = len(x_shape(x))
    if r.random() < 0.3:
        return [x], {"shifts": [r.randint(-7, 7)], "dims": []}
    dims = r.sample(range(rank), r.randint(1, rank))
    return [x], {"shifts": [r.randint(-7, 7) for _ in dims], "dims": dims}


def s_tri(d):
    x = d.tensor(pick(d.rng, ALL), d.shape(min_rank=2))
    return [x], {"diagonal": d.rng.randint(-3, 3)}


def s_loss_pair(target_range=None):
    def f(d):
        r = d.rng
        dt = pick(r, FLOATS)
        shape = d.shape()
        ts = shape if r.random() < 0.85 else broadcast_partner(d, shape)
        if target_range:
            t = d.tensor(dt, ts, values=[r.choice([0.0, 1.0, 0.25, 0.5, 0.75])
                                         for _ in range(math.prod(ts))], view=False)
        else:
            t = d.tensor(dt, ts)
        return [d.tensor(dt, shape), t], {"reduction": r.choice(["mean", "sum", "none"])}
    return f


def s_cross_entropy(d):
    r = d.rng
    dt = pick(r, FLOATS)
    n, c = r.randint(0, 5), r.randint(1, 5)
    tgt = [r.randrange(c) for _ in range(n)]
    attrs = {"reduction": r.choice(["mean", "sum", "none"])}
    if n and r.random() < 0.2:
        tgt[0] = -100
    if r.random() < 0.3:
        attrs["label_smoothing"] = r.choice([0.1, 0.25])
    return [d.tensor(dt, [n, c]), d.tensor("int64", [n], view=False, values=tgt)], attrs


def s_nll(d):
    inputs, attrs = s_cross_entropy(d)
    attrs.pop("label_smoothing", None)
    return inputs, attrs


def s_linear(d):
    r = d.rng
    dt = pick(r, FLOATS)
    fin, fout = d.dim_size(), d.dim_size()
    xs = d.shape(min_rank=0, max_rank=2) + [fin]
    ins = [d.tensor(dt, xs), d.tensor(dt, [fout, fin])]
    if r.random() < 0.6:
        ins.append(d.tensor(dt, [fout]))
    return ins, {}


def s_layer_norm(d):
    r = d.rng
    dt = pick(r, FLOATS)
    shape = d.shape(min_rank=1)
    k = r.randint(1, len(shape))
    ns = shape[len(shape) - k:]
    ins = [d.tensor(dt, shape)]
    if r.random() < 0.5:
        ins += [d.tensor(dt, ns), d.tensor(dt, ns)]
    return ins, {"normalized_shape": ns}


def s_conv2d(d):
    r = d.rng
    dt = pick(r, FLOATS)
    g = r.choice([1, 1, 2])
    cin, cout = g * r.randint(1, 2), g * r.randint(1, 2)
    kh, kw = r.randint(1, 3), r.randint(1, 3)
    x = [r.randint(1, 2), cin, r.randint(1, 5), r.randint(1, 5)]
    ins = [d.tensor(dt, x), d.tensor(dt, [cout, cin // g, kh, kw])]
    if r.random() < 0.5:
        ins.append(d.tensor(dt, [cout]))
    return ins, {"stride": [r.randint(1, 2), r.randint(1, 2)], "padding": [r.randint(0, 1), r.randint(0, 1)],
                 "dilation": [r.randint(1, 2), 1], "groups": g}


def s_pool(kind):
    def f(d):
        r = d.rng
        dt = pick(r, FLOATS)
        x = [r.randint(1, 2), r.randint(1, 2), r.randint(1, 6), r.randint(1, 6)]
        k = [r.randint(1, 3), r.randint(1, 3)]
        attrs = {"kernel": k, "stride": [r.randint(1, 2), r.randint(1, 3)],
                 "padding": [r.randint(0, k[0] // 2), r.randint(0, k[1] // 2)],
                 "ceil_mode": r.random() < 0.3}
        if kind == "avg":
            attrs["count_include_pad"] = r.random() < 0.5
        return [d.tensor(dt, x, mode="plain" if kind == "avg" else None)], attrs
    return f


def s_adaptive(d):
    r = d.rng
    x = [r.randint(1, 2), r.randint(1, 2), r.randint(1, 6), r.randint(1, 6)]
    return [d.tensor(pick(r, FLOATS), x)], {"output_size": [r.randint(1, 4), r.randint(1, 4)]}


def s_pad(d):
    r = d.rng
    mode = r.choice(["constant", "constant", "reflect", "replicate", "circular"])
    rank = r.randint(3, 4) if mode != "constant" else r.randint(1, 4)
    shape = [r.randint(1, 4) for _ in range(rank)]
    # PyTorch 1.13 pads reflect/replicate/circular over exactly the dims after [N, C]
    # (and reads 2-D input inconsistently), so no other count or rank is drawn for them.
    npairs = r.randint(1, min(rank, 2)) if mode == "constant" else rank - 2
    pads = [r.randint(-1 if mode == "constant" else 0, 2) for _ in range(2 * npairs)]
    attrs = {"padding": pads, "mode": mode}
    if mode == "constant":
        attrs["value"] = r.choice([0.0, 1.5])
    return [d.tensor(pick(r, FLOATS), shape)], attrs


def s_interpolate(d):
    r = d.rng
    mode = r.choice(["nearest", "linear", "bilinear"])
    sp = 1 if mode == "linear" else (2 if mode == "bilinear" else r.randint(1, 2))
    shape = [r.randint(1, 2), r.randint(1, 2)] + [r.randint(1, 4) for _ in range(sp)]
    attrs = {"size": [r.randint(1, 6) for _ in range(sp)], "mode": mode}
    if mode != "nearest":
        attrs["align_corners"] = r.random() < 0.5
    return [d.tensor(pick(r, ["float32", "float64"]), shape)], attrs


def s_embedding(d):
    r = d.rng
    v, dim = r.randint(1, 5), r.randint(1, 4)
    ishape = d.shape(max_rank=2)
    idx = [r.randrange(v) for _ in range(math.prod(ishape))]
    return [d.tensor("int64", ishape, view=False, values=idx),
            d.tensor(pick(r, ["float32", "float64"]), [v, dim])], {}


def s_batch_norm(d):
    r = d.rng
    dt = pick(r, ["float32", "float64"])
    c = r.randint(1, 3)
    shape = [r.randint(2, 3), c] + [r.randint(1, 3) for _ in range(r.randint(0, 2))]
    training = r.random() < 0.6
    ins = [d.tensor(dt, shape, mode="plain")]
    ins += [d.tensor(dt, [c], mode="plain"), d.tensor(dt, [c], values=[r.randint(1, 8) / 4 for _ in range(c)])]
    ins += [d.tensor(dt, [c]), d.tensor(dt, [c])]
    return ins, {"training": training}


def s_one_hot(d):
    r = d.rng
    shape = d.shape(max_rank=2)
    c = r.randint(1, 4)
    return [d.tensor("int64", shape, view=False, values=[r.randrange(c) for _ in range(math.prod(shape))])], \
        {"num_classes": r.choice([c, c + 1, -1])}


def s_any_all(d):
    x = d.tensor(pick(d.rng, ALL), d.shape())
    return [x], {"dims": rand_dims(d, len(x_shape(x))), "keepdim": d.rng.random() < 0.4}


def _index_shape(d, shape, dd, along):
    """An index shape for scatter/scatter_add: at most x's size in every dim but dd,
    `along` entries in dd."""
    return [along if k == dd else d.rng.randint(0, n) for k, n in enumerate(shape)]


def s_scatter_add(d):
    r = d.rng
    shape, dim, dd = shape_and_dim(d)
    size = shape[dd]
    ishape = _index_shape(d, shape, dd, r.randint(0, 4) if size else 0)
    idx = [r.randrange(size) for _ in range(math.prod(ishape))] if size else []
    if idx and r.random() < 0.05:
        idx[0] = r.choice([size, -1])
    dt = pick(r, ALL)
    return [d.tensor(dt, shape), d.tensor("int64", ishape, view=False, values=idx),
            d.tensor(dt, ishape)], {"dim": dim}


def s_scatter(d):
    """Like scatter_add, but no two index entries name the same element (PyTorch leaves
    which one wins unspecified; Kiln refuses it: scatter-duplicates)."""
    r = d.rng
    shape, dim, dd = shape_and_dim(d)
    size = shape[dd]
    ishape = _index_shape(d, shape, dd, r.randint(0, size))
    idx = np.zeros(ishape, dtype=np.int64)
    moved = np.moveaxis(idx, dd, -1)  # a view: each last-dim line gets distinct positions
    for pos in np.ndindex(*moved.shape[:-1]):
        moved[pos] = r.sample(range(size), ishape[dd])
    dt = pick(r, ALL)
    return [d.tensor(dt, shape), d.tensor("int64", ishape, view=False, values=idx.flatten().tolist()),
            d.tensor(dt, ishape)], {"dim": dim}


def s_index_add(d):
    r = d.rng
    shape, dim, dd = shape_and_dim(d)
    size = shape[dd]
    idx = [r.randrange(size) for _ in range(r.randint(0, 4))] if size else []
    if idx and r.random() < 0.05:
        idx[0] = size
    sshape = list(shape)
    sshape[dd] = len(idx)
    dt = pick(r, ALL)
    return [d.tensor(dt, shape), d.tensor("int64", [len(idx)], view=False, values=idx),
            d.tensor(dt, sshape)], {"dim": dim}


def s_masked_scatter(d):
    r = d.rng
    shape = d.shape()
    mshape = [r.choice([n, 1]) for n in shape]
    if mshape and r.random() < 0.3:
        mshape = mshape[r.randint(1, len(mshape)):]
    mask = [r.random() < 0.5 for _ in range(math.prod(mshape))]
    trues = int(np.broadcast_to(np.array(mask, dtype=bool).reshape(mshape), shape).sum())
    need = max(0, trues + r.choice([0, 0, 1, 3]) - (1 if trues and r.random() < 0.05 else 0))
    dt = pick(r, ALL)
    return [d.tensor(dt, shape), d.tensor("bool", mshape, view=False, values=mask),
            d.tensor(dt, [need])], {}


def s_to(d):
    r = d.rng
    return [d.tensor(pick(r, ALL), d.shape())], {"dtype": pick(r, ALL)}


def unrepresentable(specs, attrs):
    """A float value that the integer dtype of `to` cannot hold (NaN, ±inf, out of
    range): PyTorch's answer is whatever the C++ cast does (float-to-int-saturates)."""
    lo_hi = {"uint8": (0, 255), "int32": (-2 ** 31, 2 ** 31 - 1), "int64": (-2 ** 63, 2 ** 63 - 1)}
    if specs[0]["dt"] not in FLOATS or attrs["dtype"] not in lo_hi:
        return False
    lo, hi = lo_hi[attrs["dtype"]]
    values = [decode(v) for v in specs[0]["v"]]
    return any(not math.isfinite(v) or not lo - 1 < v < hi + 1 for v in values)


def s_fft(complex_input):
    """One-dimensional transforms. A complex input is drawn as a real [..., 2] tensor
    (view_as_complex of it, made contiguous); outputs are compared as view_as_real."""
    def sampler(d):
        r = d.rng
        shape = d.shape(min_rank=1, max_rank=3)
        if complex_input:
            shape = shape + [2]
        rank = len(shape) - (1 if complex_input else 0)
        dim = rand_dim(d, rank)
        n = r.choice([None, None, 1, 2, 3, 4, 5, 8] + ([0, -1] if r.random() < 0.1 else []))
        norm = r.choice(["backward", "forward", "ortho"])
        return [d.tensor(pick(r, ["float32", "float64", "float32", "float16"]), shape)], \
            {"n": n, "dim": dim, "norm": norm}
    return sampler


def s_index_put(d):
    """x[i0, i1] = v (or += with accumulate) for one or two int64 index tensors over the
    leading dims; without accumulate no position is named twice (Kiln refuses that,
    PyTorch leaves the winner unspecified)."""
    r = d.rng
    shape = d.shape(min_rank=1)
    k = 1 if len(shape) == 1 or r.random() < 0.6 else 2
    accumulate = r.random() < 0.5
    m = r.randint(0, 4)
    lead = shape[:k]
    positions = [tuple(r.randrange(n) for n in lead) for _ in range(m)] if all(lead) else []
    if not accumulate:
        positions = list(dict.fromkeys(positions))
    if positions and r.random() < 0.05:
        positions[0] = (lead[0],) + positions[0][1:]
    m = len(positions)
    dt = pick(r, ALL)
    idx = [d.tensor("int64", [m], view=False, values=[p[j] for p in positions]) for j in range(k)]
    vshape = [m] + shape[k:]
    if r.random() < 0.3:
        vshape = vshape[r.randint(1, len(vshape)):]
    return [d.tensor(dt, shape)] + idx + [d.tensor(dt, vshape)], {"accumulate": accumulate}


def constant_row(specs, attrs):
    """A layer_norm group whose values are all equal (an expanded view, one element):
    its variance is 0, so x - mean is 0 and the result is the bias; any other answer is
    rounding noise times 1/sqrt(eps) (layer-norm-constant-row)."""
    x = apply_view(build_base(specs[0]), specs[0].get("view")).double()
    n = math.prod(attrs["normalized_shape"])
    if x.numel() == 0 or n == 0:
        return False
    if n == 2 and specs[0]["dt"] != "float64":
        # Two values normalize to -1 and 1 whatever they are: the input gradient is 0 in
        # exact arithmetic, and any answer is the same rounding noise times 1/std.
        return True
    rows = x.reshape(-1, n)
    if specs[0]["dt"] != "float64" and any(two_values_equally(row) for row in rows):
        return True  # likewise: two values as often each normalize to -1 and 1
    return any(bool(torch.isfinite(row).all()) and row.max() == row.min() for row in rows)


def two_values_equally(row):
    values, counts = torch.unique(row, return_counts=True)
    return len(values) == 2 and bool(torch.isfinite(values).all()) and counts[0] == counts[1]


def tiny_spread(specs, attrs):
    """A var/std group of float32 or narrower values whose standard deviation is below
    1.1e-19 but not 0: its variance underflows float32 (std-tiny-spread)."""
    if specs[0]["dt"] == "float64":
        return False
    x = apply_view(build_base(specs[0]), specs[0].get("view")).double()
    try:
        sd = torch.std(x, dim=attrs["dims"], correction=attrs["correction"])
    except (RuntimeError, IndexError):
        return False
    return bool(((sd > 0) & (sd < 1.1e-19)).any())


def constant_channel(specs):
    """A training batch_norm channel whose values are all equal: its variance is 0, as a
    layer_norm constant_row's (layer-norm-constant-row)."""
    x = apply_view(build_base(specs[0]), specs[0].get("view")).double()
    if x.numel() == 0:
        return False
    groups = x.transpose(0, 1).reshape(x.shape[1], -1)
    return any(bool(torch.isfinite(g).all()) and g.max() == g.min() for g in groups)
