"""The OpInfo-style table of the reference suite: for each op (Kiln's spelling) its
sampler (golden_draw.py), its PyTorch reference, whether it is differentiable, its
tolerance factor and how many cases a seed draws."""
import argparse
import json
import math
import os
import random
import sys

import numpy as np
import torch

from golden_draw import *  # noqa: F401,F403 (the samplers and helpers)
from golden_draw_composite import *  # noqa: F401,F403

# -- references ---------------------------------------------------------------------------

def scalar_binary(fn):
    def f(xs, a):
        if "scalar" in a:
            s = scalar_value(a["scalar"])
            return fn(s, xs[0]) if a.get("side") == "lhs" else fn(xs[0], s)
        return fn(xs[0], xs[1])
    return f


def reduce_call(name):
    def f(xs, a):
        x = xs[0]
        if a["dims"] is None:
            return getattr(torch, name)(x) if not a["keepdim"] else \
                getattr(torch, name)(x, dim=list(range(x.dim())), keepdim=True)
        return getattr(torch, name)(x, dim=a["dims"], keepdim=a["keepdim"])
    return f


def full_or_dims(fn):
    """fn over a list of dims (None or []: every dim), one dim at a time as PyTorch 1.13's
    prod, any and all take only one."""
    def f(xs, a):
        x = xs[0]
        if not a["dims"]:  # None or [] (every dim, as sum's dim=[] in PyTorch and in Kiln)
            y = fn(x)
            return y.reshape([1] * x.dim()) if a["keepdim"] else y
        return _multi_dim(fn, x, a)
    return f


def r_var(name):
    def f(xs, a):
        x = xs[0]
        dims = a["dims"] if a["dims"] is not None else None
        return getattr(torch, name)(x, dim=dims, correction=a["correction"], keepdim=a["keepdim"])
    return f


def r_norm(xs, a):
    return torch.linalg.vector_norm(xs[0], ord=decode(a["p"]), dim=a["dims"], keepdim=a["keepdim"])


def r_maxmin_dim(name):
    def f(xs, a):
        v, i = getattr(torch, name)(xs[0], dim=a["dim"], keepdim=a["keepdim"])
        return [v, i]
    return f


def r_arg(name):
    def f(xs, a):
        return getattr(torch, name)(xs[0], dim=a["dim"], keepdim=a["keepdim"])
    return f


def r_clamp(xs, a):
    lo = scalar_value(a["min"]) if a["min"] else None
    hi = scalar_value(a["max"]) if a["max"] else None
    return torch.clamp(xs[0], min=lo, max=hi)


def r_where(xs, a):
    if "scalar" in a:
        s = scalar_value(a["scalar"])
        return torch.where(xs[0], s, xs[1]) if a["side"] == "lhs" else torch.where(xs[0], xs[1], s)
    return torch.where(xs[0], xs[1], xs[2])


def r_inplace(name):
    def f(xs, a):
        y = xs[0].clone()
        other = scalar_value(a["scalar"]) if "scalar" in a else xs[1]
        getattr(y, name)(other)
        return y
    return f


def r_pool(kind):
    def f(xs, a):
        if kind == "max":
            return F.max_pool2d(xs[0], a["kernel"], a["stride"], a["padding"], ceil_mode=a["ceil_mode"])
        return F.avg_pool2d(xs[0], a["kernel"], a["stride"], a["padding"], ceil_mode=a["ceil_mode"],
                            count_include_pad=a["count_include_pad"])
    return f


def r_batch_norm(xs, a):
    # PyTorch 1.13's CPU batch_norm reads weight, bias and the running statistics as if
    # contiguous (a sliced weight is read as the next elements, an expanded one past its
    # buffer), and its eval-mode backward mixes up a transposed input's elements
    # (batch_norm/10/11 by --seed 10): the reference takes contiguous copies of all of
    # them, whose gradients flow back to the views unchanged.
    x, rm, rv, w, b = [t.contiguous() for t in xs]
    if a["training"]:
        return F.batch_norm(x, None, None, w, b, training=True)
    return F.batch_norm(x, rm, rv, w, b, training=False)


