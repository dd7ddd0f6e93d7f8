"""The generated pointwise ops: their frontend functions, methods and gradients, the SDK's
registration lists and the tests' table."""

import re

from .common import IDENT, fail, generated_banner, short_name

# How the frontend turns operand dtypes into the dtype an op computes in (the
# "promote" of a pointwise op's "frontend" entry): ops/pointwise.h's Promote.
PROMOTIONS = {"arith": "Arith", "float": "Float", "compare": "Compare", "logical": "Logical"}

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
#       `result` and `grad`, in namespace kiln, calling only generated pointwise ops,
#       helpers of ops/formulas.h and public kiln functions (checked: formulas.py); or
#       {"backward": "maximum_backward"}, a hand-written function of (grad, inputs...)
#       that returns every input's gradient
#   "test": {"domain": [[lo, hi], ...], "special_values": false,
#            "nondifferentiable_at": [[0], ...]}  (all optional; test_fields() reads them)
#       domain: where the conformance suite, the in-place test and gradcheck sample each
#       input (default [-3, 3]): as wide as the op's float16 results stay finite;
#       special_values: also check ±0, ±inf and NaN inputs; nondifferentiable_at (only
#       for differentiable ops): per input, at most MAX_NONDIFFERENTIABLE points of its
#       domain where the op is not differentiable in it (a kink, a pole, an end of the
#       domain such as log's 0): gradcheck samples the rest of the domain, keeping
#       GRADCHECK_MARGIN away from each of them


TEST_FIELDS = ("domain", "special_values", "nondifferentiable_at")
MAX_NONDIFFERENTIABLE = 4
GRADCHECK_MARGIN = 0.01  # gradcheck's finite-difference step is 1e-6


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
    if "functor" in op and (not op["dtypes"]["one_dtype"]
                            or fe["promote"] not in ("arith", "float")):
        fail(name, "a functor-registered op keeps one dtype (promote arith or float)")
    check_test(op)


def is_number(x):
    return isinstance(x, (int, float)) and not isinstance(x, bool)


def test_fields(op):
    """The entry's test fields, defaults filled in: (domain, special_values,
    nondifferentiable_at), one [lo, hi] and one list of points per input."""
    test, n = op.get("test", {}), len(op["inputs"])
    return (test.get("domain", [[-3, 3]] * n), test.get("special_values", False),
            test.get("nondifferentiable_at", [[] for _ in range(n)]))


def check_test(op):
    name, test, inputs = op["name"], op.get("test", {}), op["inputs"]
    for key in test:
        if key not in TEST_FIELDS:
            fail(name, f"test.{key} is not a test field ({', '.join(TEST_FIELDS)})")
    domain, special_values, points = test_fields(op)
    if not isinstance(domain, list) or len(domain) != len(inputs) or any(
            not isinstance(d, list) or len(d) != 2 or not all(map(is_number, d)) or d[0] >= d[1]
            for d in domain):
        fail(name, "test.domain is one [lo, hi] per input")
    if not isinstance(special_values, bool):
        fail(name, "test.special_values is true or false")
    if "nondifferentiable_at" in test and not op["differentiable"]:
        fail(name, "test.nondifferentiable_at is for differentiable ops only")
    if (not isinstance(points, list) or len(points) != len(inputs)
            or not all(isinstance(p, list) for p in points)):
        fail(name, "test.nondifferentiable_at is one list of points per input")
    for operand, (lo, hi), at in zip(inputs, domain, points):
        where = f"test.nondifferentiable_at of input '{operand['name']}'"
        if len(at) > MAX_NONDIFFERENTIABLE:
            fail(name, f"{where} has {len(at)} points, at most {MAX_NONDIFFERENTIABLE}")
        for x in at:
            if not is_number(x) or not lo <= x <= hi:
                fail(name, f"{where}: {x!r} is not a number in its test.domain [{lo}, {hi}]")


def pascal(name):
    return "".join(part.capitalize() for part in name.split("_"))


def uses(expression, name):
    return re.search(r"\b" + re.escape(name) + r"\b", expression) is not None


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
        rows = [f"  X({short_name(op)}, {op['functor']}, "
                f"KILN_DTYPES_{op['dtypes']['class'].upper()})"
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
        body = "".join(f"                 const Tensor& {n} = saved[{i}];\n"
                       for i, n in enumerate(saves))
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
                 f"    const bool grad_{a} = ag::requires_grad({a}), "
                 f"grad_{b} = ag::requires_grad({b});\n")
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
                       f"    return detail::complex_pointwise(OpId::{short}, \"{fn}\", "
                       f"{', '.join(names)});\n")
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
                       f"  return {fn}({a}, detail::scalar_operand({a}, {b}, \"{fn}\", "
                       f"{promote}));\n}}\n"
                       f"Tensor {fn}(Scalar {a}, const Tensor& {b}) {{\n"
                       f"  return {fn}(detail::scalar_operand({b}, {a}, \"{fn}\", {promote}), "
                       f"{b});\n}}\n")
        if fe.get("method"):
            if kind == "unary":
                out.append(f"Tensor Tensor::{fn}() const {{ return kiln::{fn}(*this); }}\n")
            else:
                out.append(f"Tensor Tensor::{fn}(const Tensor& other) const "
                           f"{{ return kiln::{fn}(*this, other); }}\n")
                if fe.get("scalar"):
                    out.append(f"Tensor Tensor::{fn}(Scalar other) const "
                               f"{{ return kiln::{fn}(*this, other); }}\n")
        if fe.get("inplace") and kind == "unary":
            out.append(f"Tensor& Tensor::{fn}_() {{\n"
                       f"  return detail::pointwise_unary_inplace(OpId::{short}, \"{fn}_\", *this, "
                       f"{promote});\n}}\n")
        elif fe.get("inplace"):
            out.append(f"Tensor& Tensor::{fn}_(const Tensor& other) {{\n"
                       f"  return detail::pointwise_inplace(OpId::{short}, \"{fn}_\", *this, "
                       f"other, {promote});\n}}\n"
                       f"Tensor& Tensor::{fn}_(Scalar other) {{\n"
                       f"  return detail::pointwise_inplace(OpId::{short}, \"{fn}_\", *this,\n"
                       f"                                   detail::scalar_operand(*this, other, "
                       f"\"{fn}_\", {promote}),\n"
                       f"                                   {promote});\n}}\n")
        out.append("\n")
    out.append("}  // namespace kiln\n")
    return "".join(out)


