"""Writing the generated files: each formatted by clang-format when the build found one, then
rewritten only when its text changed, so that neither regenerating nor formatting rebuilds
anything. Without clang-format (CMake found no clang-format-14) the files are written as
generated, unformatted: they compile the same, only less tidy."""

import os
import subprocess

from .attrs import dtype_rules, frontend_attrs_header, sdk_attrs_header
from .catalogue import autocast_header, catalogue_header
from .common import CatalogueError
from .pointwise import (frontend_declarations, frontend_definitions, frontend_methods,
                        sdk_pointwise_header, test_table)


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


def clang_format(program, style, path, text):
    """text as `program --style=file:<style>` formats the C or C++ file at path (which need
    not exist: it names the language). Raises CatalogueError naming the file when it fails."""
    command = [program, f"--style=file:{style}", f"--assume-filename={path}"]
    try:
        done = subprocess.run(command, input=text, capture_output=True, encoding="utf-8",
                              check=False)
    except OSError as e:
        raise CatalogueError(f"{program} could not run to format {path}: {e}") from e
    if done.returncode != 0:
        raise CatalogueError(f"{program} failed to format {path} (exit status "
                             f"{done.returncode}): {done.stderr.strip()}")
    return done.stdout


def generate(cat, out, formatter=None):
    """Writes every generated file under out; formatter(path, text) -> text, when given, formats
    each one first (clang_format with its program and style bound)."""
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
        path = os.path.join(out, *path.split("/"))
        write_if_changed(path, formatter(path, text) if formatter else text)