def r_interpolate(xs, a):
    if a["mode"] == "nearest":
        return F.interpolate(xs[0], size=a["size"], mode="nearest")
    return F.interpolate(xs[0], size=a["size"], mode=a["mode"], align_corners=a["align_corners"])


def unary(fn):
    return lambda xs, a: fn(xs[0])


# name: (sampler, reference, differentiable, tolerance factor, cases per seed)
OPS = {}


def op(name, sampler, ref, grad=True, tol=1.0, n=60, grad_inputs=None, float32_for=(),
       broadcast_sum=False, atol_by_input=False, atol_by_terms=False):
    """float32_for: input dtypes whose PyTorch 1.13 CPU kernel is itself wrong; the
    reference is computed in float32 and rounded (as for a missing half kernel).
    broadcast_sum: an elementwise op whose gradients sum terms over broadcast dims or
    an expanded input, which can cancel (make_golden.py's grad_slack).
    atol_by_input: outputs mix every input element (FFTs), so their rounding error
    grows with the largest input: the absolute tolerance is scaled by it.
    atol_by_terms: outputs are sums of products (matmul, einsum) that can cancel: the
    absolute tolerance is scaled by the largest sum of the terms' magnitudes (the op
    on the inputs' absolute values, in float64)."""
    OPS[name] = dict(sampler=sampler, ref=ref, grad=grad, tol=tol, n=n, grad_inputs=grad_inputs,
                     float32_for=float32_for, broadcast_sum=broadcast_sum,
                     atol_by_input=atol_by_input, atol_by_terms=atol_by_terms)


for _n in ["neg", "abs", "sign", "relu"]:
    op(_n, s_unary(ALL), unary(getattr(torch, _n)), grad=_n != "sign", n=50, broadcast_sum=True)
for _n in ["exp", "log", "log1p", "sqrt", "rsqrt", "sin", "cos", "tanh", "erf", "sigmoid"]:
    op(_n, s_unary(ALL), unary(getattr(torch, _n)), n=50, broadcast_sum=True)
for _n in ["isnan", "isinf", "isfinite", "logical_not"]:
    op(_n, s_unary(ALL), unary(getattr(torch, _n)), grad=False, n=30)
# PyTorch 1.13's CPU bfloat16 gelu rounds every step to bfloat16 (tanh(inner) reaches -1
# and the gradient 0); the reference is float32's, which its CUDA kernel computes.
op("gelu", s_gelu, lambda xs, a: F.gelu(xs[0], approximate=a["approximate"]), n=50,
   float32_for=("bfloat16",))
for _n, _fn in [("add", torch.add), ("sub", torch.sub), ("mul", torch.mul), ("div", torch.div)]:
    op(_n, s_binary(ALL), scalar_binary(_fn), n=150, broadcast_sum=True)
op("pow", s_binary(ALL), scalar_binary(torch.pow), n=150, broadcast_sum=True)
op("atan2", s_binary(ALL, scalar=False, lhs_scalar=False), scalar_binary(torch.atan2), n=80,
   broadcast_sum=True)
for _n in ["maximum", "minimum"]:
    op(_n, s_binary(ALL, scalar=False, lhs_scalar=False), scalar_binary(getattr(torch, _n)), n=80)
for _n in ["eq", "ne", "lt", "le", "gt", "ge"]:
    op(_n, s_binary(ALL, lhs_scalar=False), scalar_binary(getattr(torch, _n)), grad=False, n=60)
for _n in ["logical_and", "logical_or"]:
    op(_n, s_binary(ALL, scalar=False, lhs_scalar=False), scalar_binary(getattr(torch, _n)),
       grad=False, n=40)
for _n in ["add_", "sub_", "mul_", "div_"]:
    op(_n, s_inplace, r_inplace(_n), grad=False, n=60)
for _n in ["sum", "mean", "amax", "amin"]:
    op(_n, s_reduce(ALL), reduce_call(_n), tol=10, n=100)
