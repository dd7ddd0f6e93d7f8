"""The op generator: everything derived from api/ops.json, the catalogue's one description.

Run as a package with cmake/ on the path (-B: no __pycache__ in the source tree); from the
sources' root (the build runs the first, the CTest docs.ops_catalogue the second, the target
kiln_update_ops_md the third):

    PYTHONPATH=cmake python3 -B -m opgen --catalogue api/ops.json --out <build>/generated \\
        --formulas frontend/src/ops/formulas.h --public-headers frontend/include/kiln \\
        --clang-format clang-format-14 --clang-format-style .clang-format
    PYTHONPATH=cmake python3 -B -m opgen --catalogue api/ops.json --ops-md api/OPS.md --check
    PYTHONPATH=cmake python3 -B -m opgen --catalogue api/ops.json --ops-md api/OPS.md --update

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
  testing/kiln/testing/pointwise_ops.h  C++: what the conformance suite, the in-place
                                   test and gradcheck need to test every generated
                                   pointwise op (its functions and test fields)
With --clang-format (and --clang-format-style, the .clang-format file) each of them is
formatted before it is compared with the file on disk; without it they are written unformatted.
With --formulas and --public-headers, every function a gradient formula calls must be
declared there (or be a generated pointwise op): a misspelt name fails here, naming the op.

The modules: common (the error, names, banner), catalogue (checking the catalogue, the C
header, OPS.md's tables), pointwise (the pointwise ops' frontend, registrations and test
table), attrs (attribute structs, dtype rules), formulas (the names gradient formulas may
call), output (formatting and writing the files), __main__ (the command line). The unit
tests are tests/ (the CTest opgen.unit). Python 3 standard library only (Debian's python3).
"""
