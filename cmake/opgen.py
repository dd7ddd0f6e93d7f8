#!/usr/bin/env python3
"""The op generator: everything derived from api/ops.json, the catalogue's one description.

    opgen.py --catalogue api/ops.json --out <build>/generated      (the build runs this)
    opgen.py --catalogue api/ops.json --ops-md api/OPS.md --check  (the CTest docs.ops_catalogue)
    opgen.py --catalogue api/ops.json --ops-md api/OPS.md --update (the target kiln_update_ops_md)

With --out it writes, each file only when its text changes (so nothing rebuilds for nothing):
  api/kiln/op_catalogue.h          C: the X-macro KILN_OP_CATALOGUE and the dtype-class masks
  sdk/kiln/sdk/pointwise_ops.h     C++: the pointwise ops a plugin registers from one
                                   functor each (KILN_UNARY_POINTWISE_OPS, ...)
  frontend/kiln/pointwise_ops.h    C++: the free functions of the generated pointwise ops
  frontend/kiln/pointwise_methods.h  C++: their Tensor methods (included in class Tensor)
  frontend/pointwise_ops.cpp       C++: their definitions, with each gradient formula
  sdk/kiln/sdk/op_attrs.h          C++: each op's attributes as a struct that a kernel
                                   reads and type-checks in one call (kiln::sdk::attrs)
  frontend/private/op_attrs.h      C++: the same structs as the frontend packs them
                                   (kiln::detail::attrs), for detail::dispatch
  frontend/private/op_dtype_rules.h  C++: the dtypes the dispatcher lets through per op
  frontend/private/op_autocast.h   C++: each op's autocast policy (KILN_OP_AUTOCAST)
  testing/kiln/testing/pointwise_ops.h  C++: what the conformance suite and gradcheck
                                   need to test every generated pointwise op
Python 3 standard library only (Debian's python3).
"""

import argparse
import json
import os
import re
import sys
import textwrap

LAYOUT_FLAGS = {
    "strided": "KILN_KERNEL_STRIDED_INPUTS | KILN_KERNEL_STRIDED_OUTPUTS",
    "strided_in": "KILN_KERNEL_STRIDED_INPUTS",
    "strided_out": "KILN_KERNEL_STRIDED_OUTPUTS",
    "contiguous": "0",
}
CLASS_WORDS = {
    "all": "all",
    "non_bool": "all but bool",
    "float_int": "float, int",
    "signed": "float, int32, int64",
    "float": "float",
    "float32_64": "float32, float64",
    "complex": "complex64, complex128",
}
# What an op does with its floating-point inputs inside a kiln::autocast scope
# (frontend/src/amp/autocast.h's AutocastPolicy), and how OPS.md says it.
AUTOCAST_POLICIES = {
    "lower": ("Lower", "floating inputs other than float64 are cast to the scope's dtype (float16 or bfloat16)"),
    "float32": ("Float32", "float16 and bfloat16 inputs are cast to float32"),
}
# How the frontend turns operand dtypes into the dtype an op computes in (the
# "promote" of a pointwise op's "frontend" entry): ops/pointwise.h's Promote.
PROMOTIONS = {"arith": "Arith", "float": "Float", "compare": "Compare", "logical": "Logical"}


class CatalogueError(Exception):
    pass


def fail(where, message):
    raise CatalogueError(f"api/ops.json: {where}: {message}")


def write_if_changed(path, text):
    old = None
    if os.path.exists(path):
        with open(path, encoding="utf-8") as f:
            old = f.read()
    if old != text:
        os.makedirs(os.path.dirname(path), exist_ok=True)
        tmp = path + ".tmp"
        with open(tmp, "w", encoding="utf-8") as f:
            f.write(text)
        os.replace(tmp, path)


def short_name(op):
    m = re.fullmatch(r"kiln\.([a-z0-9_]+)", op["name"])
    if not m:
        fail(op["name"], "not named kiln.<lowercase>")
    return m.group(1)


def deciding_operand(op):
    m = re.fullmatch(r"(input|output) ([0-9]+)", op["dtypes"]["of"])
    if not m:
        fail(op["name"], f"dtypes.of '{op['dtypes']['of']}' is not 'input N' or 'output N'")
    return (1 if m.group(1) == "output" else 0), int(m.group(2))


