#!/usr/bin/env bash
# The sanitizer step of CI: builds the library, the CLI, the bad-input and limit tests, the CPU and
# ref engine tests and the libFuzzer targets (tests/fuzz) with clang, ASan and UBSan; runs the tests
# and the CLI (on the example graphs and on malformed ones), then each fuzz target for a bounded
# time on its seed corpus. Exits non-zero on any sanitizer report, failed test, crash, leak or fuzz timeout; a
# fuzz reproducer is left in $FUZZ_ARTIFACTS (default build-fuzz/artifacts).
#   bash scripts/fuzz.sh                 # 20 s per target
#   FUZZ_SECONDS=300 bash scripts/fuzz.sh
# Environment: FUZZ_SECONDS, FUZZ_BUILD (build folder, default build-fuzz), FUZZ_JOBS (default
# nproc), CLANGXX (default clang++, else clang++-14).
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$PWD
# 20 s for each of the three targets keeps CI (scripts/test.sh on 2 cores) under its 20 minutes.
SECONDS_PER_TARGET=${FUZZ_SECONDS:-20}
BUILD=${FUZZ_BUILD:-$ROOT/build-fuzz}
ARTIFACTS=${FUZZ_ARTIFACTS:-$BUILD/artifacts}
JOBS=${FUZZ_JOBS:-$(nproc)}
CLANGXX=${CLANGXX:-$(command -v clang++ || command -v clang++-14 || true)}
if [ -z "$CLANGXX" ]; then
  echo "fuzz: clang++ not found (apt-get install clang libclang-rt-14-dev)" >&2
  exit 2
fi

# -Wno-unknown-warning-option: the project warning list names GCC-only warnings.
# -O1 -gline-tables-only: the usual fuzzing trade (quick to build, readable stacks); the build type
# "Fuzz" has no flags of its own.
SAN="-O1 -gline-tables-only -fsanitize=fuzzer-no-link,address,undefined -fno-sanitize-recover=undefined -fno-omit-frame-pointer -Wno-unknown-warning-option"
cmake -S "$ROOT" -B "$BUILD" -G Ninja -DCMAKE_CXX_COMPILER="$CLANGXX" -DCMAKE_BUILD_TYPE=Fuzz \
  -DDNNGRAPH_FUZZ=ON -DDNNGRAPH_BUILD_TESTS=ON -DDNNGRAPH_BUILD_TOOLS=ON -DDNNGRAPH_BUILD_BENCH=OFF -DCMAKE_CXX_FLAGS="$SAN" >/dev/null
ninja -C "$BUILD" -j "$JOBS" fuzz_deserialize fuzz_graph_json fuzz_execute fuzz_make_seeds \
  dnngraph_cli dnngraph_bad_input_tests dnngraph_limits_tests dnngraph_cpu_engine_tests

built_at=$SECONDS

# allocator_may_return_null: an allocation too large for the machine throws std::bad_alloc, as it
# does without ASan, so the tests of that path see what a user sees.
export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1:abort_on_error=1:allocator_may_return_null=1}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}
status=0

# Runs "$@" with its output in $BUILD/<name>.log. Fails on a sanitizer report, on death by a
# signal, and on an exit status other than `want` ("0", or "error": any of 1..127).
run_checked() {
  local name=$1 want=$2 rc=0
  shift 2
  "$@" > "$BUILD/$name.log" 2>&1 || rc=$?
  local ok=1
  if grep -qE "runtime error:|ERROR: (Address|Leak)Sanitizer" "$BUILD/$name.log"; then ok=0; fi
  if [ "$want" = 0 ] && [ "$rc" != 0 ]; then ok=0; fi
  if [ "$want" = error ] && { [ "$rc" = 0 ] || [ "$rc" -ge 128 ]; }; then ok=0; fi
  if [ "$ok" = 0 ]; then
    echo "$name FAILED (exit $rc); log tail:" >&2
    tail -n 40 "$BUILD/$name.log" >&2
    status=1
  fi
}

echo "== bad-input and limit tests under ASan + UBSan"
run_checked bad_input_tests 0 "$BUILD/tests/bad_input/dnngraph_bad_input_tests" --gtest_brief=1
run_checked limits_tests 0 "$BUILD/tests/bad_input/dnngraph_limits_tests" --gtest_brief=1
grep -hE "^\[  PASSED  \]" "$BUILD/bad_input_tests.log" "$BUILD/limits_tests.log" || true

