#!/usr/bin/env bash
# The main job: install what is missing, build, show what Kiln found on this
# machine, and train the CNN on Fashion-MNIST for 8 epochs on the default backend
# (KILN_BACKEND, else cpu). Extra arguments go to kiln-train, e.g.
#   scripts/run.sh --model mlp --epochs 2
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install-deps.sh
cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=Release
cmake --build build --parallel
build/bin/kiln-info
echo
build/bin/kiln-train --model cnn --epochs 8 --metrics-json build/metrics.json "$@"