def check_catalogue(cat):
    sections = {s["id"] for s in cat["sections"]}
    seen = set()
    for op in cat["ops"]:
        name = short_name(op)
        if name in seen:
            fail(op["name"], "listed twice")
        seen.add(name)
        if op["section"] not in sections:
            fail(op["name"], f"unknown section '{op['section']}'")
        if op["dtypes"]["class"] not in cat["dtype_classes"]:
            fail(op["name"], f"unknown dtype class '{op['dtypes']['class']}'")
        if op["layout"] not in LAYOUT_FLAGS:
            fail(op["name"], f"unknown layout '{op['layout']}'")
        deciding_operand(op)
        for d in op["dtypes"].get("optional", []):
            known = {name for members in cat["dtype_classes"].values() for name in members}
            if d not in known or d in cat["dtype_classes"][op["dtypes"]["class"]]:
                fail(op["name"], f"optional dtype '{d}' is not a dtype outside the op's class")
        check_attributes(op)
        if op.get("autocast", "lower") not in AUTOCAST_POLICIES:
            fail(op["name"], f"autocast must be one of {sorted(AUTOCAST_POLICIES)}")
        if "frontend" in op:
            check_pointwise(op)


# -- the C catalogue header -------------------------------------------------------------


def catalogue_header(cat):
    out = [
        "/* kiln/op_catalogue.h: generated by cmake/opgen.py from api/ops.json in the Kiln\n"
        " * sources (installed as share/doc/kiln/ops.json). Do not edit: change api/ops.json\n"
        " * (the catalogue's one description) instead. */\n"
        "#ifndef KILN_OP_CATALOGUE_H\n#define KILN_OP_CATALOGUE_H\n\n"
        '#include "kiln/c_api.h"\n\n'
        "/* The dtype classes of the catalogue (share/doc/kiln/ops.json), as masks of\n"
        " * (1u << kiln_dtype). */\n"
    ]
    for cls in sorted(cat["dtype_classes"]):
        mask = " | ".join(f"(1u << KILN_DTYPE_{d.upper()})" for d in cat["dtype_classes"][cls])
        out.append(f"#define KILN_DTYPES_{cls.upper()} ({mask})\n")
    out.append(
        "\n/* X(name, version, dtypes, dtype_of_output, dtype_operand, one_dtype, kernel_flags,\n"
        " *   differentiable, num_inputs, num_outputs) for every op, in catalogue order:\n"
        ' *   name            without the "kiln." prefix\n'
        " *   dtypes          the KILN_DTYPES_* mask the deciding operand's dtype must be in\n"
        " *   dtype_of_output 1 when that operand is an output, 0 an input\n"
        " *   dtype_operand   its index among the outputs or inputs\n"
        " *   one_dtype       1 when every other operand has that dtype too\n"
        " *   kernel_flags    the KILN_KERNEL_* layout flags a kernel may set (share/doc/kiln/OPS.md)\n"
        " *   differentiable  1 when the frontend records a gradient for the op */\n"
        "#define KILN_OP_CATALOGUE(X) \\\n"
    )
    rows = []
    for op in cat["ops"]:
        of_output, index = deciding_operand(op)
        rows.append(
            f"  X({short_name(op)}, {op['version']}, KILN_DTYPES_{op['dtypes']['class'].upper()}, "
            f"{of_output}, {index}, {int(bool(op['dtypes']['one_dtype']))}, "
            f"{LAYOUT_FLAGS[op['layout']]}, {int(bool(op['differentiable']))}, "
            f"{len(op['inputs'])}, {len(op['outputs'])})"
        )
    out.append(" \\\n".join(rows) + "\n")
    out.append(
        f"\n/* The number of catalogue ops. */\n#define KILN_OP_CATALOGUE_SIZE {len(cat['ops'])}\n"
        "\n#endif /* KILN_OP_CATALOGUE_H */\n"
    )
    return "".join(out)


# -- api/OPS.md ---------------------------------------------------------------------------


def operands_cell(operands):
    if not operands:
        return "—"
    return ", ".join(f"`{o['name']}`" + (f" ({o['desc']})" if "desc" in o else "") for o in operands)


def attributes_cell(attributes):
    if not attributes:
        return "—"
    cells = []
    for a in attributes:
        count = f"[{a['count']}]" if "count" in a else ""
        cell = f"`{a['name']}: {a['type']}{count}`"
        if "default" in a:
            default = a["default"]
            if isinstance(default, bool):
                default = "true" if default else "false"
            cell += f" (optional, default `{default}`)"
        cells.append(cell)
    return ", ".join(cells)


def section_table(cat, section):
    rows = [
        "| op | inputs | outputs | attributes | dtypes | layout | grad | semantics |\n",
        "|---|---|---|---|---|---|---|---|\n",
    ]
    for op in cat["ops"]:
        if op["section"] != section:
            continue
        dtypes = CLASS_WORDS[op["dtypes"]["class"]]
        if op["dtypes"]["of"] != "output 0":
            dtypes += f" ({op['dtypes']['of']})"
        if "note" in op["dtypes"]:
            dtypes += f"; {op['dtypes']['note']}"
        layout = cat["layouts"][op["layout"]]
        if op["broadcast"]:
            layout += "; broadcast applied"
        grad = "yes" if op["differentiable"] else "—"
        rows.append(
            f"| `{op['name']}` | {operands_cell(op['inputs'])} | {operands_cell(op['outputs'])} | "
            f"{attributes_cell(op['attributes'])} | {dtypes} | {layout} | {grad} | "
            f"{op['semantics']} |\n"
        )
    if len(rows) == 2:
        raise CatalogueError(f"api/OPS.md names catalogue section '{section}', which has no ops")
    return "".join(rows)


