#!/usr/bin/env bash
# NVIDIA's cudnn-frontend test/python suite (issue #18's files, -m L0) run twice on this GPU: with
# the real frontend (the nvidia-cudnn-frontend wheel, importable as `cudnn`) and with dnngraph
# through tests/python/cudnn_shim; then the per-file table of both (bench/gpu/fe_suite_compare.py).
# test_mhas is sampled (bench/gpu/fe_sample.py: every FE_SAMPLE_EVERY-th case, default 40).
#
#   bash bench/gpu/frontend_suite.sh FE_TEST_DIR DNNGRAPH_PYTHON_DIR FRONTEND_SITE OUT_DIR
#
# FE_TEST_DIR: a copy of the frontend repository's test/python; DNNGRAPH_PYTHON_DIR: the build's
# python/ folder (holds the dnngraph package); FRONTEND_SITE: where the wheel (and looseversion) is
# installed.
set -uo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
fe=$(cd "$1" && pwd) py=$(cd "$2" && pwd) site=$(cd "$3" && pwd) out=$4
mkdir -p "$out"
files="test_conv_bias.py test_conv_fprop.py test_matmul_bias_relu.py test_kernel_cache.py test_layernorm.py
 test_rmsnorm.py test_batchnorm.py test_instancenorm.py test_slice.py test_wgrads.py test_conv_reduction.py
 test_conv_genstats.py test_apply_rope.py test_silu_and_mul.py"
# Two pytest processes per side, each under its own time limit (FE_TIMEOUT seconds, default 240):
# a side whose attention cases run slowly loses those, not the other files' results.
run() {  # name, PYTHONPATH head, test files
  local name=$1 head=$2; shift 2
  (cd "$fe" && PYTHONPATH="$head:$root/bench/gpu:$site" timeout "${FE_TIMEOUT:-240}" python3 -m pytest -p fe_sample \
    -p no:cacheprovider -q -m L0 "$@" --junitxml="$out/$name.xml" >"$out/$name.log" 2>&1)
  echo "$name: rc $? $(tail -1 "$out/$name.log")"
}
run frontend_rest "$site" $files
run frontend_mhas "$site" test_mhas.py
export DNNGRAPH_CACHE_DIR; DNNGRAPH_CACHE_DIR=$(mktemp -d)
run dnngraph_rest "$root/tests/python/cudnn_shim:$py" $files
run dnngraph_mhas "$root/tests/python/cudnn_shim:$py" test_mhas.py
python3 "$root/bench/gpu/fe_suite_compare.py" "$out/frontend_rest.xml,$out/frontend_mhas.xml" \
  "$out/dnngraph_rest.xml,$out/dnngraph_mhas.xml" | tee "$out/compare.md"
