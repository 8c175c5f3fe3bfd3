#!/usr/bin/env bash
# GPU run of the convolution engines from binaries built elsewhere (no build on the GPU machine):
# their GPU tests (CudaConv*, DNNGRAPH_REQUIRE_GPU=1 so none can skip) and the conv benchmark for
# the chosen workloads beside PyTorch eager, same run. Results and logs go to OUT_DIR.
#
#   bash bench/gpu/gemm_conv_prebuilt.sh BIN_DIR OUT_DIR [WORKLOADS] [PLANS]
#
# BIN_DIR holds dnngraph_engine_tests, dnngraph_gemm_conv_bench and any shared library they need
# (libxxhash.so.0). Build them on an x86-64 machine with the CUDA headers:
#   ninja -C build dnngraph_engine_tests; cp build/tests/dnngraph_engine_tests BIN_DIR/
#   c++ -std=c++20 -O2 -Iinclude -Isrc bench/gpu/gemm_conv.cpp build/libdnngraph.a -l:libxxhash.a -ldl -pthread \
#       -static-libstdc++ -static-libgcc -o BIN_DIR/dnngraph_gemm_conv_bench
set -uo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
bin=$(cd "$1" && pwd)
out=$2
only=${3:-rn50_3x3_c64_56,rn50_1x1,rn50_3x3_c128,rn50_3x3_c512,depthwise}
plans=${4:-4}
mkdir -p "$out"
export LD_LIBRARY_PATH="$bin${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
export GEMM_BENCH_CACHE=${GEMM_BENCH_CACHE:-/tmp/dnngraph_gemm_cache} DNNGRAPH_REQUIRE_GPU=1
mkdir -p "$GEMM_BENCH_CACHE"
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader
echo "==== tests and kernel builds in parallel ($SECONDS s)"
shards=6
for i in $(seq 0 $((shards - 1))); do
  GTEST_TOTAL_SHARDS=$shards GTEST_SHARD_INDEX=$i "$bin/dnngraph_engine_tests" --gtest_filter="${TESTS:-CudaConv*}" \
    >"$out/tests_$i.log" 2>&1 &
done
for w in ${only//,/ }; do
  "$bin/dnngraph_gemm_conv_bench" --only "$w" --build-only --plans "$plans" >"$out/build_$w.log" 2>&1 &
done
wait
cat "$out"/tests_*.log >"$out/tests.log"; rm -f "$out"/tests_*.log
cat "$out"/build_*.log >"$out/build.log"; rm -f "$out"/build_*.log
echo "==== tests ($SECONDS s)"
grep -E "^\[ +(OK|FAILED|SKIPPED) +\] [A-Za-z]" "$out/tests.log" | sed 's/ (.*//' | sort | uniq -c
grep -B3 -A12 "Failure" "$out/tests.log" | head -80
grep "ERROR" "$out/build.log" | head -20
echo "==== benchmark ($SECONDS s)"
PYTHONUNBUFFERED=1 python3 "$root/bench/gpu/gemm_conv_torch.py" --bench "$bin/dnngraph_gemm_conv_bench" --plans "$plans" \
  --only "$only" --out "$out/results.json" 2>&1 | tee "$out/bench.log" | grep -v "^RESULT"
echo "==== done ($SECONDS s)"