def autocast_table(cat):
    rows = ["| policy | ops | inside a `kiln::autocast` scope |\n", "|---|---|---|\n"]
    for policy, (_, meaning) in AUTOCAST_POLICIES.items():
        ops = ", ".join(f"`{op['name']}`" for op in cat["ops"] if op.get("autocast") == policy)
        rows.append(f"| `{policy}` | {ops} | {meaning} |\n")
    return "".join(rows)


def autocast_header(cat):
    rows = [f"  X({short_name(op)}, {AUTOCAST_POLICIES[op['autocast']][0] if 'autocast' in op else 'None'})"
            for op in cat["ops"]]
    return (generated_banner("//") +
            "// X(op, policy) for every catalogue op, in catalogue order: what the op does with\n"
            "// its floating-point inputs under kiln::autocast (amp/autocast.h's AutocastPolicy).\n"
            "#pragma once\n\n#define KILN_OP_AUTOCAST(X) \\\n" + " \\\n".join(rows) + "\n")


def render_ops_md(cat, text):
    end_mark = "<!-- end catalogue -->"
    pattern = re.compile(r"(<!-- catalogue: ([a-z_]+) -->\n)(.*?)(?=" + re.escape(end_mark) + ")", re.S)
    seen = []

    def table(m):
        if m.group(2) == "autocast":
            return m.group(1) + autocast_table(cat)
        seen.append(m.group(2))
        return m.group(1) + section_table(cat, m.group(2))

    result = pattern.sub(table, text)
    if result.count("<!-- catalogue: ") != len(seen) + result.count("<!-- catalogue: autocast -->"):
        raise CatalogueError("api/OPS.md: a catalogue marker without '" + end_mark + "'")
    for s in cat["sections"]:
        if s["id"] not in seen:
            raise CatalogueError(
                f"api/OPS.md has no table for catalogue section '{s['id']}' "
                f"(add <!-- catalogue: {s['id']} --> ... {end_mark})"
            )
    return result


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--catalogue", required=True)
    parser.add_argument("--out", help="the build's folder of generated files")
    parser.add_argument("--ops-md", help="api/OPS.md, to --check or --update")
    mode = parser.add_mutually_exclusive_group()
    mode.add_argument("--check", action="store_true")
    mode.add_argument("--update", action="store_true")
    args = parser.parse_args()
    try:
        with open(args.catalogue, encoding="utf-8") as f:
            cat = json.load(f)
        check_catalogue(cat)
        if args.out:
            generate(cat, args.out)
        if args.ops_md:
            with open(args.ops_md, encoding="utf-8") as f:
                current = f.read()
            expected = render_ops_md(cat, current)
            if args.update:
                if current != expected:
                    write_if_changed(args.ops_md, expected)
                    print(f"rewrote {args.ops_md} from {args.catalogue}")
            elif current != expected:
                raise CatalogueError(
                    f"{args.ops_md} is out of date with {args.catalogue}: run "
                    "`cmake --build build --target kiln_update_ops_md` and commit both"
                )
            else:
                print(f"{args.ops_md} agrees with {args.catalogue}")
    except (CatalogueError, KeyError, json.JSONDecodeError) as e:
        what = f"missing key {e}" if isinstance(e, KeyError) else str(e)
        print(f"opgen.py: {what}", file=sys.stderr)
        return 1
    return 0


# -- pointwise ops: frontend, registrations, test table ----------------------------------
#
# A pointwise op's entry carries, beyond the ABI fields:
#   "frontend": {"function": "exp", "promote": "float", "method": true,
#                "inplace": false, "scalar": false, "complex": false}
#       function  the kiln:: free function; promote: how operand dtypes become the
#       computation's (arith | float | compare | logical); method: a Tensor method too;
#       inplace: a Tensor method <function>_ (result kept in the tensor's dtype; not for
#       compare/logical ops); scalar: Scalar overloads (binary); complex: complex operands
#       go to the frontend's complex spelling (ops/complex.h) instead of being refused
#   "functor": "Exp"      the kiln::sdk functor (kiln/sdk/functors.h) every plugin's
#       generic loop applies; the op is then registered by KILN_*_POINTWISE_OPS
#   "gradient": {"x": "grad * result"}  one C++ expression per input over the inputs,
#       `result` and `grad`, in namespace kiln (helpers: ops/formulas.h); or
#       {"backward": "maximum_backward"}, a hand-written function of (grad, inputs...)
#       that returns every input's gradient
#   "test": {"domain": [[lo, hi], ...], "special": false}  where the conformance suite
#       and gradcheck sample each input; special: add ±0, ±inf, NaN cases

