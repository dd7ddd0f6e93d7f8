"""Samplers of the reference suite for the composite methods (einsum, unique, the 2-D and
n-D FFTs, ...), the creation ops and the optimizer steps; golden_draw.py holds the Draw
helpers and the catalogue ops' samplers."""
import math

import torch

from golden_draw import *  # noqa: F401,F403 (Draw helpers, dtype lists, shared samplers)


# -- composite methods ---------------------------------------------------------------------

EINSUM = ["ij,jk->ik", "bij,bjk->bik", "i,j->ij", "ii->", "ii->i", "ij->ji", "ij->", "i,i->",
          "...ij,jk->...ik", "bij->bj", "ij,ij->ij", "ij,kj->ik", "ijk->kij", "ij,jk", "i->",
          "bn,anm,bm->ba", "...i,...i->...", "ij->j", "ba,...a->...b", "ij,j"]


def s_einsum(d):
    """An equation from EINSUM with a size per label; "..." stands for a batch shape each
    operand takes a broadcastable suffix of; now and then one size does not match."""
    r = d.rng
    eq = r.choice(EINSUM)
    lhs = eq.split("->")[0].split(",")
    size = {c: d.dim_size() for c in sorted(set(eq)) if c.isalpha()}
    batch = [r.choice([1, 2, 3]) for _ in range(r.randint(0, 2))]
    dt = pick(r, FLOATS)
    ins = []
    for term in lhs:
        shape = []
        if term.startswith("..."):
            b = batch[r.randint(0, len(batch)):]
            shape += [r.choice([n, 1]) for n in b]
            term = term[3:]
        shape += [size[c] for c in term]
        ins.append(shape)
    if r.random() < 0.05:
        k = r.randrange(len(ins))
        if ins[k]:
            ins[k][-1] += 1
    return [d.tensor(dt, s) for s in ins], {"equation": eq}


def s_unique(d):
    r = d.rng
    x = d.tensor(pick(r, ALL), d.shape(max_rank=3), mode=r.choice(["ties", "ties", "plain", "edge"]))
    return [x], {}


def has_nan(spec):
    return any(v == "nan" for v in spec["v"])


def s_fftn(name):
    """The 2-D (fft2 & co., dims a pair, the last two by default) and n-D transforms
    (dims any set, every dim by default, or the last len(s) ones). A complex input is a
    real [..., 2] tensor as for s_fft."""
    two = "2" in name
    complex_input = name in ("ifft2", "irfft2", "ifftn", "irfftn")

    def sampler(d):
        r = d.rng
        shape = d.shape(min_rank=2 if two else 1, max_rank=3, max_numel=48)
        rank = len(shape)
        dims = None
        if two:
            if r.random() < 0.5:
                dims = r.sample(range(rank), 2)
                dims = [k - rank if r.random() < 0.3 else k for k in dims]
        elif r.random() < 0.6:
            dims = r.sample(range(rank), r.randint(1, rank))
            dims = [k - rank if r.random() < 0.3 else k for k in dims]
        if dims is not None and r.random() < 0.04:
            dims.append(dims[0])
        s = None
        if r.random() < 0.5:
            count = 2 if two else (len(dims) if dims is not None else r.randint(1, rank))
            s = [r.choice([1, 2, 3, 4, 5, 8]) for _ in range(count)]
            if r.random() < 0.1:
                s[r.randrange(count)] = r.choice([-1, 0])
        if complex_input:
            shape = shape + [2]
        dt = pick(r, ["float32", "float64", "float32"])
        return [d.tensor(dt, shape)], {"s": s, "dims": dims, "norm": r.choice(["backward", "forward", "ortho"])}
    return sampler


def s_dropout(d):
    """dropout where its answer does not depend on the draw: p = 0 or 1 while training,
    any p in eval mode, and a p out of range (an error)."""
    r = d.rng
    training = r.random() < 0.6
    p = r.choice([0.0, 1.0]) if training else r.choice([0.0, 0.25, 0.5, 1.0])
    if r.random() < 0.06:
        p = r.choice([-0.1, 1.5])
    return [d.tensor(pick(r, FLOATS), d.shape())], {"p": p, "training": training}


def s_argsort(d):
    x = d.tensor(pick(d.rng, NUMERIC), d.shape(), mode=d.rng.choice(["ties", "plain", "edge"]))
    return [x], {"dim": rand_dim(d, len(x_shape(x))), "descending": d.rng.random() < 0.5}


def s_nonzero(d):
    return [d.tensor(pick(d.rng, ALL), d.shape(), mode=d.rng.choice(["ties", "edge"]))], {}


def s_masked_select(d):
    r = d.rng
    shape = d.shape()
    mshape = broadcast_partner(d, shape)
    mask = [r.random() < 0.5 for _ in range(math.prod(mshape))]
    return [d.tensor(pick(r, ALL), shape), d.tensor("bool", mshape, view=False, values=mask)], {}