op("prod", s_reduce(ALL), full_or_dims(torch.prod), tol=10, n=100)
op("var", s_var, r_var("var"), tol=10, n=100)
op("std", s_var, r_var("std"), tol=10, n=100)
op("norm", s_norm, r_norm, tol=10, n=100)
op("any", s_any_all, full_or_dims(torch.any), grad=False, n=40)
op("all", s_any_all, full_or_dims(torch.all), grad=False, n=40)
op("max", s_unary(ALL), unary(torch.max), n=40)
op("min", s_unary(ALL), unary(torch.min), n=40)
op("max_dim", s_dim_op(NUMERIC + ["bool"]), r_maxmin_dim("max"), n=80)
op("min_dim", s_dim_op(NUMERIC + ["bool"]), r_maxmin_dim("min"), n=80)
op("argmax", s_dim_op(NUMERIC, optional=True), r_arg("argmax"), grad=False, n=60)
op("argmin", s_dim_op(NUMERIC, optional=True), r_arg("argmin"), grad=False, n=60)
op("cumsum", s_dim_op(ALL, keepdim=False), lambda xs, a: torch.cumsum(xs[0], a["dim"]), tol=10, n=60)
op("cumprod", s_dim_op(ALL, keepdim=False), lambda xs, a: torch.cumprod(xs[0], a["dim"]), tol=10, n=60)
op("softmax", s_dim_op(FLOATS, keepdim=False), lambda xs, a: F.softmax(xs[0], a["dim"]), tol=10, n=80)
# PyTorch 1.13's bfloat16 log_softmax along a dim of size 1 writes NaN into lanes next to
# a -inf (log_softmax/4/56 by make_golden.py --seed 4): its reference is float32's.
op("log_softmax", s_dim_op(FLOATS, keepdim=False), lambda xs, a: F.log_softmax(xs[0], a["dim"]),
   tol=10, n=80, float32_for=("bfloat16",))
op("sort", s_sort, lambda xs, a: list(torch.sort(xs[0], dim=a["dim"], descending=a["descending"],
                                                 stable=True)), n=60)
op("topk", s_topk, lambda xs, a: list(torch.topk(xs[0], a["k"], dim=a["dim"], largest=a["largest"])),
   n=40)
op("clamp", s_clamp, r_clamp, n=100)
op("where", s_where, r_where, n=100)
op("masked_fill", s_masked_fill, lambda xs, a: xs[0].masked_fill(xs[1], scalar_value(a["scalar"])),
   n=80)
op("matmul", s_matmul, lambda xs, a: torch.matmul(xs[0], xs[1]), tol=20, n=100,
   atol_by_terms=True)
op("index_select", s_index_select, lambda xs, a: torch.index_select(xs[0], a["dim"], xs[1]), n=60)
op("gather", s_gather, lambda xs, a: torch.gather(xs[0], a["dim"], xs[1]), n=60)
op("cat", s_cat, lambda xs, a: torch.cat(xs, a["dim"]), n=50)
op("stack", s_stack, lambda xs, a: torch.stack(xs, a["dim"]), n=40)
op("flip", s_flip, lambda xs, a: torch.flip(xs[0], a["dims"]), n=30)
op("roll", s_roll, lambda xs, a: torch.roll(xs[0], a["shifts"], a["dims"]), n=30)
op("tril", s_tri, lambda xs, a: torch.tril(xs[0], a["diagonal"]), n=30)
op("triu", s_tri, lambda xs, a: torch.triu(xs[0], a["diagonal"]), n=30)
op("mse_loss", s_loss_pair(), lambda xs, a: F.mse_loss(xs[0], xs[1], reduction=a["reduction"]),
   tol=10, n=60, broadcast_sum=True)
op("l1_loss", s_loss_pair(), lambda xs, a: F.l1_loss(xs[0], xs[1], reduction=a["reduction"]),
   tol=10, n=40, broadcast_sum=True)
op("binary_cross_entropy_with_logits", s_loss_pair(True),
   lambda xs, a: F.binary_cross_entropy_with_logits(xs[0], xs[1], reduction=a["reduction"]),
   tol=10, n=80)