def test_table(cat):
    out = [generated_banner("//"),
           "// Every generated pointwise op, for the tests that cover them all (the conformance\n"
           "// suite, the in-place test, gradcheck): its functions, dtypes and where to sample\n"
           "// its inputs.\n"
           "#pragma once\n\n#include <cstdint>\n\n"
           '#include "kiln/kiln.h"\n#include "kiln/op_catalogue.h"\n\n'
           "namespace kiln::testing {\n\n"
           f"/// How far gradcheck keeps from a point where the op is not differentiable (its\n"
           f"/// finite-difference step is 1e-6).\n"
           f"inline constexpr double kGradcheckMargin = {GRADCHECK_MARGIN!r};\n\n"
           "/// Where the tests sample one input of an op (the catalogue entry's test fields).\n"
           "struct InputDomain {\n"
           "  double lo, hi;  ///< test.domain: values in [lo, hi)\n"
           "  /// test.nondifferentiable_at: where the op is not differentiable in this input (a\n"
           "  /// kink, a pole, an end of the domain).\n"
           f"  double nondifferentiable_at[{MAX_NONDIFFERENTIABLE}];\n"
           "  int nondifferentiable_count;\n"
           "  /// v moved to kGradcheckMargin from any point of nondifferentiable_at it is\n"
           "  /// nearer to (toward the inside of [lo, hi]): where gradcheck may sample.\n"
           "  double differentiable_sample(double v) const {\n"
           "    for (int i = 0; i < nondifferentiable_count; ++i) {\n"
           "      const double at = nondifferentiable_at[i];\n"
           "      if (v > at - kGradcheckMargin && v < at + kGradcheckMargin)\n"
           "        v = (v < at && at - kGradcheckMargin >= lo) || at + kGradcheckMargin >= hi\n"
           "                ? at - kGradcheckMargin\n"
           "                : at + kGradcheckMargin;\n"
           "    }\n"
           "    return v;\n"
           "  }\n"
           "};\n\n"
           "struct PointwiseOp {\n"
           "  const char* op;        ///< \"kiln.exp\"\n"
           "  Tensor (*unary)(const Tensor&);                 ///< set for one input\n"
           "  Tensor (*binary)(const Tensor&, const Tensor&);  ///< set for two\n"
           "  Tensor& (*unary_inplace)(Tensor&);  ///< x.exp_(), where the entry has inplace\n"
           "  Tensor& (*binary_inplace)(Tensor&, const Tensor&);  ///< a.add_(b), likewise\n"
           "  uint32_t dtypes;       ///< KILN_DTYPES_* of the inputs the kernels take\n"
           "  InputDomain domain[2];  ///< per input (a unary op's second repeats its first)\n"
           "  bool differentiable;\n"
           "  bool special_values;   ///< also check ±0, ±inf and NaN\n"
           "};\n\n"
           "inline const PointwiseOp kPointwiseOps[] = {\n"]
    for op in pointwise_ops(cat):
        fe = op["frontend"]
        fn = fe["function"]
        n = len(op["inputs"])
        sig = "Tensor (*)(const Tensor&)" if n == 1 else "Tensor (*)(const Tensor&, const Tensor&)"
        ptr = f"static_cast<{sig}>(&kiln::{fn})"
        unary, binary = (ptr, "nullptr") if n == 1 else ("nullptr", ptr)
        unary_inplace = binary_inplace = "nullptr"
        if fe.get("inplace") and n == 1:
            unary_inplace = f"[](Tensor& x) -> Tensor& {{ return x.{fn}_(); }}"
        elif fe.get("inplace"):
            binary_inplace = f"[](Tensor& a, const Tensor& b) -> Tensor& {{ return a.{fn}_(b); }}"
        domain, special_values, points = test_fields(op)
        inputs = list(zip(domain, points))
        inputs = inputs + inputs[:1] if n == 1 else inputs
        dom = ", ".join(
            "{" + f"{float(lo)!r}, {float(hi)!r}, {{{', '.join(repr(float(x)) for x in at)}}}, "
            f"{len(at)}" + "}" for (lo, hi), at in inputs)
        out.append(
            f"    {{\"{op['name']}\", {unary}, {binary}, {unary_inplace}, {binary_inplace}, "
            f"KILN_DTYPES_{op['dtypes']['class'].upper()}, {{{dom}}}, "
            f"{str(bool(op['differentiable'])).lower()}, {str(special_values).lower()}}},\n")
    out.append("};\n\n}  // namespace kiln::testing\n")
    return "".join(out)
