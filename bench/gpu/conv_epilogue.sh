#!/usr/bin/env bash
# The convolution epilogue on a GPU, in one run from binaries built elsewhere (as
# gemm_conv_prebuilt.sh's header says): the CudaConv* tests (GPU required) with the register
# epilogue's (epilogue=1) against ref; then per layer the staged epilogue, its probes
# (DNNGRAPH_CONV_EPILOGUE_PROBE=2: staging and barriers only, 3: no epilogue; outputs unwritten)
# and epilogue=1, each plan timed (dnngraph_gemm_conv_bench); then bench/default_plan beside
# cuDNN's best plan, every own plan checked. Logs in OUT_DIR. (Probe 0: as shipped, staged and
# epilogue=1 plans both in the knob space.)
#
#   bash bench/gpu/conv_epilogue.sh BIN_DIR OUT_DIR [PLANS]
#
# BIN_DIR: dnngraph_engine_tests, dnngraph_gemm_conv_bench, dnngraph_bench_default_plan and the
# shared libraries they need (libxxhash.so.0).
set -uo pipefail
bin=$(cd "$1" && pwd)
out=$2
plans=${3:-6}
mkdir -p "$out"
export LD_LIBRARY_PATH="$bin${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}" DNNGRAPH_REQUIRE_GPU=1
export GEMM_BENCH_CACHE=${GEMM_BENCH_CACHE:-/tmp/dnngraph_conv_epilogue} DNNGRAPH_BENCH_CACHE=${GEMM_BENCH_CACHE:-/tmp/dnngraph_conv_epilogue}
mkdir -p "$GEMM_BENCH_CACHE"
probe_layers=conv_tutorial_n32c128_56_k256,rn50_3x3_c64_56_k64,rn50_3x3_c128_28_k128
rows="conv_tutorial_n32c128_56_k256 rn50_3x3_c64_56_k64 rn50_3x3_c256_14_k256 rn50_1x1_c256_56_k64 rn50_3x3_c128_28_k128 rn50_3x3_c512_7_k512 rn50_3x3_n8_c64_32_k64"
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader | tee "$out/gpu.txt"
echo "==== tests and kernel builds in parallel ($SECONDS s)"
# CONV_EPILOGUE_SKIP_TESTS=1: the caller ran the CudaConv* tests already.
for i in 0 1 2 3 4 5; do
  [[ -n "${CONV_EPILOGUE_SKIP_TESTS:-}" ]] && break
  GTEST_TOTAL_SHARDS=6 GTEST_SHARD_INDEX=$i "$bin/dnngraph_engine_tests" --gtest_filter='CudaConv*' >"$out/tests_$i.log" 2>&1 &
done
for pr in 0 2 3; do
  for w in ${probe_layers//,/ }; do
    DNNGRAPH_CONV_EPILOGUE_PROBE=$pr "$bin/dnngraph_gemm_conv_bench" --only "$w" --build-only --plans "$plans" >/dev/null 2>&1 &
  done
done
for w in $rows; do
  "$bin/dnngraph_bench_default_plan" --device cuda --only "$w" --build-only --own 8 >/dev/null 2>&1 &
done
wait
cat "$out"/tests_*.log >"$out/tests.log" 2>/dev/null; rm -f "$out"/tests_*.log
echo "==== tests ($SECONDS s)"
grep -E "^\[ +(OK|FAILED|SKIPPED) +\] [A-Za-z]" "$out/tests.log" | sed 's/ (.*//' | awk '{print $2}' | sort | uniq -c
grep -B2 -A10 "Failure" "$out/tests.log" | head -40
echo "==== probes: 0 = staged and epilogue=1, 2 = staging only, 3 = no epilogue ($SECONDS s)"
for pr in 0 2 3; do
  DNNGRAPH_CONV_EPILOGUE_PROBE=$pr "$bin/dnngraph_gemm_conv_bench" --only "$probe_layers" --plans "$plans" 2>&1 | sed "s/^/P$pr /"
done >"$out/probes.txt"
grep " PLAN " "$out/probes.txt" | awk '{print $1, $3, $5, $7}'
echo "==== default plan beside cuDNN ($SECONDS s)"
"$bin/dnngraph_bench_default_plan" --device cuda --only "${rows// /,}" --own 8 --vendor 24 \
  >"$out/default_plan.txt" 2>&1
grep -E "^CAND" "$out/default_plan.txt" | awk '$4 != "cudnn" {print $2, $7, $8}'
grep "CHECK.*FAIL" "$out/default_plan.txt"
grep -E "^ROW" "$out/default_plan.txt" | awk '{print $2, "mode_a", $4, "own", $9, "cudnn", $11}'
echo "==== done ($SECONDS s)"
