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
# Per side, the files other than test_mhas in one pytest process and test_mhas in FE_SHARDS
# (default 8) at once (-rP: the draws of passing cases are printed too), each under its own time
# limit (FE_TIMEOUT seconds, default 240): a side whose attention cases run slowly loses those,
# not the other files' results.
run() {  # name, PYTHONPATH head, test files
  local name=$1 head=$2; shift 2
  (cd "$fe" && PYTHONPATH="$head:$root/bench/gpu:$site" timeout "${FE_TIMEOUT:-240}" python3 -m pytest -p fe_sample \
    -p no:cacheprovider -q -m L0 "$@" --junitxml="$out/$name.xml" >"$out/$name.log" 2>&1)
  echo "$name: rc $? $(tail -1 "$out/$name.log")"
}
shards=${FE_SHARDS:-8}
side() {  # name, PYTHONPATH head: the rest, then test_mhas's shards, all at once
  local name=$1 head=$2 i
  run "${name}_rest" "$head" $files &
  for ((i = 0; i < shards; i++)); do FE_SAMPLE_SHARD=$i/$shards run "${name}_mhas$i" "$head" -rP test_mhas.py & done
  wait
}
xmls() { local i list="$out/$1_rest.xml"; for ((i = 0; i < shards; i++)); do list+=",$out/$1_mhas$i.xml"; done; echo "$list"; }
side frontend "$site"
export DNNGRAPH_CACHE_DIR; DNNGRAPH_CACHE_DIR=$(mktemp -d)
side dnngraph "$root/tests/python/cudnn_shim:$py"
python3 "$root/bench/gpu/fe_suite_compare.py" "$(xmls frontend)" "$(xmls dnngraph)" | tee "$out/compare.md"
