#!/usr/bin/env bash
# 3xTF32 (FLOAT that the graph keeps exact) on the GPU, with binaries built on the CPU machine:
# the held-back matmul form's GPU test with its gate (`gemm_tf32x3`) released, the conv form's
# tests, then the default-plan bench's fp32 rows (every own plan and cuDNN / cuBLASLt config timed
# and checked against float64 with NaN-poisoned outputs: mode A against the best of the list) with
# PyTorch beside them computing exact fp32 too (cudnn.allow_tf32 and matmul.allow_tf32 off).
#
#   bash bench/gpu/tf32x3_rows.sh BIN_DIR OUT_DIR
#
# BIN_DIR (x86-64, stripped, carried with the call): tests/dnngraph_engine_tests,
# bench/dnngraph_bench_default_plan and libxxhash.so.0, as bench/gpu/prebuilt_rows.sh describes.
set -uo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
bin=$(cd "$1" && pwd)
out=$2
mkdir -p "$out"
export PYTHONUNBUFFERED=1 LD_LIBRARY_PATH="$bin${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
export DNNGRAPH_BENCH_CACHE=${DNNGRAPH_BENCH_CACHE:-/tmp/dnngraph_tf32x3_cache}
mkdir -p "$DNNGRAPH_BENCH_CACHE"
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader
echo "== 3xTF32 tests, the matmul gate released ($SECONDS s)"
DNNGRAPH_UNCHECKED_ENGINES=gemm_tf32x3 DNNGRAPH_REQUIRE_GPU=1 timeout 300 "$bin/tests/dnngraph_engine_tests" \
  --gtest_filter='CudaGemmTf32x3.*:CudaConvTf32x3.*' 2>&1 | grep -E '^\[ +(OK|FAILED|PASSED) |Failure|got .* want' | head -40
echo "== default plan, fp32 rows ($SECONDS s)"
rows='fp32_conv_tutorial_n32c128_56_k256$,fp32_rn50_3x3_c64_56_k64$,fp32_rn50_3x3_c256_14_k256$'
rows+=',fp32_rn50_1x1_c256_56_k64$,fp32_rn50_3x3_c512_7_k512$,fp32_rn50_3x3_n1_c64_32_k64$,fp32_gemm_4096_bias_relu$'
DNNGRAPH_UNCHECKED_ENGINES=gemm_tf32x3 timeout 300 "$bin/bench/dnngraph_bench_default_plan" --device cuda --only "$rows" \
  >"$out/default_plan.txt" 2>&1
echo "rc $?"
grep -E '^(ROW|ERROR)' "$out/default_plan.txt" | cut -c1-220
grep -E '^CHECK' "$out/default_plan.txt" | awk '{print $2, $3, $4, $5, $7}'
python3 "$root/bench/calibrate.py" "$out/default_plan.txt" --table /dev/null | sed -n '/^|/p;/^worst/p'
echo "== PyTorch, exact fp32 ($SECONDS s)"
timeout 150 python3 "$root/bench/gpu/default_plan_torch.py" "$out/default_plan.txt" --out "$out/default_plan.json" | tail -10
echo "== end ($SECONDS s)"
