#!/usr/bin/env bash
# Installs the Debian 12 packages Kiln builds and runs with, if any are missing.
# Needs root (or sudo). Does nothing, quickly, when everything is there.
set -euo pipefail

packages=(
  build-essential cmake ninja-build pkg-config
  python3                  # cmake/opgen generates the op code from api/ops.json
  libopenblas-dev          # GEMM for the CPU plugin
  libkissfft-dev           # the CPU plugin's FFTs (BSD-3-Clause; its header-only template)
  libboost-dev             # Boost.DLL (plugin loading), small_vector
  libgtest-dev libgmock-dev libbenchmark-dev
  nlohmann-json3-dev libfmt-dev libcli11-dev zlib1g-dev
  dataset-fashion-mnist    # the training example's data
  fortunes                 # kiln-gpt's corpus (/usr/share/games/fortunes)
  libopenmpi-dev openmpi-bin  # many processes: Kiln::mpi, mpirun (tests run it on loopback)
  libdlpack-dev            # kiln/dlpack.h: zero-copy exchange with NumPy, PyTorch, CuPy
  clang-14 libclang-rt-14-dev  # the libFuzzer targets (tests/fuzz, scripts/fuzz.sh)
  clang-format-14          # the house style, checked by the CTest style.clang_format
  gnuplot-nox              # kiln-bench compare's chart (optional: skipped, and said, without it)
  libfftw3-dev             # kiln-bench-fft's CPU baseline (GPL-2+: that program is never installed)
)

missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
[ ${#missing[@]} -eq 0 ] && exit 0

echo "install-deps: installing ${missing[*]}"
sudo=""
[ "$(id -u)" -eq 0 ] || sudo="sudo"
export DEBIAN_FRONTEND=noninteractive
$sudo apt-get update -qq
$sudo apt-get install -y -qq --no-install-recommends "${missing[@]}"