op("cross_entropy", s_cross_entropy,
   lambda xs, a: F.cross_entropy(xs[0], xs[1], reduction=a["reduction"],
                                 label_smoothing=a.get("label_smoothing", 0.0)), tol=10, n=80)
op("nll_loss", s_nll, lambda xs, a: F.nll_loss(xs[0], xs[1], reduction=a["reduction"]), tol=10, n=40)
op("linear", s_linear, lambda xs, a: F.linear(*xs), tol=20, n=50)
op("layer_norm", s_layer_norm, lambda xs, a: F.layer_norm(xs[0], a["normalized_shape"], *xs[1:]),
   tol=20, n=50)
op("conv2d", s_conv2d, lambda xs, a: F.conv2d(xs[0], xs[1], xs[2] if len(xs) > 2 else None,
                                              a["stride"], a["padding"], a["dilation"], a["groups"]),
   tol=20, n=50)
op("max_pool2d", s_pool("max"), r_pool("max"), n=50)
op("avg_pool2d", s_pool("avg"), r_pool("avg"), tol=10, n=50)
op("adaptive_avg_pool2d", s_adaptive, lambda xs, a: F.adaptive_avg_pool2d(xs[0], a["output_size"]),
   tol=10, n=30)
op("pad", s_pad, lambda xs, a: F.pad(xs[0], a["padding"], a["mode"], a.get("value", 0.0)), n=40)
op("interpolate", s_interpolate, r_interpolate, tol=10, n=40)
op("embedding", s_embedding, lambda xs, a: F.embedding(xs[0], xs[1]), n=20)
op("batch_norm", s_batch_norm, r_batch_norm, tol=50, n=40, grad_inputs=[0, 3, 4])
op("scatter", s_scatter, lambda xs, a: torch.scatter(xs[0], a["dim"], xs[1], xs[2]), n=40)
op("scatter_add", s_scatter_add, lambda xs, a: torch.scatter_add(xs[0], a["dim"], xs[1], xs[2]),
   n=40)
op("index_add", s_index_add, lambda xs, a: torch.index_add(xs[0], a["dim"], xs[1], xs[2]), n=40)
op("masked_scatter", s_masked_scatter, lambda xs, a: xs[0].masked_scatter(xs[1], xs[2]), n=40)
op("index_put", s_index_put,
   lambda xs, a: xs[0].clone().index_put_(tuple(xs[1:-1]), xs[-1], accumulate=a["accumulate"]),
   grad=False, n=40)
op("to", s_to, lambda xs, a: xs[0].to(DTYPES[a["dtype"]]), n=60)
def r_fft(name, complex_input):
    def f(xs, a):
        x = torch.view_as_complex(xs[0].contiguous()) if complex_input else xs[0]
        y = getattr(torch.fft, name)(x, n=a["n"], dim=a["dim"], norm=a["norm"])
        return torch.view_as_real(y) if y.is_complex() else y
    return f


for _n, _c in [("fft", False), ("rfft", False), ("ifft", True), ("irfft", True)]:
    op("fft_" + _n, s_fft(_c), r_fft(_n, _c), tol=20, n=40, atol_by_input=True)
op("one_hot", s_one_hot, lambda xs, a: F.one_hot(xs[0], a["num_classes"]), grad=False, n=20)


def _multi_dim(fn, x, a):
    dims = a["dims"]
    rank = max(x.dim(), 1)
    norm = []
    for dd in dims:
        if not -rank <= dd < rank:
            raise IndexError("Dimension out of range")
        norm.append(dd % rank)
    if len(set(norm)) != len(norm):
        raise RuntimeError("dim appears multiple times in the list of dims")
    y = x
    for dd in sorted(norm, reverse=True):
        y = fn(y, dim=dd, keepdim=True)
    if not a["keepdim"] and x.dim():
        for dd in sorted(norm, reverse=True):
            y = y.squeeze(dd)
    return y


# -- composite methods ---------------------------------------------------------------------

def r_fftn(name, complex_input):
    def f(xs, a):
        x = torch.view_as_complex(xs[0].contiguous()) if complex_input else xs[0]
        kw = {"s": a["s"], "norm": a["norm"]}
        if a["dims"] is not None:
            kw["dim"] = a["dims"]
        y = getattr(torch.fft, name)(x, **kw)
        return torch.view_as_real(y) if y.is_complex() else y
    return f


