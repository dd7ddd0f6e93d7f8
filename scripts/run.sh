#!/usr/bin/env bash
# The main job: install what is missing, build, show what Kiln found on this
# machine, and run the demo on the default backend (KILN_BACKEND, else cpu).
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install-deps.sh
cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=Release
cmake --build build --parallel
build/bin/kiln-info
echo
build/bin/kiln-demo
