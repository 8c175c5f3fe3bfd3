#!/usr/bin/env bash
# A GPU call that builds nothing on the GPU machine: binaries made on the CPU machine run the pool
# engine's GPU tests with its `pool_channels` gate released and bench/gpu/pool.sh beside PyTorch,
# then issue #15's conv rows through bench/gpu/default_plan.sh (every own plan and cuDNN config,
# checked against float64 with NaN-poisoned outputs, PyTorch beside; no recalibration).
#
#   bash bench/gpu/prebuilt_rows.sh BIN_DIR OUT_DIR
#
# BIN_DIR (x86-64, stripped, carried with the call): tests/dnngraph_engine_tests, tools/dnngraph,
# bench/dnngraph_bench_default_plan and libxxhash.so.0, e.g. from a Release build here:
#   mkdir -p B/tests B/tools B/bench && strip -o B/tests/dnngraph_engine_tests build/tests/dnngraph_engine_tests
#   strip -o B/tools/dnngraph build/tools/dnngraph && strip -o B/bench/dnngraph_bench_default_plan \
#     build/bench/dnngraph_bench_default_plan && cp -L /lib/x86_64-linux-gnu/libxxhash.so.0 B/
set -uo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
bin=$(cd "$1" && pwd)
out=$2
mkdir -p "$out"
export PYTHONUNBUFFERED=1 LD_LIBRARY_PATH="$bin${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader
echo "== pool tests, gate released ($SECONDS s)"
DNNGRAPH_UNCHECKED_ENGINES=pool_channels DNNGRAPH_REQUIRE_GPU=1 "$bin/tests/dnngraph_engine_tests" \
  --gtest_filter='CudaPool*' 2>&1 | grep -E '^\[ +(OK|FAILED|PASSED) |Failure|tests ran' | head -40
echo "== pool bench ($SECONDS s)"
DNNGRAPH_UNCHECKED_ENGINES=pool_channels bash "$root/bench/gpu/pool.sh" "$bin/tools/dnngraph" 2>&1 | tail -25
echo "== default plan, issue #15's conv rows ($SECONDS s)"
rows='conv_tutorial_n32c128_56_k256$,rn50_3x3_c64_56_k64$,rn50_3x3_c256_14_k256$,rn50_1x1_c256_56_k64$'
rows+=',rn50_3x3_c128_28_k128$,rn50_3x3_c512_7_k512$,rn50_3x3_n1_c64_32_k64$'
DEFAULT_PLAN_ONLY=$rows timeout 400 bash "$root/bench/gpu/default_plan.sh" "$bin" "$out/dp" --no-calibrate 2>&1 | tail -45
echo "== end ($SECONDS s)"
