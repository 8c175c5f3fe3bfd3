#!/usr/bin/env bash
# Builds the libFuzzer targets (tests/fuzz) with clang, ASan and UBSan, and runs each for a bounded
# time on its seed corpus. Exits non-zero when a target finds a crash, a leak, undefined behaviour
# or a timeout; the reproducer is left in $FUZZ_ARTIFACTS (default build-fuzz/artifacts).
#   bash scripts/fuzz.sh                 # 30 s per target
#   FUZZ_SECONDS=300 bash scripts/fuzz.sh
# Environment: FUZZ_SECONDS, FUZZ_BUILD (build folder, default build-fuzz), FUZZ_JOBS (default
# nproc), CLANGXX (default clang++, else clang++-14).
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$PWD
SECONDS_PER_TARGET=${FUZZ_SECONDS:-30}
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
  -DDNNGRAPH_FUZZ=ON -DDNNGRAPH_BUILD_TESTS=OFF -DDNNGRAPH_BUILD_TOOLS=OFF -DDNNGRAPH_BUILD_BENCH=OFF -DCMAKE_CXX_FLAGS="$SAN" >/dev/null
ninja -C "$BUILD" -j "$JOBS" fuzz_deserialize fuzz_graph_json fuzz_make_seeds

# Corpora: the committed seeds, seeds made by this build (current version), and what earlier runs
# in this build folder found.
mkdir -p "$ARTIFACTS" "$BUILD/corpus/deserialize" "$BUILD/corpus/graph_json"
cp tests/fuzz/corpus/deserialize/* "$BUILD/corpus/deserialize/" 2>/dev/null || true
cp tests/fuzz/corpus/graph_json/* examples/graphs/*.json "$BUILD/corpus/graph_json/" 2>/dev/null || true
"$BUILD/tests/fuzz/fuzz_make_seeds" "$BUILD/corpus"

export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1:abort_on_error=1}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}
status=0
for target in deserialize graph_json; do
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
exit $status
