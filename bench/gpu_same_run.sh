#!/usr/bin/env bash
# Kiln and PyTorch on one GPU in one call: issue 22's workloads (reductions of 2^24
# float32, cumsum and sort of 2^24 float32, the convolutions' bias gradients, add/mul/relu and a device-to-device copy
# of 2^26 float32, GEMM 4096^3 f32/TF32/bf16, the CNN's two convolutions forward +
# backward at batch 256, f32 and TF32), then one table of same-run ratios.
#
#   bash bench/gpu_same_run.sh [OUT_DIR]        (default: $LOGS if set, else /tmp/kiln-same-run)
#
# Run from the project root on the GPU machine, with the Release build (CUDA plugin
# built) at build/, e.g. through ../shared/gpu's on-device.sh:
#   bash .gpu/on-device.sh 'bash bench/gpu_same_run.sh $LOGS'
# Kiln runs with the environment it is given (on-device.sh's LD_LIBRARY_PATH); PyTorch
# and libtorch run with `env -u LD_LIBRARY_PATH` (PyTorch brings its own cuDNN).
#
# Steps, each guarded (a failing step is reported; the rest still run):
#   1. kiln-bench's CUDA suites for these workloads -> OUT/kiln.json (Google Benchmark
#      JSON; 5 repetitions, their median) and OUT/kiln.log;
#   2. bench/torch_reference.py -> OUT/torch.jsonl, OUT/torch.log;
#   3. bench/libtorch_reference.cpp (sum 2^24), compiled meanwhile against python3's
#      torch -> OUT/libtorch.jsonl (skipped with KILN_SAME_RUN_LIBTORCH=0);
#   4. bench/same_run_table.py -> the table on stdout and in OUT/same_run.md, and
#      OUT/same_run.json.
# Sized for about a minute on an H200 (estimate, not yet timed); every step has a time limit.
set -u
root=$(cd "$(dirname "$0")/.." && pwd)
out=${1:-${LOGS:-/tmp/kiln-same-run}}
mkdir -p "$out" || { echo "gpu_same_run.sh: cannot create $out" >&2; exit 1; }
out=$(cd "$out" && pwd)
bench=${KILN_BENCH:-$root/build/bin/kiln-bench}
py=${PYTHON:-python3}
status=0

gpu_line() {
  command -v nvidia-smi > /dev/null &&
    nvidia-smi --query-gpu=name,clocks.sm,clocks.max.sm,power.draw,temperature.gpu \
      --format=csv,noheader 2> /dev/null
}
echo "GPU before: $(gpu_line || echo 'nvidia-smi not available')"

