#!/usr/bin/env bash
# cuda_sdpa_flash on a GPU machine: its GPU tests (unless DNNGRAPH_SKIP_TESTS is set), its benchmark,
# and PyTorch's SDPA backends (flash, cuDNN, efficient) on the same cases in the same run; a short
# table last, every figure in <build>/sdpa-results.json.
#
#   bash bench/gpu/sdpa.sh BUILD_DIR [LIBS]
#
# BUILD_DIR holds libdnngraph.a (bench/gpu.sh's build folder); LIBS is how to link xxHash
# (default -lxxhash). The test binary BUILD_DIR/tests/dnngraph_engine_tests runs when present.
set -uo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
build=${1:?usage: sdpa.sh BUILD_DIR [LIBS]}
libs=${2:--lxxhash}
bench=$build/dnngraph_sdpa_bench
if [[ ! -x $bench || $root/bench/gpu/sdpa_bench.cpp -nt $bench || $build/libdnngraph.a -nt $bench ]]; then
  # shellcheck disable=SC2086
  c++ -std=c++20 -O2 -I"$root/include" -I"$root/src" "$root/bench/gpu/sdpa_bench.cpp" "$build/libdnngraph.a" \
    $libs -ldl -pthread -o "$bench" || { echo "sdpa bench build failed"; exit 1; }
fi
rc=0
tests=$build/tests/dnngraph_engine_tests
if [[ -z "${DNNGRAPH_SKIP_TESTS:-}" && -x $tests ]]; then
  echo "==== cuda_sdpa_flash GPU tests"
  DNNGRAPH_REQUIRE_GPU=1 "$tests" --gtest_filter='CudaSdpa*' >"$build/sdpa-tests.log" 2>&1 || rc=1
  grep -E '^\[  (FAILED|PASSED|SKIPPED) |Failure|error|relative error' "$build/sdpa-tests.log" | head -40
fi
echo "==== cuda_sdpa_flash and PyTorch SDPA, same run"
PYTHONUNBUFFERED=1 python3 "$root/bench/gpu/sdpa_compare.py" --bench "$bench" --out "$build/sdpa-results.json" || rc=1
exit $rc