IDENT = re.compile(r"[a-z_][a-z0-9_]*")


def pointwise_ops(cat):
    return [op for op in cat["ops"] if "frontend" in op]


def check_pointwise(op):
    name = op["name"]
    fe = op["frontend"]
    if not IDENT.fullmatch(fe.get("function", "")):
        fail(name, "frontend.function is not a C++ name")
    if fe.get("promote") not in PROMOTIONS:
        fail(name, f"frontend.promote must be one of {sorted(PROMOTIONS)}")
    if len(op["inputs"]) not in (1, 2) or len(op["outputs"]) != 1 or op["attributes"]:
        fail(name, "a generated pointwise op has 1 or 2 inputs, 1 output and no attributes")
    if len(op["inputs"]) == 1 and fe.get("scalar"):
        fail(name, "scalar spellings are generated for binary ops only")
    if fe.get("inplace") and fe["promote"] not in ("arith", "float"):
        fail(name, "an in-place spelling needs a result of the operand's dtype (arith or float)")
    grad = op.get("gradient")
    if bool(op["differentiable"]) != (grad is not None):
        fail(name, "differentiable ops, and only they, have a gradient")
    if grad is not None and "backward" not in grad:
        for operand in op["inputs"]:
            if operand["name"] not in grad:
                fail(name, f"no gradient formula for input '{operand['name']}'")
        for key in grad:
            if key not in [o["name"] for o in op["inputs"]]:
                fail(name, f"a gradient for '{key}', which is not an input")
    if "functor" in op and (not op["dtypes"]["one_dtype"] or fe["promote"] not in ("arith", "float")):
        fail(name, "a functor-registered op keeps one dtype (promote arith or float)")
    domain = op.get("test", {}).get("domain", [[-3, 3]] * len(op["inputs"]))
    if len(domain) != len(op["inputs"]) or any(len(d) != 2 or d[0] >= d[1] for d in domain):
        fail(name, "test.domain is one [lo, hi] per input")


def pascal(name):
    return "".join(part.capitalize() for part in name.split("_"))


def uses(expression, name):
    return re.search(r"\b" + re.escape(name) + r"\b", expression) is not None


def generated_banner(comment):
    return (f"{comment} Generated by cmake/opgen.py from api/ops.json in the Kiln sources (installed\n"
            f"{comment} as share/doc/kiln/ops.json). Do not edit: change the catalogue entry (or the\n"
            f"{comment} hand-written helpers it names) instead.\n")


def sdk_pointwise_header(cat):
    out = [generated_banner("//"),
           "// The pointwise ops each plugin registers from one functor (kiln/sdk/functors.h):\n"
           "// X(op, Functor, dtypes) with `op` the catalogue name without \"kiln.\", `Functor`\n"
           "// in kiln::sdk, and `dtypes` the KILN_DTYPES_* mask of its operands (all one dtype,\n"
           "// strided in and out). A plugin expands these lists into its kernel table:\n"
           "// @code\n"
           "//   #define MY_UNARY(op, F, dtypes) list.push_back(my_unary<op, sdk::F, dtypes>());\n"
           "//   KILN_UNARY_POINTWISE_OPS(MY_UNARY)\n"
           "// @endcode\n"
           "#ifndef KILN_SDK_POINTWISE_OPS_H\n#define KILN_SDK_POINTWISE_OPS_H\n\n"
           '#include "kiln/op_catalogue.h"\n\n']
    for arity, macro in ((1, "KILN_UNARY_POINTWISE_OPS"), (2, "KILN_BINARY_POINTWISE_OPS")):
        rows = [f"  X({short_name(op)}, {op['functor']}, KILN_DTYPES_{op['dtypes']['class'].upper()})"
                for op in pointwise_ops(cat) if "functor" in op and len(op["inputs"]) == arity]
        out.append(f"#define {macro}(X) \\\n" + " \\\n".join(rows) + "\n\n")
    out.append("#endif  // KILN_SDK_POINTWISE_OPS_H\n")
    return "".join(out)


def parameters(op):
    return ", ".join(f"const Tensor& {o['name']}" for o in op["inputs"])


def frontend_declarations(cat):
    out = [generated_banner("//"),
           "// The pointwise ops' free functions; kiln/ops.h includes this file.\n"
           "#pragma once\n\n"
           '#include "kiln/tensor.h"\n\nnamespace kiln {\n\n']
    for op in pointwise_ops(cat):
        fe = op["frontend"]
        fn = fe["function"]
        grad = "" if op["differentiable"] else " Not differentiable."
        semantics = op["semantics"].replace("\\|", "|")  # Markdown's table escape
        out.append(f"/// {op['name']}: {semantics}.{grad}\n")
        out.append(f"Tensor {fn}({parameters(op)});\n")
        if fe.get("scalar"):
            a, b = (o["name"] for o in op["inputs"])
            out.append(f"Tensor {fn}(const Tensor& {a}, Scalar {b});\n")
            out.append(f"Tensor {fn}(Scalar {a}, const Tensor& {b});\n")
    out.append("\n}  // namespace kiln\n")
    return "".join(out)


