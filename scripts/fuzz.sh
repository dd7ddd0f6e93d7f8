#!/usr/bin/env bash
# Fuzzes the parsers of untrusted input for a bounded time (tests/fuzz): builds the
# fuzzers with clang-14, libkiln and the CPU plugin instrumented for coverage
# (-fsanitize=fuzzer-no-link,address,undefined), generates the seed corpora with
# kiln_fuzz_seeds, and runs each fuzzer for KILN_FUZZ_SECONDS (default 45), as many at
# once as there are cores (KILN_FUZZ_JOBS). Fails on any crash, sanitizer report, leak,
# timeout or out-of-memory, leaving the input that caused it in
# <build>/fuzz/artifacts/<fuzzer>/ (reproduce with `<build>/bin/<fuzzer> <that file>`).
#
#   scripts/fuzz.sh                          # every fuzzer, 45 s each, in build-fuzz
#   KILN_FUZZ_SECONDS=600 scripts/fuzz.sh fuzz_checkpoint
#   KILN_FUZZ_BUILD=build-asan scripts/fuzz.sh   # a tree already configured for fuzzing
#
# KILN_FUZZ_BUILD names a build folder configured with clang, -DKILN_FUZZ=ON and
# -DKILN_SANITIZE=address,... (scripts/test.sh's sanitizer build is one): the fuzzers
# are built there, not in a tree of their own. Without it, build-fuzz is
# configured here. Needs clang-14 and libclang-rt-14-dev (libFuzzer's runtime). The
# corpus each run grows is kept in <build>/fuzz/corpus/<fuzzer>/ and reused by the next run.
set -euo pipefail
cd "$(dirname "$0")/.."

seconds=${KILN_FUZZ_SECONDS:-45}
jobs=${KILN_FUZZ_BUILD_JOBS:-$(nproc)}
parallel=${KILN_FUZZ_JOBS:-$(nproc)}
build=${KILN_FUZZ_BUILD:-build-fuzz}
all=(fuzz_safetensors fuzz_idx fuzz_checkpoint fuzz_plugin_table fuzz_op_schema)
if [ $# -gt 0 ]; then fuzzers=("$@"); else fuzzers=("${all[@]}"); fi

for tool in clang-14 clang++-14; do
  command -v "$tool" >/dev/null || { echo "fuzz.sh: $tool not found (apt install clang-14)" >&2; exit 1; }
done
if ! compgen -G "/usr/lib/llvm-14/lib/clang/*/lib/linux/libclang_rt.fuzzer-x86_64.a" >/dev/null; then
  echo "fuzz.sh: libFuzzer's runtime is missing (apt install libclang-rt-14-dev)" >&2
  exit 1
fi

started=$(date +%s)
if [ -n "${KILN_FUZZ_BUILD:-}" ]; then
  grep -qx 'KILN_FUZZ:BOOL=ON' "$build/CMakeCache.txt" 2>/dev/null || {
    echo "fuzz.sh: KILN_FUZZ_BUILD=$build is not a build folder configured with -DKILN_FUZZ=ON" >&2
    exit 1
  }
else
  CC=clang-14 CXX=clang++-14 cmake -S . -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo \
    -DKILN_FUZZ=ON -DKILN_SANITIZE=fuzzer-no-link,address,undefined \
    -DKILN_CUDA=OFF -DKILN_MPI=OFF -DKILN_BUILD_BENCHMARKS=OFF >/dev/null
fi
cmake --build "$build" --parallel "$jobs" --target kiln_fuzz kiln_cpu
echo "fuzz.sh: built in $(( $(date +%s) - started )) s"

seeds=$build/fuzz/seeds
rm -rf "$seeds"
"$build/bin/kiln_fuzz_seeds" "$seeds"

# Per fuzzer: its seed folder, dictionary and largest input. Safetensors headers and
# checkpoints get 1 MB, room for headers nested far beyond any limit; IDX files 64 kB,
# which gzip can still inflate to 64 MB.
declare -A corpus=([fuzz_safetensors]=safetensors [fuzz_idx]=idx [fuzz_checkpoint]=checkpoint
                   [fuzz_plugin_table]=plugin_table [fuzz_op_schema]=op_schema)
declare -A max_len=([fuzz_safetensors]=1048576 [fuzz_idx]=65536 [fuzz_checkpoint]=1048576
                    [fuzz_plugin_table]=4096 [fuzz_op_schema]=131072)

# One fuzzer: its exit status goes to <log>.status.
fuzz_one() {
  local fuzzer=$1 name=${corpus[$1]}
  local work=$build/fuzz/corpus/$fuzzer artifacts=$build/fuzz/artifacts/$fuzzer
  local log=$build/fuzz/$fuzzer.log status=0
  mkdir -p "$work" "$artifacts"
  local dict=()
  [ -f "tests/fuzz/$name.dict" ] && dict=(-dict="tests/fuzz/$name.dict")
  # LeakSanitizer runs after every input that allocated more than it freed.
  ASAN_OPTIONS=detect_leaks=1:allocator_may_return_null=1 UBSAN_OPTIONS=print_stacktrace=1 \
    "$build/bin/$fuzzer" "$work" "$seeds/$name" "${dict[@]}" \
      -max_len="${max_len[$fuzzer]}" -max_total_time="$seconds" -timeout=10 \
      -rss_limit_mb=2048 -malloc_limit_mb=2048 -print_final_stats=1 \
      -artifact_prefix="$artifacts/" >"$log" 2>&1 || status=$?
  echo "$status" >"$log.status"
}

for fuzzer in "${fuzzers[@]}"; do
  : "${corpus[$fuzzer]:?"fuzz.sh: unknown fuzzer '$fuzzer' (expected one of ${all[*]})"}"
done
running=0
for fuzzer in "${fuzzers[@]}"; do
  if [ "$running" -ge "$parallel" ]; then
    wait -n || true
    running=$((running - 1))
  fi
  echo "fuzz.sh: $fuzzer for ${seconds} s (log: $build/fuzz/$fuzzer.log)"
  rm -f "$build/fuzz/$fuzzer.log.status"
  fuzz_one "$fuzzer" &
  running=$((running + 1))
done
wait

failed=()
summary=()
for fuzzer in "${fuzzers[@]}"; do
  log=$build/fuzz/$fuzzer.log
  status=$(cat "$log.status" 2>/dev/null || echo "?")
  runs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -1)
  coverage=$(grep -o 'cov: [0-9]*' "$log" | tail -1 || true)
  if [ "$status" != 0 ]; then
    failed+=("$fuzzer")
    summary+=("$fuzzer: FAILED (exit $status) after ${runs:-?} executions; see $log")
    grep -E -m 12 'ERROR|==[0-9]+==|runtime error|SUMMARY|Test unit written|deadly signal' "$log" >&2 || true
  else
    summary+=("$fuzzer: ${runs:-?} executions in ${seconds} s, ${coverage:-cov: ?}, no crash")
  fi
done

echo
printf 'fuzz.sh: %s\n' "${summary[@]}"
if [ ${#failed[@]} -gt 0 ]; then
  echo "fuzz.sh: ${#failed[@]} fuzzer(s) found a problem: ${failed[*]}" >&2
  exit 1
fi
