#!/usr/bin/env bash
# Fuzzes the parsers of untrusted input for a bounded time (tests/fuzz): builds
# build-fuzz with clang-14, libkiln and the CPU plugin instrumented for coverage
# (-fsanitize=fuzzer-no-link,address,undefined), generates the seed corpora with
# kiln_fuzz_seeds, and runs each fuzzer for KILN_FUZZ_SECONDS (default 45). Fails on
# any crash, sanitizer report, leak, timeout or out-of-memory, leaving the input that
# caused it in build-fuzz/fuzz/artifacts/<fuzzer>/ (reproduce with
# `build-fuzz/bin/<fuzzer> <that file>`).
#
#   scripts/fuzz.sh                          # every fuzzer, 45 s each
#   KILN_FUZZ_SECONDS=600 scripts/fuzz.sh fuzz_checkpoint
#
# Needs clang-14 and libclang-rt-14-dev (libFuzzer's runtime). The corpus each run grows
# is kept in build-fuzz/fuzz/corpus/<fuzzer>/ and reused by the next run.
set -euo pipefail
cd "$(dirname "$0")/.."

seconds=${KILN_FUZZ_SECONDS:-45}
jobs=${KILN_FUZZ_BUILD_JOBS:-$(nproc)}
build=build-fuzz
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
CC=clang-14 CXX=clang++-14 cmake -S . -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo \
  -DKILN_FUZZ=ON -DKILN_SANITIZE=fuzzer-no-link,address,undefined \
  -DKILN_CUDA=OFF -DKILN_MPI=OFF -DKILN_BUILD_BENCHMARKS=OFF >/dev/null
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

failed=()
summary=()
for fuzzer in "${fuzzers[@]}"; do
  name=${corpus[$fuzzer]:?"fuzz.sh: unknown fuzzer '$fuzzer' (expected one of ${all[*]})"}
  work=$build/fuzz/corpus/$fuzzer
  artifacts=$build/fuzz/artifacts/$fuzzer
  log=$build/fuzz/$fuzzer.log
  mkdir -p "$work" "$artifacts"
  dict=()
  [ -f "tests/fuzz/$name.dict" ] && dict=(-dict="tests/fuzz/$name.dict")
  echo "fuzz.sh: $fuzzer for ${seconds} s (log: $log)"
  status=0
  # LeakSanitizer runs after every input that allocated more than it freed.
  ASAN_OPTIONS=detect_leaks=1:allocator_may_return_null=1 UBSAN_OPTIONS=print_stacktrace=1 \
    "$build/bin/$fuzzer" "$work" "$seeds/$name" "${dict[@]}" \
      -max_len="${max_len[$fuzzer]}" -max_total_time="$seconds" -timeout=10 \
      -rss_limit_mb=2048 -malloc_limit_mb=2048 -print_final_stats=1 \
      -artifact_prefix="$artifacts/" >"$log" 2>&1 || status=$?
  runs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -1)
  coverage=$(grep -o 'cov: [0-9]*' "$log" | tail -1 || true)
  if [ "$status" -ne 0 ]; then
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