def frontend_methods(cat):
    out = [generated_banner("//"),
           "// The pointwise ops' Tensor methods, declared inside class Tensor (kiln/tensor.h):\n"
           "// x.exp() is kiln::exp(x); x.exp_() and a.add_(b) work in place, in x's (a's)\n"
           "// dtype, and are not recorded by autograd.\n"]
    for op in pointwise_ops(cat):
        fe = op["frontend"]
        fn = fe["function"]
        if len(op["inputs"]) == 1:
            if fe.get("method"):
                out.append(f"Tensor {fn}() const;\n")
            if fe.get("inplace"):
                out.append(f"Tensor& {fn}_();\n")
            continue
        if fe.get("method"):
            out.append(f"Tensor {fn}(const Tensor& other) const;\n")
            if fe.get("scalar"):
                out.append(f"Tensor {fn}(Scalar other) const;\n")
        if fe.get("inplace"):
            out.append(f"Tensor& {fn}_(const Tensor& other);\n")
            out.append(f"Tensor& {fn}_(Scalar other);\n")
    return "".join(out)


def gradient_code(op, fn, promote_call):
    names = [o["name"] for o in op["inputs"]]
    grad = op["gradient"]
    node = pascal(fn) + "Backward"
    inputs_ptrs = ", ".join("&" + n for n in names)
    lines = [f"  Tensor out_ = {promote_call};\n"]
    if len(names) == 1:
        x = names[0]
        # A hand-written helper of a unary op is called as helper(grad, x).
        formula = f"{grad['backward']}(grad, {x})" if "backward" in grad else grad[x]
        saves = [n for n in (x, "result") if uses(formula, n)]
        saved_list = ", ".join(n if n != "result" else "out_" for n in saves)
        body = "".join(f"                 const Tensor& {n} = saved[{i}];\n" for i, n in enumerate(saves))
        lines.append(f"  if (ag::needs_grad({{{inputs_ptrs}}}))\n")
        param = "const Saved& saved" if saves else "const Saved&"
        lines.append(f"    ag::record(\"{node}\", out_, {{{inputs_ptrs}}}, {{{saved_list}}},\n"
                     f"               []({param}, const Tensor& grad) -> Grads {{\n"
                     f"{body}"
                     f"                 return {{{formula}}};\n"
                     f"               }});\n")
        lines.append("  return out_;\n")
        return "".join(lines)
    a, b = names
    lines.append(f"  if (ag::needs_grad({{{inputs_ptrs}}})) {{\n"
                 f"    const bool grad_{a} = ag::requires_grad({a}), grad_{b} = ag::requires_grad({b});\n")
    captures = f"grad_{a}, grad_{b}, shape_{a} = {a}.shape().vec(), shape_{b} = {b}.shape().vec()"
    if "backward" in grad:
        saved_list = f"{a}, {b}"
        body = (f"        auto [d{a}, d{b}] = {grad['backward']}(grad, saved[0], saved[1]);\n")
        ga, gb = f"d{a}", f"d{b}"
    else:
        saves, conditions = [], []
        for n in (a, b, "result"):
            needed_by = [i for i in (a, b) if uses(grad[i], n)]
            if needed_by:
                saves.append(n)
                conditions.append(" || ".join(f"grad_{i}" for i in needed_by))
        saved_list = ", ".join(
            f"{c} ? {'out_' if n == 'result' else n} : Tensor()" for n, c in zip(saves, conditions))
        body = "".join(f"        const Tensor& {n} = saved[{i}];\n" for i, n in enumerate(saves))
        ga, gb = grad[a], grad[b]
    param = "const Saved& saved" if saved_list else "const Saved&"
    lines.append(f"    ag::record(\"{node}\", out_, {{{inputs_ptrs}}}, {{{saved_list}}},\n"
                 f"               [{captures}]({param}, const Tensor& grad) -> Grads {{\n"
                 f"{body}"
                 f"        return {{grad_{a} ? ag::sum_to({ga}, shape_{a}) : Tensor(),\n"
                 f"                grad_{b} ? ag::sum_to({gb}, shape_{b}) : Tensor()}};\n"
                 f"      }});\n  }}\n  return out_;\n")
    return "".join(lines)


