#!/usr/bin/env bash
# The matmul's stream-K tail on a GPU, with binaries built on the CPU machine: its GPU test
# (CudaGemmStreamK.*, every offered stream_k plan against ref with NaN-poisoned
# outputs) and split-K's beside it, then the default-plan bench's GEMM 8192^3 with every own plan
# (stream_k ones included) and cuBLASLt's configs timed and checked, and PyTorch's matmul beside.
# 8192^3 in 128 x 256 tiles is 15.5 waves of 132 CTAs: the row the tail is for (issue #24). Also the
# fp32 GEMM row, whose mode A the 2026-12-07 calibration entries moved to the own 3xTF32 plan.
#
#   bash bench/gpu/stream_k_rows.sh BIN_DIR OUT_DIR
#
# BIN_DIR (x86-64, stripped): tests/dnngraph_engine_tests, bench/dnngraph_bench_default_plan and
# libxxhash.so.0, as bench/gpu/prebuilt_rows.sh describes.
set -uo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
bin=$(cd "$1" && pwd)
out=$2
mkdir -p "$out"
export PYTHONUNBUFFERED=1 LD_LIBRARY_PATH="$bin${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader
echo "== stream-K tests ($SECONDS s)"
DNNGRAPH_REQUIRE_GPU=1 timeout 150 "$bin/tests/dnngraph_engine_tests" \
  --gtest_filter='CudaGemmStreamK.*:CudaGemm.WgmmaSplitKMatchesRef' >"$out/stream_k_tests.txt" 2>&1
echo "rc $?"
grep -E '^\[ +(OK|FAILED|PASSED) |Failure|INFO|trial|Expected|which is' "$out/stream_k_tests.txt" | head -30
echo "== GEMM 8192^3 and the fp32 GEMM row, every own plan ($SECONDS s)"
DNNGRAPH_BENCH_CACHE=${DNNGRAPH_BENCH_CACHE:-/tmp/dnngraph_stream_k_cache} \
  timeout 330 "$bin/bench/dnngraph_bench_default_plan" --device cuda --only 'gemm_8192$,fp32_gemm_4096_bias_relu$' \
  --own 40 --vendor 8 \
  >"$out/default_plan.txt" 2>&1
echo "rc $?"
grep -E '^(CAND|ROW|ERROR)' "$out/default_plan.txt" | cut -c1-200 | head -60
grep -E '^CHECK' "$out/default_plan.txt" | awk '$5!="ok"{print}' | head -5
echo "== PyTorch ($SECONDS s)"
timeout 60 python3 "$root/bench/gpu/default_plan_torch.py" "$out/default_plan.txt" --out "$out/default_plan.json" | tail -4
echo "== end ($SECONDS s)"
