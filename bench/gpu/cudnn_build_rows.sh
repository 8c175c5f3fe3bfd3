#!/usr/bin/env bash
# The cudnn engine's concurrent builds on a GPU, with binaries built on the CPU machine: its GPU
# tests (every config of conv, matmul and SDPA graphs against ref; configs built at once on a
# handle each), then build_plans(ALL) of the tutorial conv and SDPA graphs in a cold process and
# cache folder with builds at once (DNNGRAPH_BUILD_THREADS unset) and one after another
# (DNNGRAPH_BUILD_THREADS=1), beside NVIDIA's frontend building all its plans of the same graphs.
# Every process gets an empty CUDA_CACHE_PATH: the driver keeps JIT-compiled kernels there across
# processes, and a process that ran after another building the same cuDNN configs was 3x faster
# (docs/perf.md, 2026-12-07 19:31), so each side is timed cold.
#
#   bash bench/gpu/cudnn_build_rows.sh BIN_DIR OUT_DIR [WHEEL_DIR]
#
# BIN_DIR (x86-64, stripped): tests/dnngraph_engine_tests, bench/dnngraph_bench_plan_build_time and
# libxxhash.so.0. WHEEL_DIR: the nvidia-cudnn-frontend wheel (cp312) for the peer; without it the
# peer is skipped.
set -uo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
bin=$(cd "$1" && pwd)
out=$2
wheels=${3:-}
mkdir -p "$out"
export PYTHONUNBUFFERED=1 LD_LIBRARY_PATH="$bin${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader
echo "== cudnn engine GPU tests ($SECONDS s)"
DNNGRAPH_REQUIRE_GPU=1 timeout 300 "$bin/tests/dnngraph_engine_tests" --gtest_filter='CudnnGpu.*:CudnnSdpaGpu.*' \
  >"$out/cudnn_tests.txt" 2>&1
echo "rc $?"
grep -E '^\[ +(OK|FAILED|PASSED) |Failure|INFO.*at once' "$out/cudnn_tests.txt" | head -40
g=$root/examples/graphs
files="$g/tutorial_conv_bias_relu.json $g/tutorial_conv_bias_relu_small.json $g/tutorial_sdpa_causal.json $g/tutorial_sdpa_causal_small.json"
for threads in "" 1; do
  echo "== ours, build_plans(ALL) cold, DNNGRAPH_BUILD_THREADS=${threads:-unset} ($SECONDS s)"
  CUDA_CACHE_PATH=$(mktemp -d) DNNGRAPH_BUILD_THREADS=$threads DNNGRAPH_CACHE_DIR=$(mktemp -d) timeout 150 \
    "$bin/bench/dnngraph_bench_plan_build_time" --gpu --all $files 2>&1 | tail -8
done
if [ -n "$wheels" ]; then
  echo "== NVIDIA's frontend ($SECONDS s)"
  python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/fe_site \
    "$wheels"/*.whl 2>&1 | tail -2
  CUDA_CACHE_PATH=$(mktemp -d) PYTHONPATH=/tmp/fe_site timeout 150 python3 "$root/bench/gpu/fe_build_all.py" 2>&1 | tail -8
fi
echo "== end ($SECONDS s)"