def frontend_definitions(cat):
    out = [generated_banner("//"),
           "// The pointwise ops' functions, methods and gradients.\n"
           '#include "dispatch/autocast.h"\n'
           '#include "ops/formulas.h"\n'
           '#include "autograd/record.h"\n'
           '#include "kiln/ops.h"\n'
           '#include "ops/complex.h"\n'
           '#include "ops/pointwise.h"\n\n'
           "namespace kiln {\n\n"
           "using detail::OpId;\nusing detail::Promote;\nusing namespace detail::formulas;\n"
           "namespace ag = detail::autograd_impl;\n"
           "using Grads = std::vector<Tensor>;\nusing Saved = std::vector<Tensor>;\n\n"]
    for op in pointwise_ops(cat):
        fe = op["frontend"]
        fn, short = fe["function"], short_name(op)
        promote = f"Promote::{PROMOTIONS[fe['promote']]}"
        names = [o["name"] for o in op["inputs"]]
        kind = "unary" if len(names) == 1 else "binary"
        call = f"detail::pointwise_{kind}(OpId::{short}, \"{fn}\", {', '.join(names)}, {promote})"
        out.append(f"Tensor {fn}({parameters(op)}) {{\n")
        if fe.get("complex"):
            operands = ", ".join(f"&{n}" for n in names)
            out.append(f"  if (detail::any_complex({{{operands}}})) [[unlikely]]\n"
                       f"    return detail::complex_pointwise(OpId::{short}, \"{fn}\", {', '.join(names)});\n")
        if "autocast" in op:
            # Under autocast: run again on the cast inputs, whose casts autograd records.
            casts = ", ".join(f"{n}_cast = detail::autocast(OpId::{short}, {n})" for n in names)
            changed = " || ".join(f"{n}_cast.impl() != {n}.impl()" for n in names)
            args = ", ".join(f"{n}_cast" for n in names)
            out.append(f"  if (detail::autocast_on) {{\n    const Tensor {casts};\n"
                       f"    if ({changed}) return {fn}({args});\n  }}\n")
        out.append(gradient_code(op, fn, call) if op["differentiable"] else f"  return {call};\n")
        out.append("}\n")
        if fe.get("scalar"):
            a, b = names
            out.append(f"Tensor {fn}(const Tensor& {a}, Scalar {b}) {{\n"
                       f"  return {fn}({a}, detail::scalar_operand({a}, {b}, \"{fn}\", {promote}));\n}}\n"
                       f"Tensor {fn}(Scalar {a}, const Tensor& {b}) {{\n"
                       f"  return {fn}(detail::scalar_operand({b}, {a}, \"{fn}\", {promote}), {b});\n}}\n")
        if fe.get("method"):
            if kind == "unary":
                out.append(f"Tensor Tensor::{fn}() const {{ return kiln::{fn}(*this); }}\n")
            else:
                out.append(f"Tensor Tensor::{fn}(const Tensor& other) const {{ return kiln::{fn}(*this, other); }}\n")
                if fe.get("scalar"):
                    out.append(f"Tensor Tensor::{fn}(Scalar other) const {{ return kiln::{fn}(*this, other); }}\n")
        if fe.get("inplace") and kind == "unary":
            out.append(f"Tensor& Tensor::{fn}_() {{\n"
                       f"  return detail::pointwise_unary_inplace(OpId::{short}, \"{fn}_\", *this, {promote});\n}}\n")
        elif fe.get("inplace"):
            out.append(f"Tensor& Tensor::{fn}_(const Tensor& other) {{\n"
                       f"  return detail::pointwise_inplace(OpId::{short}, \"{fn}_\", *this, other, {promote});\n}}\n"
                       f"Tensor& Tensor::{fn}_(Scalar other) {{\n"
                       f"  return detail::pointwise_inplace(OpId::{short}, \"{fn}_\", *this,\n"
                       f"                                   detail::scalar_operand(*this, other, \"{fn}_\", {promote}),\n"
                       f"                                   {promote});\n}}\n")
        out.append("\n")
    out.append("}  // namespace kiln\n")
    return "".join(out)


