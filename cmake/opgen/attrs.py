"""Op attributes as structs on both sides of the ABI, and the dispatcher's dtype rules."""

import json
import textwrap

from .common import IDENT, deciding_operand, fail, generated_banner, short_name

# One struct per attribute list, packed by the frontend, read by kernels.
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


def dtype_rules(cat):
    out = [generated_banner("//"),
           "// X(op, allowed, dtype_of_output, dtype_operand) for every catalogue op, in "
           "catalogue\n"
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