# PyTorch present? Checked first, so that its absence is said plainly at the top.
have_torch=1
if ! torch_msg=$(env -u LD_LIBRARY_PATH timeout 60 "$py" -c '
import os, torch
assert torch.cuda.is_available(), "torch %s sees no CUDA device" % torch.__version__
print(os.path.dirname(torch.__file__))
print(torch.__version__, torch.cuda.get_device_name(0))' 2>&1); then
  have_torch=0
  echo "gpu_same_run.sh: PyTorch cannot run here (env -u LD_LIBRARY_PATH $py -c 'import torch'):" >&2
  echo "$torch_msg" | tail -3 | sed 's/^/  /' >&2
  echo "  Kiln's side still runs; the table's PyTorch column stays empty." >&2
else
  T=$(echo "$torch_msg" | tail -2 | head -1)
  echo "PyTorch: $(echo "$torch_msg" | tail -1)"
fi

# libtorch: compiled in the background while Kiln runs (one core of many).
lt_bin=/tmp/kiln_libtorch_reference
lt_pid=
rm -f "$out/libtorch.jsonl" "$lt_bin"
if [ "$have_torch" = 1 ] && [ "${KILN_SAME_RUN_LIBTORCH:-1}" != 0 ] && command -v g++ > /dev/null; then
  if [ -n "$T" ] && [ -d "$T/include/torch" ]; then
    ( timeout 120 g++ -O2 -std=c++17 -D_GLIBCXX_USE_CXX11_ABI=1 "$root/bench/libtorch_reference.cpp" \
        -o "$lt_bin" -I"$T/include" -I"$T/include/torch/csrc/api/include" -L"$T/lib" \
        -Wl,--no-as-needed -ltorch -ltorch_cpu -ltorch_cuda -lc10 -lc10_cuda -Wl,-rpath,"$T/lib" \
        > "$out/libtorch_build.log" 2>&1 ) &
    lt_pid=$!
  else
    echo "libtorch: no headers under python3's torch ($T); skipped" > "$out/libtorch_build.log"
  fi
fi

# 1. Kiln.
filter='^BM_(Kiln(Reduce|ScanSort|BiasGrad|Elementwise|Copy|Gemm|Conv)|CudaCopy/two_streams)'
if [ ! -x "$bench" ]; then
  echo "gpu_same_run.sh: $bench not found: build the project (Release, CUDA plugin) first" >&2
  status=1
else
  echo "Kiln: $bench --benchmark_filter='$filter' ..."
  timeout 100 "$bench" --benchmark_filter="$filter" --benchmark_min_time=0.02 \
    --benchmark_repetitions=5 --benchmark_report_aggregates_only=true \
    --benchmark_out="$out/kiln.json" --benchmark_out_format=json > "$out/kiln.log" 2>&1
  rc=$?
  if [ $rc != 0 ]; then
    echo "gpu_same_run.sh: kiln-bench exited with $rc (124: time limit); tail of $out/kiln.log:" >&2
    tail -5 "$out/kiln.log" | sed 's/^/  /' >&2
    status=1
  fi
  grep -q "CUDA benchmarks skipped" "$out/kiln.log" && grep "CUDA benchmarks skipped" "$out/kiln.log" >&2
  echo "  done at ${SECONDS}s"
fi

# 2. PyTorch eager.
if [ "$have_torch" = 1 ]; then
  echo "PyTorch: $root/bench/torch_reference.py ..."
  env -u LD_LIBRARY_PATH timeout 100 "$py" "$root/bench/torch_reference.py" --out "$out/torch.jsonl" \
    > "$out/torch.log" 2>&1
  rc=$?
  if [ $rc != 0 ]; then
    echo "gpu_same_run.sh: torch_reference.py exited with $rc; tail of $out/torch.log:" >&2
    tail -5 "$out/torch.log" | sed 's/^/  /' >&2
    status=1
  fi
  echo "  done at ${SECONDS}s"
fi
[ -f "$out/torch.jsonl" ] || : > "$out/torch.jsonl"

# 3. libtorch C++.
lt_arg=()
if [ -n "$lt_pid" ]; then
  if wait "$lt_pid" && [ -x "$lt_bin" ]; then
    env -u LD_LIBRARY_PATH timeout 60 "$lt_bin" > "$out/libtorch.jsonl" 2> "$out/libtorch.log" ||
      echo "gpu_same_run.sh: libtorch_reference failed: $(tail -2 "$out/libtorch.log")" >&2
    lt_arg=(--libtorch "$out/libtorch.jsonl")
  else
    echo "gpu_same_run.sh: libtorch_reference.cpp did not build (skipped): $(tail -2 "$out/libtorch_build.log")" >&2
  fi
fi

echo "GPU after: $(gpu_line || echo 'nvidia-smi not available')"
echo

# 4. The table.
if [ -f "$out/kiln.json" ]; then
  "$py" "$root/bench/same_run_table.py" --kiln "$out/kiln.json" --torch "$out/torch.jsonl" \
    ${lt_arg[@]+"${lt_arg[@]}"} --json "$out/same_run.json" | tee "$out/same_run.md"
  [ "${PIPESTATUS[0]}" = 0 ] || status=1
else
  echo "gpu_same_run.sh: no $out/kiln.json: no table" >&2
  status=1
fi
echo
echo "gpu_same_run.sh: ${SECONDS}s in all; files in $out"
exit $status
