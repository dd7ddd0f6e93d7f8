#!/usr/bin/env bash
# The prepared device check for staged CUDA code (plugins/cuda/staged.cpp;
# docs/design-decisions.md, "Staged CUDA code"): the first thing to run when a GPU is lent.
#
#   bash bench/gpu_staged_check.sh [OUT_DIR]    (default: $LOGS if set, else /tmp/kiln-staged)
#
# Run from the project root on the GPU machine with the packed Release build at build/,
# through ../shared/gpu's on-device.sh:
#   bash .gpu/on-device.sh 'bash bench/gpu_staged_check.sh $LOGS'
# Everything runs with KILN_CUDA_STAGED=1 (every staged entry on) except step 3. Steps, each
# with a time limit; a failing step is reported and the rest still run. The limits add up
# to 580 s, inside one device call (at most 600 s; give the call timeout_s 600):
#   1. the staged entries' own tests: kiln_cuda_test --gtest_filter=CudaStaged.* with
#      per-case verdicts -> OUT/staged.json;
#   2. every case of kiln_cuda_test with the staged code on -> OUT/cuda_all.log;
#   3. ctest -L gpu, the whole GPU half of the suite as CI would run it (ctest clears
#      KILN_CUDA_STAGED: the verified code with staged code off) -> OUT/ctest.log,
#      OUT/ctest.xml (JUnit: a verdict per test);
#   4. kiln-conformance on cuda:0 -> OUT/conformance.json;
#   5. compute-sanitizer memcheck over the staged tests, racecheck over those whose
#      kernels use shared memory (softmax, the norms) -> OUT/memcheck.log, OUT/racecheck.log;
#   6. bench/gpu_same_run.sh (Kiln and PyTorch in the same call) -> OUT/same_run/;
#   7. OUT/SUMMARY.md: for each staged entry, passed / failed (and which step), from
#      kiln-info's list and the verdicts above.
set -u
root=$(cd "$(dirname "$0")/.." && pwd)
out=${1:-${LOGS:-/tmp/kiln-staged}}
mkdir -p "$out" || { echo "gpu_staged_check.sh: cannot create $out" >&2; exit 1; }
out=$(cd "$out" && pwd)
bin=$root/build/bin
export KILN_CUDA_STAGED=1
status=0

step() {  # step NAME SECONDS COMMAND...: runs it, records its exit status in OUT/steps.tsv
  local name=$1 limit=$2
  shift 2
  local start=$SECONDS
  timeout "$limit" "$@"
  local rc=$?
  echo -e "$name\t$rc\t$((SECONDS - start))" >> "$out/steps.tsv"
  [ "$rc" = 0 ] || status=1
  echo "step $name: exit $rc after $((SECONDS - start)) s"
}
: > "$out/steps.tsv"

"$bin/kiln-info" > "$out/kiln-info.txt" 2>&1
step staged_tests 60 "$bin/kiln_cuda_test" --gtest_filter='CudaStaged.*' \
  --gtest_output="json:$out/staged.json" > "$out/staged.log" 2>&1
step cuda_all 90 "$bin/kiln_cuda_test" > "$out/cuda_all.log" 2>&1
step ctest_gpu 150 ctest --test-dir "$root/build" -L gpu --output-on-failure \
  --output-junit "$out/ctest.xml" > "$out/ctest.log" 2>&1
step conformance 60 "$bin/kiln-conformance" --json --device 0 "$root/build/lib/libkiln_cuda.so" \
  > "$out/conformance.json" 2> "$out/conformance.log"
if command -v compute-sanitizer > /dev/null || [ -x /usr/local/cuda/bin/compute-sanitizer ]; then
  cs=$(command -v compute-sanitizer || echo /usr/local/cuda/bin/compute-sanitizer)
  step memcheck 60 "$cs" --tool memcheck --error-exitcode 1 "$bin/kiln_cuda_test" \
    --gtest_filter='CudaStaged.*' > "$out/memcheck.log" 2>&1
  step racecheck 40 "$cs" --tool racecheck --error-exitcode 1 "$bin/kiln_cuda_test" \
    --gtest_filter='CudaStaged.Softmax*:CudaStaged.HalfNorms*' > "$out/racecheck.log" 2>&1
else
  echo -e "memcheck\tmissing\t0" >> "$out/steps.tsv"
  status=1
fi
step same_run 120 bash "$root/bench/gpu_same_run.sh" "$out/same_run" > "$out/same_run.log" 2>&1

python3 - "$out" <<'EOF' || status=1
import json, os, re, sys
out = sys.argv[1]
steps = {}
for line in open(os.path.join(out, "steps.tsv")):
    name, rc, secs = line.rstrip("\n").split("\t")
    steps[name] = (rc, secs)
# The staged entries, as kiln-info printed them: "      name [kind, on] summary; covered by T".
entries = []
for line in open(os.path.join(out, "kiln-info.txt"), errors="replace"):
    m = re.match(r"\s+(\S+) \[(kernel|extension), (on|off)\] .*; covered by (.+)$", line)
    if m:
        entries.append((m.group(1), m.group(2), m.group(3), m.group(4)))
cases = {}
try:
    for suite in json.load(open(os.path.join(out, "staged.json"))).get("testsuites", []):
        for t in suite.get("testsuite", []):
            ok = not t.get("failures") and t.get("result") == "COMPLETED"
            cases[suite["name"] + "." + t["name"]] = "passed" if ok else "failed"
except (OSError, ValueError) as e:
    print("no per-case verdicts:", e)
lines = ["# Staged CUDA code: device check", "",
         "| entry | kind | switched on | its test | verdict |", "|---|---|---|---|---|"]
for name, kind, on, test in entries:
    case = test.split(": ", 1)[-1]
    verdict = cases.get(case, "not run")
    lines.append(f"| {name} | {kind} | {on} | {case} | {verdict} |")
lines += ["", "| step | exit | seconds |", "|---|---|---|"]
lines += [f"| {k} | {rc} | {s} |" for k, (rc, s) in steps.items()]
lines += ["", "An entry leaves plugins/cuda/staged.cpp's list only when its test passed here and",
          "cuda_all, conformance and memcheck passed with it on (and ctest -L gpu with it off);",
          "compare its kernels with PyTorch in same_run/same_run.md before calling it done."]
open(os.path.join(out, "SUMMARY.md"), "w").write("\n".join(lines) + "\n")
print("\n".join(lines))
EOF
exit $status
