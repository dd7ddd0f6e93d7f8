"""The command line of the op generator (see the package's docstring): python3 -B -m opgen."""

import argparse
import functools
import json
import sys

from . import __doc__ as package_doc
from .catalogue import check_catalogue, render_ops_md
from .common import CatalogueError
from .formulas import check_gradient_names, header_functions
from .output import clang_format, generate, write_if_changed


def main(argv=None):
    parser = argparse.ArgumentParser(prog="opgen", description=package_doc.split("\n")[0])
    parser.add_argument("--catalogue", required=True)
    parser.add_argument("--out", help="the build's folder of generated files")
    parser.add_argument("--ops-md", help="api/OPS.md, to --check or --update")
    mode = parser.add_mutually_exclusive_group()
    mode.add_argument("--check", action="store_true")
    mode.add_argument("--update", action="store_true")
    parser.add_argument("--formulas", help="frontend/src/ops/formulas.h: with "
                        "--public-headers, the functions gradient formulas may call")
    parser.add_argument("--public-headers", help="frontend/include/kiln, searched for *.h")
    parser.add_argument("--clang-format", help="clang-format-14, to format the --out files")
    parser.add_argument("--clang-format-style", help="the .clang-format file it applies")
    args = parser.parse_args(argv)
    if bool(args.formulas) != bool(args.public_headers):
        parser.error("--formulas and --public-headers go together")
    if bool(args.clang_format) != bool(args.clang_format_style):
        parser.error("--clang-format and --clang-format-style go together")
    try:
        with open(args.catalogue, encoding="utf-8") as f:
            cat = json.load(f)
        check_catalogue(cat)
        if args.formulas:
            check_gradient_names(cat, header_functions([args.formulas, args.public_headers]))
        if args.out:
            formatter = None
            if args.clang_format:
                formatter = functools.partial(clang_format, args.clang_format,
                                              args.clang_format_style)
            generate(cat, args.out, formatter)
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
        print(f"opgen: {what}", file=sys.stderr)
        return 1
    except OSError as e:  # a file it reads or writes: named, without a traceback
        print(f"opgen: {e.filename}: {e.strerror}", file=sys.stderr)
        return 1
    except UnicodeDecodeError as e:
        print(f"opgen: an input is not UTF-8 text ({e.reason} at byte {e.start})",
              file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
