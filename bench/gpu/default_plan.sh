#!/usr/bin/env bash
# Mode A's plan against the best plan of the same list on this GPU, before and after calibrating:
# compiles the own engines' candidates in parallel (one process per workload, a shared kernel
# cache folder), times every workload (pass 1), rewrites src/planning/calibration_table.inc from
# pass 1's measured / estimated ratios, rebuilds, times again (pass 2, the table in use) and puts
# PyTorch beside pass 2's rows.
#
#   bash bench/gpu/default_plan.sh BUILD_DIR OUT_DIR [--no-calibrate]     (DEFAULT_PLAN_ONLY=S,...: a subset)
set -uo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
build=$(cd "$1" && pwd)
out=$2
mkdir -p "$out"
bench=$build/bench/dnngraph_bench_default_plan
export DNNGRAPH_BENCH_CACHE=${DNNGRAPH_BENCH_CACHE:-/tmp/dnngraph_default_plan_cache}
mkdir -p "$DNNGRAPH_BENCH_CACHE"
workloads=$(sed -n "/^void gpu_workloads/,/^}/p" "$root/bench/default_plan.cpp" | grep -oE "h, \"[A-Za-z0-9_]+\"" | cut -d\" -f2)
# DEFAULT_PLAN_ONLY=S[,S...]: only the workloads whose names contain one of these substrings.
only=${DEFAULT_PLAN_ONLY:-}
# A part ending in '$' names one workload whole, as the bench's --only reads it.
[[ -n $only ]] && workloads=$(echo "$workloads" | grep -E "$(echo "$only" | sed -E 's/(^|,)([A-Za-z0-9_]+)\$/\1^\2$/g; s/,/|/g')")
only_args=(); [[ -n $only ]] && only_args=(--only "$only")
echo "==== compile own candidates in parallel ($SECONDS s)"
for w in $workloads; do "$bench" --device cuda --only "$w\$" --build-only >"$out/build_$w.log" 2>&1 & done
wait
cat "$out"/build_*.log >"$out/build.log"; rm -f "$out"/build_*.log
grep ERROR "$out/build.log" | head -20
echo "==== pass 1 ($SECONDS s)"
"$bench" --device cuda "${only_args[@]}" >"$out/pass1.txt" 2>&1
grep -E "^(ROW|ERROR|NOTE)" "$out/pass1.txt" | cut -c1-200
if [[ "${3:-}" != "--no-calibrate" ]]; then
  python3 "$root/bench/calibrate.py" "$out/pass1.txt" --table "$root/src/planning/calibration_table.inc" --write | tail -40
  cp "$root/src/planning/calibration_table.inc" "$out/"
  cmake --build "$build" --target dnngraph_bench_default_plan >"$out/rebuild.log" 2>&1 || tail -20 "$out/rebuild.log"
  echo "==== pass 2, calibrated ($SECONDS s)"
  "$bench" --device cuda "${only_args[@]}" >"$out/pass2.txt" 2>&1
  last=$out/pass2.txt
else
  last=$out/pass1.txt
fi
python3 "$root/bench/calibrate.py" "$last" --table /dev/null | sed -n '/^|/p;/^worst/p'
echo "==== PyTorch beside ($SECONDS s)"
PYTHONUNBUFFERED=1 python3 "$root/bench/gpu/default_plan_torch.py" "$last" --out "$out/default_plan.json"
echo "==== done ($SECONDS s)"
