"""Small hand-written catalogues and OPS.md texts for the tests."""

import copy

EXP = {
    "name": "kiln.exp", "version": 1, "section": "unary",
    "inputs": [{"name": "x"}], "outputs": [{"name": "y", "desc": "same shape"}],
    "attributes": [],
    "dtypes": {"class": "float", "of": "output 0", "one_dtype": True},
    "layout": "strided", "broadcast": False, "differentiable": True,
    "semantics": "the C library function",
    "frontend": {"function": "exp", "promote": "float", "method": True, "inplace": True},
    "functor": "Exp",
    "gradient": {"x": "grad * result"},
    "test": {"domain": [[-3, 3]], "special_values": True},
    "autocast": "float32",
}
MUL = {
    "name": "kiln.mul", "version": 1, "section": "binary",
    "inputs": [{"name": "a"}, {"name": "b"}], "outputs": [{"name": "y"}],
    "attributes": [],
    "dtypes": {"class": "all", "of": "output 0", "one_dtype": True},
    "layout": "strided", "broadcast": True, "differentiable": True,
    "semantics": "a\u00b7b (integers wrap)",
    "frontend": {"function": "mul", "promote": "arith", "method": True, "inplace": True,
                 "scalar": True, "complex": True},
    "functor": "Mul",
    "gradient": {"a": "grad * b", "b": "grad * a"},
    # (mul is differentiable everywhere: the point only exercises the field)
    "test": {"domain": [[-3, 3], [-2, 2]], "nondifferentiable_at": [[], [0]]},
}
SOFTMAX = {
    "name": "kiln.softmax", "version": 2, "section": "softmax",
    "inputs": [{"name": "x"}], "outputs": [{"name": "y"}],
    "attributes": [{"name": "dim", "type": "INT"},
                   {"name": "scale", "type": "FLOAT", "optional": True, "default": "1.0"},
                   {"name": "window", "type": "INTS", "count": 2}],
    "dtypes": {"class": "float", "of": "input 0", "one_dtype": False, "optional": ["int32"]},
    "layout": "contiguous", "broadcast": False, "differentiable": False,
    "semantics": "Numerically stable (max subtracted).",
    "autocast": "lower",
}
CATALOGUE = {
    "dtype_classes": {"all": ["float32", "float64", "int32", "bool"],
                      "float": ["float32", "float64"]},
    "layouts": {"strided": "strided in and out", "contiguous": "contiguous"},
    "sections": [{"id": "unary"}, {"id": "binary"}, {"id": "softmax"}],
    "ops": [EXP, MUL, SOFTMAX],
}
OPS_MD = """# Ops

<!-- catalogue: unary -->
stale
<!-- end catalogue -->

<!-- catalogue: binary -->
<!-- end catalogue -->

<!-- catalogue: softmax -->
<!-- end catalogue -->

<!-- catalogue: autocast -->
<!-- end catalogue -->
"""


def catalogue():
    """A fresh copy of CATALOGUE (a test may change it)."""
    return copy.deepcopy(CATALOGUE)


def op(cat, name):
    return next(o for o in cat["ops"] if o["name"] == name)