def test_table(cat):
    out = [generated_banner("//"),
           "// Every generated pointwise op, for the tests that cover them all (the conformance\n"
           "// suite, gradcheck): its function, dtypes and where to sample its inputs.\n"
           "#pragma once\n\n#include <cstdint>\n\n"
           '#include "kiln/kiln.h"\n#include "kiln/op_catalogue.h"\n\n'
           "namespace kiln::testing {\n\n"
           "struct PointwiseOp {\n"
           "  const char* op;        ///< \"kiln.exp\"\n"
           "  Tensor (*unary)(const Tensor&);                 ///< set for one input\n"
           "  Tensor (*binary)(const Tensor&, const Tensor&);  ///< set for two\n"
           "  uint32_t dtypes;       ///< KILN_DTYPES_* of the inputs the kernels take\n"
           "  double domain[2][2];   ///< [input][lo, hi] to sample from\n"
           "  bool differentiable;\n"
           "  bool special;          ///< also check ±0, ±inf and NaN\n"
           "};\n\n"
           "inline const PointwiseOp kPointwiseOps[] = {\n"]
    for op in pointwise_ops(cat):
        fe = op["frontend"]
        fn = fe["function"]
        n = len(op["inputs"])
        sig = "Tensor (*)(const Tensor&)" if n == 1 else "Tensor (*)(const Tensor&, const Tensor&)"
        ptr = f"static_cast<{sig}>(&kiln::{fn})"
        unary, binary = (ptr, "nullptr") if n == 1 else ("nullptr", ptr)
        test = op.get("test", {})
        domain = test.get("domain", [[-3, 3]] * n)
        domain = domain + domain[:1] if n == 1 else domain
        dom = ", ".join("{" + f"{float(lo)!r}, {float(hi)!r}" + "}" for lo, hi in domain)
        out.append(
            f"    {{\"{op['name']}\", {unary}, {binary}, "
            f"KILN_DTYPES_{op['dtypes']['class'].upper()}, {{{dom}}}, "
            f"{str(bool(op['differentiable'])).lower()}, {str(bool(test.get('special'))).lower()}}},\n")
    out.append("};\n\n}  // namespace kiln::testing\n")
    return "".join(out)


def dtype_rules(cat):
    out = [generated_banner("//"),
           "// X(op, allowed, dtype_of_output, dtype_operand) for every catalogue op, in catalogue\n"
           "// order: the dtypes the deciding operand may have (its class and the optional dtypes\n"
           "// a kernel may take), for the dispatcher's check (libkiln only, not installed).\n"
           "#pragma once\n\n"
           '#include "kiln/op_catalogue.h"\n\n'
           "#define KILN_OP_DTYPE_RULES(X) \\\n"]
    rows = []
    for op in cat["ops"]:
        of_output, index = deciding_operand(op)
        mask = f"KILN_DTYPES_{op['dtypes']['class'].upper()}"
        for d in op["dtypes"].get("optional", []):
            mask += f" | (1u << KILN_DTYPE_{d.upper()})"
        rows.append(f"  X({short_name(op)}, ({mask}), {of_output}, {index})")
    out.append(" \\\n".join(rows) + "\n")
    return "".join(out)


# -- attributes: one struct per attribute list, packed by the frontend, read by kernels ---
#
# An attribute is {"name", "type": FLOAT|INT|STRING|INTS, "count" (INTS: how many
# values), "optional" and "default" (a C++ literal; the value a kernel sees when a caller
# built against an older catalogue does not pass it)}.

ATTR_TYPES = {
    # type: (frontend field, SDK field, OpArgs reader, frontend packer)
    "FLOAT": ("double", "double", "attr_float", "float_attr"),
    "INT": ("int64_t", "int64_t", "attr_int", "int_attr"),
    "STRING": ("const char*", "const char*", "attr_string", "string_attr"),
    "INTS": (None, "const int64_t*", "attr_ints", "ints_attr"),
}
# The optional types OpArgs has a reader with a fallback for.
OPTIONAL_READERS = {"STRING": "attr_string_or", "FLOAT": "attr_float_or", "INT": "attr_int_or"}


def check_attributes(op):
    names = set()
    for a in op["attributes"]:
        where = f"{op['name']} attribute '{a.get('name')}'"
        if not IDENT.fullmatch(a["name"]) or a["name"] in names:
            fail(where, "not a C++ name, or listed twice")
        names.add(a["name"])
        if a["type"] not in ATTR_TYPES:
            fail(where, f"type must be one of {sorted(ATTR_TYPES)}")
        if (a["type"] == "INTS") != ("count" in a) or a.get("count", 1) < 1:
            fail(where, "an INTS attribute, and only it, states its count (>= 1)")
        if bool(a.get("optional")) != ("default" in a):
            fail(where, "an optional attribute, and only it, has a default")
        if a.get("optional") and a["type"] not in OPTIONAL_READERS:
            fail(where, f"optional attributes of type {a['type']} have no OpArgs reader yet")


def attribute_lists(cat):
    """[(op, [ops with the same attribute list, op first])] for the first op of each list."""
    groups = {}
    for op in cat["ops"]:
        if op["attributes"]:
            groups.setdefault(json.dumps(op["attributes"], sort_keys=True), []).append(op)
    return [(ops[0], ops) for ops in groups.values()]


