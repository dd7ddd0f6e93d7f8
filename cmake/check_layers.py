#!/usr/bin/env python3
"""Checks that frontend/src includes only downward, in the order frontend/src/LAYERS names.

    check_layers.py <frontend/src>        (the CTest frontend.layers)

Every `#include "folder/..."` in a file of frontend/src/<folder>/, where `folder` is a
folder of frontend/src, must name its own folder or one on an earlier line of LAYERS;
folders on one line are peers and include none of each other. Every folder of
frontend/src must be on a line. Prints each include against the order, and fails.
Python 3 standard library only.
"""

import os
import re
import sys

INCLUDE = re.compile(r'^\s*#\s*include\s+"([^"]+)"')


def read_layers(path):
    layer_of = {}
    with open(path, encoding="utf-8") as f:
        for number, line in enumerate(f, 1):
            words = line.split("#", 1)[0].split()
            for folder in words:
                if folder in layer_of:
                    raise ValueError(f"{path}:{number}: '{folder}' is on two lines")
                layer_of[folder] = number
    return layer_of


def violations(src, layer_of):
    folders = sorted(d for d in os.listdir(src) if os.path.isdir(os.path.join(src, d)))
    problems = [f"{os.path.join(src, d)}/ is not in LAYERS: add it to the line of its layer"
                for d in folders if d not in layer_of]
    problems += [f"LAYERS names '{d}', which is not a folder of {src}"
                 for d in layer_of if d not in folders]
    for folder in folders:
        if folder not in layer_of:
            continue
        for root, _, files in os.walk(os.path.join(src, folder)):
            for name in sorted(files):
                path = os.path.join(root, name)
                rel = os.path.relpath(path, src)
                with open(path, encoding="utf-8", errors="replace") as f:
                    for number, line in enumerate(f, 1):
                        m = INCLUDE.match(line)
                        if not m:
                            continue
                        target = m.group(1).split("/")[0]
                        if target == folder or target not in layer_of or "/" not in m.group(1):
                            continue
                        if layer_of[target] >= layer_of[folder]:
                            how = "a peer" if layer_of[target] == layer_of[folder] else "above it"
                            problems.append(f"{os.path.join(src, rel)}:{number}: {folder} includes "
                                            f"\"{m.group(1)}\", and {target} is {how} in LAYERS")
    return problems


def main(argv):
    if len(argv) != 2:
        print(__doc__.strip().splitlines()[2].strip(), file=sys.stderr)
        return 2
    src = argv[1]
    try:
        layer_of = read_layers(os.path.join(src, "LAYERS"))
    except (OSError, ValueError) as e:
        print(f"check_layers.py: {e}", file=sys.stderr)
        return 1
    problems = violations(src, layer_of)
    for p in problems:
        print(p, file=sys.stderr)
    if problems:
        print(f"check_layers.py: {len(problems)} problem(s) with {os.path.join(src, 'LAYERS')} "
              "(a lower layer reaches a higher one through a hook it declares; see "
              "docs/design-decisions.md, \"The frontend's layers\")", file=sys.stderr)
        return 1
    print(f"check_layers.py: every include of {src} follows its LAYERS ({len(layer_of)} folders)")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