# The CPU engines (and the ref and epilogue code they share) on valid graphs of random sizes: a task
# writing past its scratch corrupts the heap without failing a plain build's test (a bf16 conv's
# column shares did, 2026-12-07). About 100 s on 2 cores.
echo "== CPU engine tests under ASan + UBSan"
run_checked cpu_engine_tests 0 "$BUILD/tests/dnngraph_cpu_engine_tests" --gtest_brief=1
grep -hE "^\[  PASSED  \]" "$BUILD/cpu_engine_tests.log" || true

echo "== the CLI under ASan + UBSan"
for graph in examples/graphs/*_small.json; do
  run_checked "cli_$(basename "$graph" .json)" 0 "$BUILD/tools/dnngraph" run --device cpu --iters 1 "$graph"
done
# Malformed graphs: refused with an error, never a crash or a report.
mkdir -p "$BUILD/cli_graphs"
head -c 200 examples/graphs/tutorial_conv_bias_relu_small.json > "$BUILD/cli_graphs/truncated.json"
frame='{"format": "dnngraph-graph", "version": 1, "io_data_type": "FLOAT", "tensors": ['
relu='"op": "pointwise", "mode": "RELU_FWD"'
echo "$frame"'{"name": "X", "dim": [4611686018427387904, 4], "stride": [4, 1]}, {"name": "Y", "output": true}],
  "nodes": [{"name": "r", '"$relu"', "inputs": {"IN_0": "X"}, "outputs": {"OUT": "Y"}}]}' > "$BUILD/cli_graphs/huge_dims.json"
echo "$frame"'{"name": "X", "dim": [4], "stride": [1]}, {"name": "A", "output": true}, {"name": "B", "output": true}],
  "nodes": [{"name": "a", '"$relu"', "inputs": {"IN_0": "B"}, "outputs": {"OUT": "A"}},
            {"name": "b", '"$relu"', "inputs": {"IN_0": "A"}, "outputs": {"OUT": "B"}}]}' > "$BUILD/cli_graphs/cycle.json"
for graph in "$BUILD"/cli_graphs/*.json; do
  run_checked "cli_bad_$(basename "$graph" .json)" error "$BUILD/tools/dnngraph" run --device cpu --iters 1 "$graph"
done

tested_at=$SECONDS

# Corpora: the committed seeds, seeds made by this build (current version), and what earlier runs
# in this build folder found.
mkdir -p "$ARTIFACTS" "$BUILD/corpus/deserialize" "$BUILD/corpus/graph_json" "$BUILD/corpus/execute"
cp tests/fuzz/corpus/deserialize/* "$BUILD/corpus/deserialize/" 2>/dev/null || true
cp tests/fuzz/corpus/graph_json/* examples/graphs/*.json "$BUILD/corpus/graph_json/" 2>/dev/null || true
cp tests/fuzz/corpus/execute/* "$BUILD/corpus/execute/" 2>/dev/null || true  # inputs that once failed
"$BUILD/tests/fuzz/fuzz_make_seeds" "$BUILD/corpus"

for target in deserialize graph_json execute; do
  echo "== fuzz_$target: ${SECONDS_PER_TARGET} s"
  if ! "$BUILD/tests/fuzz/fuzz_$target" -max_total_time="$SECONDS_PER_TARGET" -timeout=10 -rss_limit_mb=2048 \
      -max_len=65536 -print_final_stats=1 -artifact_prefix="$ARTIFACTS/$target-" "$BUILD/corpus/$target" \
      > "$BUILD/fuzz_$target.log" 2>&1; then
    echo "fuzz_$target FAILED; the reproducer is in $ARTIFACTS; log tail:" >&2
    tail -n 40 "$BUILD/fuzz_$target.log" >&2
    status=1
  else
    grep -E "stat::number_of_executed_units|Done [0-9]+ runs" "$BUILD/fuzz_$target.log" | tail -n 1
  fi
done
echo "fuzz.sh: build ${built_at} s, tests and CLI $((tested_at - built_at)) s, fuzzing $((SECONDS - tested_at)) s"
exit $status
