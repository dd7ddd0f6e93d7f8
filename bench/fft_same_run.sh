#!/usr/bin/env bash
# Kiln's FFTs and their baselines in one run (issue 27): kiln-bench-fft (Kiln, and FFTW on
# the CPU or cuFFT on a GPU, in one process), then bench/fft_reference.py (NumPy on the
# CPU, torch.fft on a GPU), then one table of ratios (baseline time / Kiln time: above 1,
# Kiln is faster).
#
#   [REPEAT=N] bash bench/fft_same_run.sh [cpu:0|cuda:0]   (project root, Release build at build/)
# Each figure is the median of N timed runs (default 7) after two warm-up runs.
set -u
root=$(cd "$(dirname "$0")/.." && pwd)
device=${1:-cpu:0}
# The first Python that has NumPy (PATH's python3, then Debian's), unless PYTHON says.
py=${PYTHON:-}
if [ -z "$py" ]; then
  for candidate in python3 /usr/bin/python3; do
    if env -u LD_LIBRARY_PATH "$candidate" -c "import numpy" 2> /dev/null; then
      py=$candidate
      break
    fi
  done
fi
py=${py:-python3}
lines=$(mktemp)
trap 'rm -f "$lines"' EXIT
echo "kiln-bench-fft on $device ($(date -u +%FT%TZ), $(nproc) cores)"
"$root/build/bin/kiln-bench-fft" --device "$device" --repeat "${REPEAT:-7}" | tee "$lines" || echo "kiln-bench-fft failed"
if [[ $device == cuda* ]]; then
  env -u LD_LIBRARY_PATH "$py" "$root/bench/fft_reference.py" "$device" "${REPEAT:-7}" | tee -a "$lines" ||
    echo "fft_reference.py failed"
else
  "$py" "$root/bench/fft_reference.py" "$device" "${REPEAT:-7}" | tee -a "$lines" || echo "fft_reference.py failed"
fi
"$py" - "$lines" <<'PY'
import sys
rows = {}
for line in open(sys.argv[1]):
    parts = line.rstrip("\n").split("\t")
    if len(parts) == 4 and parts[0] == "fft_bench":
        rows.setdefault(parts[1], {})[parts[2]] = float(parts[3])
print("\n| workload | implementation | median | baseline ÷ Kiln |\n|---|---|---:|---:|")
for workload, times in rows.items():
    kiln = next((t for name, t in times.items() if name.startswith("kiln")), None)
    for name, t in times.items():
        ratio = "" if kiln is None or name.startswith("kiln") else f"{t / kiln:.2f}"
        print(f"| {workload} | {name} | {t * 1e3:.3f} ms | {ratio} |")
PY
