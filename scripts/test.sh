#!/usr/bin/env bash
# The whole test suite, as CI runs it: install what is missing, build with
# warnings as errors and run every test; then build the same tree with
# AddressSanitizer + UndefinedBehaviorSanitizer and run every test again; run the
# tests that use threads under ThreadSanitizer; and fuzz the parsers of untrusted
# input for a bounded time (scripts/fuzz.sh). Each step's time is printed, and all of
# them at the end.
set -euo pipefail
cd "$(dirname "$0")/.."
jobs=$(nproc)
steps=()
step_name=""
step_started=$SECONDS
step() {
  [ -n "$step_name" ] && steps+=("$(printf '%5d s  %s' $((SECONDS - step_started)) "$step_name")")
  step_name=$1
  step_started=$SECONDS
  [ -n "$step_name" ] && printf '\n== test.sh: %s (at %d s)\n' "$step_name" "$SECONDS"
  return 0
}
summary() {
  step ""
  printf '\n== test.sh: %s\n' "steps:" "${steps[@]}" "total: $SECONDS s"
}
trap summary EXIT

step "install what is missing"
scripts/install-deps.sh

step "plain build (g++, -Werror, CUDA and MPI when present)"
cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=Release -DKILN_WERROR=ON -DKILN_TEST_OPTIMIZE=-O1
cmake --build build --parallel "$jobs"
step "plain tests"
ctest --test-dir build --output-on-failure --parallel "$jobs"
# The plugin SDK as a vendor uses it: install, build the template plugin against the
# install only, certify it, train with it (about 20 s).
step "the SDK from the install"
scripts/sdk-check.sh build

# The sanitizer build: clang-14 with AddressSanitizer + UndefinedBehaviorSanitizer, and
# the fuzzers built in it (KILN_FUZZ=ON also builds libkiln and kiln-train's checkpoint
# reader for libFuzzer's coverage; tests/fuzz/CMakeLists.txt), not in a tree of their
# own: that saved building libkiln and the CPU plugin a fourth time, about 6 minutes of a
# CI run. clang compiles this build in about two thirds of g++'s time, and g++ still
# builds everything with -Werror above.
# KILN_CUDA=OFF: the CUDA runtime cannot run under AddressSanitizer (it maps memory
# where ASan keeps its shadow, unless ASAN_OPTIONS=protect_shadow_gap=0), nvcc takes
# no -fsanitize, and CI has no GPU to run it on anyway; leaving it out also halves the
# nvcc time of a CI run. The plain build above builds and loads the plugin.
# KILN_MPI=OFF: Open MPI keeps allocations until exit that LeakSanitizer reports (a
# known Open MPI trait); the MPI group and DDP tests run in the plain build under
# mpirun (DDP's reducer, which lives in libkiln, is still built here).
# Both sanitizer builds: -O1 with line tables only (-g1), not RelWithDebInfo's -O2 -g.
# -O1 is what AddressSanitizer's documentation recommends, and reports still name file
# and line. Each file compiles in about 0.6 of the time (kiln_info.cpp under ASan:
# 34 s at -O2 -g, 19 s at -O1 -g1).
sanitizer_build=(-DCMAKE_BUILD_TYPE=RelWithDebInfo "-DCMAKE_CXX_FLAGS_RELWITHDEBINFO=-O1 -g1 -DNDEBUG"
                 "-DCMAKE_C_FLAGS_RELWITHDEBINFO=-O1 -g1 -DNDEBUG")
step "sanitizer build (clang-14, ASan + UBSan, and the fuzzers)"
# The tests' own code at -O0 (KILN_TEST_OPTIMIZE, tests/CMakeLists.txt): it builds in
# half the time of -O1 and the suite runs longer (the op suite's reference loops are
# test code), about 60 s less in all (clean-clone runs: 523 s + 312 s at -O0, 688 s +
# 206 s at -O1).
CC=clang-14 CXX=clang++-14 cmake -S . -B build-asan -G Ninja "${sanitizer_build[@]}" -DKILN_WERROR=ON \
  -DKILN_TEST_OPTIMIZE=-O0 -DKILN_SANITIZE=address,undefined -DKILN_FUZZ=ON \
  -DKILN_BUILD_BENCHMARKS=OFF -DKILN_CUDA=OFF -DKILN_MPI=OFF
cmake --build build-asan --parallel "$jobs"
step "sanitizer tests"
ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 \
UBSAN_OPTIONS=print_stacktrace=1 \
  ctest --test-dir build-asan --output-on-failure --parallel "$jobs"

# ThreadSanitizer: libkiln and the CPU plugin instrumented, running the tests labelled
# "threads" (concurrent dispatch and first-use kernel lookups, two devices trained from
# two threads, the plugin's thread pool and allocator, DataLoader prefetch, DataParallel
# and the collectives' one thread per rank). No suppressions: any report fails the run
# (halt_on_error). OpenBLAS is not instrumented, but the CPU plugin runs it
# single-threaded inside its own pool's tasks, so every hand-off between threads is one
# TSan sees.
step "ThreadSanitizer build"
# Without libkiln's precompiled header (KILN_PCH): the other builds use it, so this one
# is where a libkiln source that does not include what it uses fails.
# Its tests' own code at -O0 too (their time is spent in libkiln).
cmake -S . -B build-tsan -G Ninja "${sanitizer_build[@]}" -DKILN_WERROR=ON -DKILN_TEST_OPTIMIZE=-O0 \
  -DKILN_PCH=OFF -DKILN_SANITIZE=thread -DKILN_BUILD_BENCHMARKS=OFF -DKILN_CUDA=OFF -DKILN_MPI=OFF
cmake --build build-tsan --parallel "$jobs" --target kiln_cpu kiln_runtime_test kiln_data_test \
  kiln_distributed_tests kiln_cpu_plugin_tests kiln_cpu_collectives_tests kiln_exit_with_running_threads
step "ThreadSanitizer tests"
TSAN_OPTIONS=halt_on_error=1:second_deadlock_stack=1 \
  ctest --test-dir build-tsan --label-regex threads --output-on-failure --parallel "$jobs"

# libFuzzer, in the sanitizer build: the safetensors loader, the IDX reader, kiln-train's
# checkpoint restore, the loader's plugin-table checks and the op-schema validator, each
# for KILN_FUZZ_SECONDS (45 s by default), one per core at a time, from seeds the build
# generates; any crash or sanitizer report fails.
step "fuzzing"
KILN_FUZZ_BUILD=build-asan scripts/fuzz.sh