for _n in ["fft2", "ifft2", "rfft2", "irfft2", "fftn", "ifftn", "rfftn", "irfftn"]:
    op("fft_" + _n, s_fftn(_n), r_fftn(_n, _n in ("ifft2", "irfft2", "ifftn", "irfftn")),
       tol=20, n=30, atol_by_input=True)
op("einsum", s_einsum, lambda xs, a: torch.einsum(a["equation"], *xs), tol=20, n=80,
   atol_by_terms=True)
op("unique", s_unique,
   lambda xs, a: list(torch.unique(xs[0], sorted=True, return_inverse=True, return_counts=True)),
   grad=False, n=50)
op("dropout", s_dropout, lambda xs, a: F.dropout(xs[0], a["p"], a["training"]), n=30)
op("argsort", s_argsort,
   lambda xs, a: torch.sort(xs[0], dim=a["dim"], descending=a["descending"], stable=True)[1],
   grad=False, n=40)
op("nonzero", s_nonzero, lambda xs, a: torch.nonzero(xs[0]), grad=False, n=30)
# PyTorch 1.13's masked_select backward, where the mask broadcasts x to more dims, lays the
# gradient out in x's memory order instead of its logical one (a transposed x gets its
# gradient transposed; masked_select/5/17 by --seed 5): the reference selects from a
# contiguous copy, whose gradient flows back to the view unchanged.
op("masked_select", s_masked_select,
   lambda xs, a: torch.masked_select(xs[0].contiguous(), xs[1]), n=40)
op("repeat", s_repeat, lambda xs, a: xs[0].repeat(a["reps"]), n=40)
op("diag", s_diag, lambda xs, a: torch.diag(xs[0], a["diagonal"]), n=30)


def r_split(xs, a):
    x = xs[0]
    if a["kind"] == "chunk":
        return list(torch.chunk(x, a["arg"], a["dim"]))
    return list(torch.split(x, a["arg"], a["dim"]))


op("split", s_split, r_split, n=50)


def creation_kwargs(a):
    return {"dtype": DTYPES[a["dtype"]]} if a["dtype"] else {}


def r_arange(xs, a):
    end = scalar_value(a["end"])
    if a["start"] is None:
        return torch.arange(end, **creation_kwargs(a))
    start = scalar_value(a["start"])
    if a["step"] is None:
        return torch.arange(start, end, **creation_kwargs(a))
    return torch.arange(start, end, scalar_value(a["step"]), **creation_kwargs(a))


op("full", s_full, lambda xs, a: torch.full(a["shape"], scalar_value(a["value"]),
                                            **creation_kwargs(a)), grad=False, n=40)
op("arange", s_arange, r_arange, grad=False, n=60)
op("linspace", s_linspace,
   lambda xs, a: torch.linspace(a["start"], a["end"], a["steps"], **creation_kwargs(a)),
   grad=False, n=30)


def r_optimizer(kind):
    """Two steps of torch.optim's SGD or Adam/AdamW on a copy of the parameter, with the
    two gradients given; the parameter after them."""
    def f(xs, a):
        p = xs[0].detach().clone().requires_grad_(True)
        if kind == "sgd":
            opt = torch.optim.SGD([p], lr=a["lr"], momentum=a["momentum"], dampening=a["dampening"],
                                  weight_decay=a["weight_decay"], nesterov=a["nesterov"])
        else:
            cls = torch.optim.AdamW if a["decoupled"] else torch.optim.Adam
            opt = cls([p], lr=a["lr"], betas=tuple(a["betas"]), eps=a["eps"],
                      weight_decay=a["weight_decay"])
        for g in xs[1:]:
            p.grad = g.detach().clone()
            opt.step()
        return p.detach()
    return f


op("sgd", s_sgd, r_optimizer("sgd"), grad=False, tol=10, n=40)
op("adam", s_adam, r_optimizer("adam"), grad=False, tol=10, n=40)