def sdk_attrs_header(cat):
    out = [generated_banner("//"),
           "// Each op's attributes as a struct whose read() finds them by name and checks their\n"
           "// types (and INTS counts), throwing kiln::sdk::Error (KILN_STATUS_INVALID_ARGUMENT)\n"
           "// when one is missing or mistyped. Ops with the same attribute list share a struct\n"
           "// (kiln::sdk::attrs::conv2d_backward_input is attrs::conv2d):\n"
           "// @code\n"
           "//   const auto a = kiln::sdk::attrs::sgd_step::read(args);  // a.lr, a.momentum, ...\n"
           "// @endcode\n"
           "#ifndef KILN_SDK_OP_ATTRS_H\n#define KILN_SDK_OP_ATTRS_H\n\n"
           "#include <cstdint>\n\n"
           '#include "kiln/sdk/op_args.h"\n\n'
           "namespace kiln::sdk::attrs {\n\n"]
    for op, sharing in attribute_lists(cat):
        name = short_name(op)
        fields, reads = [], []
        for a in op["attributes"]:
            _, field, reader, _ = ATTR_TYPES[a["type"]]
            note = f"  ///< {a['count']} values" if a["type"] == "INTS" else ""
            note = f"  ///< {a['default']} when not passed" if a.get("optional") else note
            fields.append(f"  {field} {a['name']};{note}\n")
            if a.get("optional"):
                reads.append(f"args.{OPTIONAL_READERS[a['type']]}(\"{a['name']}\", {a['default']})")
            elif a["type"] == "INTS":
                reads.append(f"args.{reader}(\"{a['name']}\", {a['count']})")
            else:
                reads.append(f"args.{reader}(\"{a['name']}\")")
        ops = textwrap.fill(f"The attributes of {', '.join(o['name'] for o in sharing)} "
                            "(share/doc/kiln/OPS.md), as a kernel reads them.", 86,
                            initial_indent="/// ", subsequent_indent="/// ")
        out.append(ops + "\n"
                   f"struct {name} {{\n" + "".join(fields) +
                   f"\n  static {name} read(const OpArgs& args) {{\n    return {{" +
                   ",\n            ".join(reads) + "};\n  }\n};\n")
        out.extend(f"using {short_name(o)} = {name};\n" for o in sharing[1:])
        out.append("\n")
    out.append("}  // namespace kiln::sdk::attrs\n\n#endif  // KILN_SDK_OP_ATTRS_H\n")
    return "".join(out)


def frontend_attrs_header(cat):
    out = [generated_banner("//"),
           "// Each op's attributes as the frontend passes them: a struct per op, filled with\n"
           "// designated initializers and handed to detail::dispatch, which packs it\n"
           "// (libkiln only, not installed):\n"
           "// @code\n"
           "//   detail::dispatch(attrs::softmax{.dim = d}, {x.impl().get()}, {y.impl().get()});\n"
           "// @endcode\n"
           "#pragma once\n\n#include <array>\n#include <cstdint>\n\n"
           '#include "kiln/c_api.h"\n#include "dispatch/dispatch.h"\n\n'
           "namespace kiln::detail::attrs {\n\n"]
    for op in cat["ops"]:
        if not op["attributes"]:
            continue
        name = short_name(op)
        fields, packs = [], []
        for a in op["attributes"]:
            field, _, _, packer = ATTR_TYPES[a["type"]]
            if a["type"] == "INTS":
                field = f"std::array<int64_t, {a['count']}>"
                packs.append(f"{packer}(\"{a['name']}\", {a['name']}.data(), {a['count']})")
            else:
                packs.append(f"{packer}(\"{a['name']}\", {a['name']})")
            default = f" = {a['default']}" if a.get("optional") else ""
            fields.append(f"  {field} {a['name']}{default};\n")
        n = len(op["attributes"])
        out.append(f"/// {op['name']}'s attributes (api/OPS.md), as the frontend passes them.\n"
                   f"struct {name} {{\n"
                   f"  static constexpr OpId op = OpId::{name};\n" + "".join(fields) +
                   f"\n  /// Views of the fields: valid while this struct lives.\n"
                   f"  std::array<kiln_attr, {n}> pack() const {{\n    return {{" +
                   ",\n            ".join(packs) + "};\n  }\n};\n\n")
    out.append("}  // namespace kiln::detail::attrs\n")
    return "".join(out)


def generate(cat, out):
    files = {
        "sdk/kiln/sdk/op_attrs.h": sdk_attrs_header(cat),
        "frontend/private/op_attrs.h": frontend_attrs_header(cat),
        "frontend/private/op_autocast.h": autocast_header(cat),
        "frontend/private/op_dtype_rules.h": dtype_rules(cat),
        "api/kiln/op_catalogue.h": catalogue_header(cat),
        "sdk/kiln/sdk/pointwise_ops.h": sdk_pointwise_header(cat),
        "frontend/kiln/pointwise_ops.h": frontend_declarations(cat),
        "frontend/kiln/pointwise_methods.h": frontend_methods(cat),
        "frontend/pointwise_ops.cpp": frontend_definitions(cat),
        "testing/kiln/testing/pointwise_ops.h": test_table(cat),
    }
    for path, text in files.items():
        write_if_changed(os.path.join(out, *path.split("/")), text)

if __name__ == "__main__":
    sys.exit(main())
