#!/usr/bin/env bash
# A/B of two builds of the wgmma engines from binaries built elsewhere (as gemm_conv_prebuilt.sh):
# the GPU tests of every wgmma consumer on build B (DNNGRAPH_REQUIRE_GPU=1), then the GEMM/conv
# bench of both builds alternated twice on the same GPU, each plan's time side by side. For a
# kernel change that alters no plan list (a barrier protocol, an instruction order), where only
# the same call on the same card can tell a few percent.
#
#   bash bench/gpu/gemm_conv_ab.sh BIN_A BIN_B OUT_DIR [WORKLOADS] [PLANS]
#
# Each BIN holds dnngraph_engine_tests (B only), dnngraph_gemm_conv_bench and libxxhash.so.0.
# Prints per workload the 8 plans fastest on B's first round: "workload plan A1 B1 A2 B2" (ms).
set -uo pipefail
a=$(cd "$1" && pwd) b=$(cd "$2" && pwd) out=$3
only=${4:-gemm_8x2048_plain,conv_tutorial_n32c128_56_k256,rn50_3x3_c128_28_k128}
plans=${5:-10}
mkdir -p "$out" /tmp/dnngraph_ab_A /tmp/dnngraph_ab_B
export DNNGRAPH_REQUIRE_GPU=1
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader | tee "$out/gpu.txt"
bench() {  # side (A or B), then the bench's arguments
  local side=$1 dir
  shift
  dir=$([[ $side == A ]] && echo "$a" || echo "$b")
  GEMM_BENCH_CACHE=/tmp/dnngraph_ab_$side LD_LIBRARY_PATH="$dir" timeout 150 "$dir/dnngraph_gemm_conv_bench" "$@"
}
echo "==== tests on B and kernel builds of both ($SECONDS s)"
for side in A B; do
  for w in ${only//,/ }; do bench "$side" --only "$w" --plans "$plans" --build-only >/dev/null 2>&1 & done
done
for i in 0 1 2 3; do
  GTEST_TOTAL_SHARDS=4 GTEST_SHARD_INDEX=$i LD_LIBRARY_PATH="$b" timeout 280 "$b/dnngraph_engine_tests" \
    --gtest_filter="${TESTS:-CudaGemm*:CudaConv*:CudaGenstats*}" >"$out/tests_$i.log" 2>&1 &
done
wait
cat "$out"/tests_?.log >"$out/tests.log" && rm -f "$out"/tests_?.log
grep -E "^\[ +(OK|FAILED|SKIPPED) +\] [A-Za-z]" "$out/tests.log" | awk '{print $2}' | sort | uniq -c
grep -E "^\[  FAILED  \] [A-Z]" "$out/tests.log" | sort -u | head
echo "==== A/B, alternated twice ($SECONDS s)"
for round in 1 2; do
  for side in A B; do bench "$side" --only "$only" --plans "$plans" | grep '^PLAN' | sed "s/^/$side$round /"; done
done >"$out/ab.txt"
awk '{ key = $3 " " $7; t[key, $1] = $5; keys[key] = 1 }
  END { for (k in keys) print k, t[k, "A1"], t[k, "B1"], t[k, "A2"], t[k, "B2"] }' "$out/ab.txt" |
  sort -k1,1 -k4,4n | awk '{ if (++n[$1] <= 8) print }'
echo "==== done ($SECONDS s)"
