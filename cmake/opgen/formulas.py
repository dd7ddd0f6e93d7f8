"""The functions a gradient formula may call, checked when the code is generated.

A formula ("gradient": {"x": "grad * cos(x)"}) is compiled in the generated pointwise_ops.cpp
inside `namespace kiln` with `using namespace detail::formulas`, so it can call unqualified
the generated pointwise ops, the helpers of frontend/src/ops/formulas.h (namespace
kiln::detail::formulas) and the functions the public headers (frontend/include/kiln/**.h)
declare in namespace kiln. Their names are read from those headers with a regex: a name
declared at namespace scope, in one of those two namespaces, followed by "(" (and, for
constructors, a class or struct name). A misspelt function then fails here, naming the op,
the input and the name, instead of as a compile error in a generated file.

What a formula may contain besides calls: its op's inputs, `grad`, `result`, numbers and the
C++ words of CPP_WORDS. Member calls (`x.abs()`) and qualified names (`kiln::exp(x)`) are left
to the compiler.
"""

import os
import re

from .common import fail
from .pointwise import pointwise_ops

# The namespaces whose functions a formula calls unqualified.
VISIBLE_NAMESPACES = {"kiln", "kiln::detail::formulas"}
# C++ words and types a formula may use that are not names of its own.
CPP_WORDS = {
    "true", "false", "nullptr", "sizeof", "alignof", "decltype", "static_cast", "const_cast",
    "reinterpret_cast", "and", "or", "not", "bool", "char", "short", "int", "long", "unsigned",
    "signed", "float", "double", "auto", "const", "int8_t", "int16_t", "int32_t", "int64_t",
    "uint8_t", "uint16_t", "uint32_t", "uint64_t", "size_t",
}
# Comments and literals, blanked out (one pass, so that "//" in a string is not a comment).
COMMENT_OR_LITERAL = re.compile(r'//[^\n]*|/\*.*?\*/|"(?:[^"\\\n]|\\.)*"|\'(?:[^\'\\\n]|\\.)*\'',
                                re.S)
PREPROCESSOR = re.compile(r"^[ \t]*#(?:[^\n]*\\\n)*[^\n]*", re.M)
SCOPE = re.compile(r"\bnamespace\s+([\w:]+)\s*\{|[{}]")
# A function declaration: the end of its return type, its name, "(".
DECLARATION = re.compile(r"[\w>*&]\s*[\s*&]\s*([A-Za-z_]\w*)\s*\(")
CLASS = re.compile(r"\b(?:class|struct)\s+([A-Za-z_]\w*)")
# In a formula: a number (a C++ pp-number: 2.0, 1e-5, 0.5f), then names with what surrounds
# them: a member access or qualifier before, a qualifier or a call after.
NUMBER = re.compile(r"(?<![\w.])\.?\d(?:[eEpP][+-]|[\w.])*")
NAME = re.compile(r"(?:(\.|->|::)\s*)?\b([A-Za-z_]\w*)(?=(\s*::)?)(\s*\()?")


def declared_functions(text):
    """The names the header text declares as functions (or classes) in VISIBLE_NAMESPACES."""
    text = PREPROCESSOR.sub(" ", COMMENT_OR_LITERAL.sub(" ", text))
    names, scopes, start = set(), [], 0

    def scan(segment):
        if all(scopes) and "::".join(scopes) in VISIBLE_NAMESPACES:
            names.update(DECLARATION.findall(segment))
            names.update(CLASS.findall(segment))

    for m in SCOPE.finditer(text):
        scan(text[start:m.start()])
        start = m.end()
        if m.group(0) == "}":
            if scopes:
                scopes.pop()
        else:
            scopes.append(m.group(1))  # None for a brace that opens no namespace
    scan(text[start:])
    return names


def header_functions(paths):
    """declared_functions of every header in paths (files, or folders searched for *.h)."""
    files = []
    for path in paths:
        if os.path.isdir(path):
            files += sorted(os.path.join(folder, f) for folder, _, found in os.walk(path)
                            for f in found if f.endswith(".h"))
        else:
            files.append(path)
    names = set()
    for file in files:
        with open(file, encoding="utf-8") as f:
            names |= declared_functions(f.read())
    return names


def check_formula(op, operand, formula, functions):
    """Fails naming the op, the input and the name when the formula calls a function that is
    not in functions, or names a variable other than the op's inputs, grad and result."""
    variables = {o["name"] for o in op["inputs"]} | {"grad", "result"}
    for m in NAME.finditer(NUMBER.sub(" ", formula)):
        before, name, qualifier, call = m.groups()
        if before or qualifier or name in CPP_WORDS:
            continue  # a member, a qualified name or a C++ word: the compiler's business
        if call and name not in functions:
            fail(op["name"], f"the gradient of '{operand}' calls '{name}', which is not a "
                 "generated pointwise op, a helper in ops/formulas.h or a public kiln "
                 "function")
        if not call and name not in variables and name not in functions:
            fail(op["name"], f"the gradient of '{operand}' uses '{name}', which is not an "
                 f"input ({', '.join(sorted(variables - {'grad', 'result'}))}), grad or result")


def check_gradient_names(cat, declared):
    """check_formula for every gradient of the catalogue, and its backward helpers, given the
    names the headers declare (header_functions)."""
    functions = set(declared) | {op["frontend"]["function"] for op in pointwise_ops(cat)}
    for op in pointwise_ops(cat):
        grad = op.get("gradient") or {}
        if "backward" in grad:
            if grad["backward"] not in declared:
                fail(op["name"], f"gradient.backward names '{grad['backward']}', which is not "
                     "a helper in ops/formulas.h or a public kiln function")
            continue
        for operand, formula in grad.items():
            check_formula(op, operand, formula, functions)
