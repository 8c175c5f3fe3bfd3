#!/usr/bin/env bash
# Where build_plans(ALL) of the small tutorial graphs spends its time (issue #16: the small conv
# and the small SDPA were the two graphs whose ALL took longer than NVIDIA's frontend's, both cold).
# Each line a fresh process with an empty CUDA_CACHE_PATH and cache folder: ours ALL (all engines,
# then the cudnn engine alone, then every engine but it), ours and the frontend's plans built one
# by one (`--each`: each plan's name and time, which ones compile), then the frontend's ALL.
#
#   bash bench/gpu/build_split_rows.sh BIN_DIR OUT_DIR [WHEEL_DIR]
#
# BIN_DIR (x86-64, stripped): bench/dnngraph_bench_plan_build_time and libxxhash.so.0.
set -uo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
bin=$(cd "$1" && pwd)
out=$2
wheels=${3:-}
mkdir -p "$out"
export PYTHONUNBUFFERED=1 LD_LIBRARY_PATH="$bin${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
g=$root/examples/graphs
files="$g/tutorial_conv_bias_relu_small.json $g/tutorial_sdpa_causal_small.json"
cold() { CUDA_CACHE_PATH=$(mktemp -d) DNNGRAPH_CACHE_DIR=$(mktemp -d) timeout 120 "$@"; }
for args in "--all" "--all --select cudnn" "--all --deselect cudnn" "--each"; do
  echo "== ours $args, cold ($SECONDS s)"
  DNNGRAPH_LOG_LEVEL=${DNNGRAPH_LOG_LEVEL:-} cold "$bin/bench/dnngraph_bench_plan_build_time" --gpu $args $files 2>&1 |
    tee -a "$out/ours.txt" | grep -vE '^\|---' | tail -40
done
if [ -n "$wheels" ]; then
  python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/fe_site \
    "$wheels"/*.whl 2>&1 | tail -2
  for args in "" "--each"; do
    echo "== frontend $args, cold ($SECONDS s)"
    PYTHONPATH=/tmp/fe_site cold python3 "$root/bench/gpu/fe_build_all.py" $args \
      --only tutorial_conv_bias_relu_small,tutorial_sdpa_causal_small 2>&1 | tee -a "$out/fe.txt" | tail -40
  done
fi
echo "== end ($SECONDS s)"