def s_repeat(d):
    r = d.rng
    x = d.tensor(pick(r, ALL), d.shape(max_rank=3, max_numel=24))
    rank = len(x_shape(x))
    reps = [r.choice([0, 1, 1, 2, 3]) for _ in range(rank + r.choice([0, 0, 1, 2]))]
    if r.random() < 0.05:
        reps = reps[:-1] if reps else [-1]
    return [x], {"reps": reps}


def s_diag(d):
    r = d.rng
    return [d.tensor(pick(r, ALL), d.shape(min_rank=r.choice([1, 1, 2, 2, 0]), max_rank=2))], \
        {"diagonal": r.randint(-3, 3)}


def s_split(d):
    """split by a size, split by sizes (split_with_sizes) or chunk."""
    r = d.rng
    shape, dim, dd = shape_and_dim(d)
    kind = r.choice(["size", "sizes", "chunk"])
    if kind == "sizes":
        left, sizes = shape[dd], []
        while left > 0 and len(sizes) < 4:
            sizes.append(r.randint(0, left))
            left -= sizes[-1]
        sizes.append(left + (r.choice([0, 0, 0, 1]) if r.random() < 0.1 else 0))
        arg = sizes
    else:
        arg = r.choice([1, 2, 3] if kind == "size" else [1, 2, 3, 4])
        if r.random() < 0.04:
            arg = 0
    return [d.tensor(pick(r, ALL), shape)], {"kind": kind, "arg": arg, "dim": dim}


# -- creation: the one input is a 0-d anchor that only says where the result is made (the
# device under test); PyTorch's reference ignores it.

def anchor(d):
    return d.tensor("float32", [], view=False, values=[0.0])


def creation_dtype(d):
    return d.rng.choice([None, None, None] + ALL)


def s_full(d):
    r = d.rng
    return [anchor(d)], {"shape": d.shape(max_rank=3), "value": scalar_operand(d),
                         "dtype": creation_dtype(d)}


def s_arange(d):
    """arange(end), (start, end) or (start, end, step), with integer or float bounds; now
    and then a step of 0 or of the wrong sign (errors)."""
    r = d.rng

    def bound(scale):
        if r.random() < 0.5:
            return {"kind": "int", "v": r.randint(-scale, scale)}
        return {"kind": "float", "v": r.randint(-4 * scale, 4 * scale) / 4}
    form = r.choice([1, 2, 3, 3])
    end = bound(12)
    start = bound(12) if form > 1 else None
    step = None
    if form == 3:
        step = r.choice([{"kind": "int", "v": r.choice([1, 2, 3, -1, -2])},
                         {"kind": "float", "v": r.choice([0.25, 0.5, 1.5, -0.5, -0.75, 0.1, 0.3])}])
        if r.random() < 0.05:
            step = {"kind": r.choice(["int", "float"]), "v": 0}
    elif form == 2 and r.random() < 0.5:  # PyTorch refuses start > end with the step of 1
        lo, hi = sorted([decode(start["v"]), decode(end["v"])])
        start, end = dict(start, v=lo), dict(end, v=hi)
    dtype = r.choice([None, None, "float32", "float64", "int64", "int32"])
    return [anchor(d)], {"start": start, "end": end, "step": step, "dtype": dtype}


def s_linspace(d):
    r = d.rng
    return [anchor(d)], {"start": r.randint(-40, 40) / 4, "end": r.randint(-40, 40) / 4,
                         "steps": r.choice([0, 1, 2, 3, 5, 7]),
                         "dtype": r.choice([None, "float32", "float64", "float16", "bfloat16"])}


# -- optimizer steps: a parameter and the gradients of two steps -----------------------------

def optimizer_inputs(d):
    r = d.rng
    dt = r.choice(["float32", "float32", "float64", "float16", "bfloat16"])
    shape = d.shape(min_rank=1, max_rank=3)
    return [d.tensor(dt, shape, view=False)] + \
        [d.tensor(dt, shape, view=False, mode=r.choice(["plain", "wide", "edge"])) for _ in range(2)]


def s_sgd(d):
    r = d.rng
    momentum = r.choice([0.0, 0.0, 0.5, 0.9])
    nesterov = momentum > 0 and r.random() < 0.4
    dampening = 0.0 if nesterov or r.random() < 0.6 else r.choice([0.1, 0.5])
    if r.random() < 0.05:  # refused: nesterov with dampening, a negative rate
        nesterov, dampening, momentum = True, 0.5, 0.9
    return optimizer_inputs(d), {"lr": r.choice([0.1, 0.01, 1.0, -0.1 if r.random() < 0.05 else 0.5]),
                                 "momentum": momentum, "dampening": dampening,
                                 "weight_decay": r.choice([0.0, 0.0, 0.01, 0.5]), "nesterov": nesterov}


def s_adam(d):
    r = d.rng
    return optimizer_inputs(d), {"lr": r.choice([1e-3, 0.1, 1.0]),
                                 "betas": r.choice([[0.9, 0.999], [0.5, 0.9], [0.0, 0.99]]),
                                 "eps": r.choice([1e-8, 1e-3]),
                                 "weight_decay": r.choice([0.0, 0.0, 0.01, 0.5]),
                                 "decoupled": r.random() < 0.5}
