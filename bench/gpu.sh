#!/usr/bin/env bash
# The one command to run on a GPU machine: configures and builds dnngraph (the CUDA engines are
# always built: CUDA is loaded at run time), runs every test (GPU tests included), runs the GPU
# benchmarks with PyTorch eager measured side by side in the same run, writes every figure to a
# results file and prints a short table last.
#
#   bash bench/gpu.sh
#
# Environment (all optional):
#   DNNGRAPH_BUILD_DIR   build folder (default: build-gpu in the repository)
#   DNNGRAPH_RESULTS     results file (default: <build>/gpu-results.json); the test log and the
#                        benchmark output are written beside it
#   DNNGRAPH_DEPS        a folder made by bench/gpu/carry_deps.sh, for machines that lack
#                        nlohmann-json, CLI11, googletest, xxHash or pkg-config
#   DNNGRAPH_CMAKE_ARGS  more arguments for the configure step
#   DNNGRAPH_BENCHES     which benchmark groups run (default: all of pointwise gemm_conv sdpa norm build_time)
#   DNNGRAPH_BUILD_TARGETS  build only these targets (default: all; the tests need all)
#   DNNGRAPH_SKIP_TESTS=1, DNNGRAPH_SKIP_BENCH=1
set -uo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
build=${DNNGRAPH_BUILD_DIR:-$root/build-gpu}
results=${DNNGRAPH_RESULTS:-$build/gpu-results.json}
logdir=$(dirname "$results")
jobs=$(nproc)
mkdir -p "$build" "$logdir"
step() { printf '\n==== %s (%ds)\n' "$*" "$SECONDS"; }
want_bench() { [[ -z "${DNNGRAPH_SKIP_BENCH:-}" && " ${DNNGRAPH_BENCHES:-pointwise gemm_conv sdpa norm build_time} " == *" $1 "* ]]; }

step "machine"
nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.max.sm,clocks.max.mem --format=csv,noheader 2>&1 | head -8
for tool in cmake ninja c++ nvcc python3 pkg-config; do
  printf '%-11s %s\n' "$tool" "$(command -v $tool >/dev/null && ($tool --version 2>&1 | grep -m1 -E '[0-9]+\.[0-9]+') || echo 'not found')"
done
python3 -c 'import torch; print("torch", torch.__version__, "cuda", torch.version.cuda, "gpu", torch.cuda.is_available())' 2>&1 | tail -1

# ---- dependencies the machine lacks, from DNNGRAPH_DEPS (sources are built here, with this compiler)
# The Python module is built where this Python has nanobind (the GPU image's does).
python_on=OFF; python3 -c 'import nanobind' 2>/dev/null && python_on=ON
cmake_args=(-DCMAKE_BUILD_TYPE=Release -DDNNGRAPH_BUILD_PYTHON=$python_on)
xxhash_libs=-lxxhash
if [[ -n "${DNNGRAPH_DEPS:-}" ]]; then
  step "dependencies from $DNNGRAPH_DEPS"
  deps=$(cd "$DNNGRAPH_DEPS" && pwd)
  prefix=$build/deps
  mkdir -p "$prefix/lib/pkgconfig" "$prefix/include"
  if [[ ! -f $prefix/lib/libxxhash.a ]]; then
    cp "$deps"/src/xxhash/*.h "$prefix/include/"
    printf '#define XXH_IMPLEMENTATION\n#define XXH_STATIC_LINKING_ONLY\n#include "xxhash.h"\n' >"$prefix/xxhash.c"
    cc -O2 -fPIC -I"$prefix/include" -c "$prefix/xxhash.c" -o "$prefix/xxhash.o" && ar rcs "$prefix/lib/libxxhash.a" "$prefix/xxhash.o"
  fi
  printf 'prefix=%s\nincludedir=${prefix}/include\nlibdir=${prefix}/lib\nName: xxhash\nDescription: xxHash\nVersion: 0.8.1\nLibs: -L${libdir} -lxxhash\nCflags: -I${includedir}\n' \
    "$prefix" >"$prefix/lib/pkgconfig/libxxhash.pc"
  if [[ ! -f $prefix/lib/cmake/GTest/GTestConfig.cmake ]]; then
    gen=(); command -v ninja >/dev/null && gen=(-G Ninja)
    cmake -S "$deps/src/googletest" -B "$build/googletest" "${gen[@]}" -DCMAKE_BUILD_TYPE=Release \
      -DCMAKE_INSTALL_PREFIX="$prefix" -DCMAKE_INSTALL_LIBDIR=lib -DBUILD_GMOCK=ON -DCMAKE_POLICY_VERSION_MINIMUM=3.5 >"$build/googletest.log" 2>&1 &&
      cmake --build "$build/googletest" -j "$jobs" >>"$build/googletest.log" 2>&1 &&
      cmake --install "$build/googletest" >>"$build/googletest.log" 2>&1 || { echo "googletest build failed:"; tail -20 "$build/googletest.log"; }
  fi
  export PKG_CONFIG_PATH="$prefix/lib/pkgconfig${PKG_CONFIG_PATH:+:$PKG_CONFIG_PATH}"
  if ! command -v pkg-config >/dev/null; then
    export LD_LIBRARY_PATH="$deps/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
    cmake_args+=(-DPKG_CONFIG_EXECUTABLE="$deps/bin/pkg-config")
  fi
  cmake_args+=(-DCMAKE_PREFIX_PATH="$deps;$prefix")
  xxhash_libs="$prefix/lib/libxxhash.a"
fi

step "configure"
gen=(); command -v ninja >/dev/null && gen=(-G Ninja)
# shellcheck disable=SC2206
[[ -n "${DNNGRAPH_CMAKE_ARGS:-}" ]] && cmake_args+=($DNNGRAPH_CMAKE_ARGS)
if ! cmake -S "$root" -B "$build" "${gen[@]}" "${cmake_args[@]}" >"$build/configure.log" 2>&1; then
  tail -30 "$build/configure.log"; echo "configure failed"; exit 1
fi

step "build"
# Keep going past a target that fails to compile: everything else still builds, its tests still run,
# and the failure is reported (ctest lists the tests of an unbuilt binary as failed).
keep_going=(-k 0); [[ ${#gen[@]} -eq 0 ]] && keep_going=(-k)
build_rc=0
# shellcheck disable=SC2086
if ! cmake --build "$build" -j "$jobs" ${DNNGRAPH_BUILD_TARGETS:+--target $DNNGRAPH_BUILD_TARGETS} -- "${keep_going[@]}" \
    >"$build/build.log" 2>&1; then
  build_rc=1
  grep -E -B2 -A12 'error|FAILED' "$build/build.log" | head -60; echo "BUILD FAILED for some targets (full log: $build/build.log)"
  [[ -f $build/libdnngraph.a ]] || exit 1
fi
# The GPU benchmark program, linked against the library just built.
bench="$build/dnngraph_gpu_bench"
c++ -std=c++20 -O2 -I"$root/include" -I"$root/src" "$root/bench/gpu/pointwise_bench.cpp" "$build/libdnngraph.a" \
  $xxhash_libs -ldl -pthread -o "$bench" || { echo "bench build failed"; exit 1; }
[[ -x $build/tools/dnngraph ]] && "$build/tools/dnngraph" info 2>&1 | head -40

tests_summary="tests: skipped"
if [[ -z "${DNNGRAPH_SKIP_TESTS:-}" ]]; then
  step "tests (ctest -j $jobs)"
  # With a GPU present, GPU tests that cannot use it fail instead of skipping.
  nvidia-smi -L >/dev/null 2>&1 && export DNNGRAPH_REQUIRE_GPU=1
  ctest --test-dir "$build" -j "$jobs" --timeout 300 --output-on-failure >"$logdir/ctest.log" 2>&1
  test_rc=$?
  grep -E '^[0-9]+% tests passed|Failed|\*\*\*|Total Test time' "$logdir/ctest.log" | tail -30
  tests_summary="tests: $(grep -E '^[0-9]+% tests passed' "$logdir/ctest.log" | tail -1) (GPU required: ${DNNGRAPH_REQUIRE_GPU:-no}; log $logdir/ctest.log)"
else
  test_rc=0
fi

python_summary="python: skipped (no nanobind for python3)"
if [[ -z "${DNNGRAPH_SKIP_TESTS:-}" && $python_on == ON ]]; then
  step "python: pytest and the tutorial scripts (on the GPU when PyTorch sees one)"
  export PYTHONPATH="$build/python${PYTHONPATH:+:$PYTHONPATH}"
  # The tutorial scripts run once, below, at full size (pytest's test_examples would run them again).
  python3 -m pytest -q -p no:cacheprovider -k "not test_example" "$root/tests/python" >"$logdir/pytest.log" 2>&1
  py_rc=$?
  grep -E '^(FAILED|ERROR) ' "$logdir/pytest.log" | head -20
  tail -1 "$logdir/pytest.log"
  : >"$logdir/python-examples.log"
  for script in "$root"/examples/python/[a-z]*.py; do
    name=$(basename "$script")
    if (cd "$root/examples/python" && python3 "$script") >"$logdir/example-$name.log" 2>&1; then verdict=ok; else verdict=FAILED; py_rc=1; fi
    { echo "-- $name: $verdict"; tail -12 "$logdir/example-$name.log"; } | tee -a "$logdir/python-examples.log"
  done
  python_summary="python: $(grep -E '(passed|failed)' "$logdir/pytest.log" | tail -1) (log $logdir/pytest.log)"
  [[ $py_rc -ne 0 ]] && test_rc=1
fi

bench_rc=0
if want_bench pointwise; then
  step "benchmarks: dnngraph and PyTorch eager, same run"
  PYTHONUNBUFFERED=1 python3 "$root/bench/gpu/compare.py" --bench "$bench" --out "$results" 2>&1 | tee "$logdir/bench.log"
  bench_rc=${PIPESTATUS[0]}
fi
want_bench gemm_conv && { step "GEMM / conv engines vs PyTorch"; c++ -std=c++20 -O2 -I"$root/include" -I"$root/src" "$root/bench/gpu/gemm_conv.cpp" "$build/libdnngraph.a" $xxhash_libs -ldl -pthread -o "$build/dnngraph_gemm_conv_bench" && SKIP_TESTS=1 bash "$root/bench/gpu/gemm_conv.sh" "$build" "$logdir/gemm_conv" || bench_rc=1; }
want_bench sdpa && { step "attention: cuda_sdpa_flash vs PyTorch SDPA (flash, cuDNN)"; DNNGRAPH_SKIP_TESTS=1 bash "$root/bench/gpu/sdpa.sh" "$build" "$xxhash_libs" 2>&1 | tee "$logdir/sdpa.log" || bench_rc=1; }
if want_bench norm; then
  # cuda_norm_rowwise (issue #18) and PyTorch's layer_norm / rms_norm, each beside a device copy of
  # the same bytes timed in the same process.
  step "norms: cuda_norm_rowwise vs PyTorch (bench/gpu/norm_bench.cpp, norm_torch.py)"
  { "$build/bench/dnngraph_bench_gpu_norm_bench"; dg_rc=$?
    (cd "$root/bench/gpu" && python3 norm_torch.py); torch_rc=$?; [[ $dg_rc -eq 0 && $torch_rc -eq 0 ]]
  } 2>&1 | tee "$logdir/norm.log"
  [[ ${PIPESTATUS[0]} -ne 0 ]] && bench_rc=1
fi
if want_bench build_time; then
  # Fresh processes: cold (every kernel by NVRTC), with the library's AOT kernels, then
  # build_plans(ALL) of issue #16's matmul epilogue on one build thread and on every core.
  step "plan build time (bench/plan_build_time.cpp)"
  pbt="$build/bench/dnngraph_bench_plan_build_time"
  { echo "-- cold: DNNGRAPH_AOT_KERNELS=0"; DNNGRAPH_AOT_KERNELS=0 "$pbt" --gpu
    echo "-- with the AOT kernels"; "$pbt" --gpu
    echo "-- 1000-op chain, cold"; DNNGRAPH_AOT_KERNELS=0 "$pbt" --gpu --no-files --chain 1000
    echo "-- ALL, cold, 1 build thread"; DNNGRAPH_AOT_KERNELS=0 DNNGRAPH_BUILD_THREADS=1 "$pbt" --gpu --all --no-files --matmul 8,2048,2048,2048
    echo "-- ALL, cold, $(nproc) build threads"; DNNGRAPH_AOT_KERNELS=0 "$pbt" --gpu --all --no-files --matmul 8,2048,2048,2048
  } 2>&1 | tee "$logdir/build_time.log"
  [[ ${PIPESTATUS[0]} -ne 0 ]] && bench_rc=1
fi
step "done"
echo "$tests_summary"
echo "$python_summary"
echo "results: $results"
if [[ -f $results ]]; then python3 - "$results" <<'EOF'
import json, sys
r = json.load(open(sys.argv[1]))
print(f"\n{r['info']['gpu']}  torch {r['info']['torch']}  copy ceiling {r['copy_ceiling_gbps']:.0f} GB/s")
print(f"{'case':<18}{'dnngraph ms':>12}{'GB/s':>7}{'%copy':>7}{'torch ms':>10}{'torch/dg':>9}")
for row in r["rows"]:
    if "dnngraph_ms" in row:
        print(f"{row['case']:<18}{row['dnngraph_ms']:>12.3f}{row['dnngraph_gbps']:>7.0f}{row['pct_of_copy']:>6.0f}%"
              f"{row['torch_ms']:>10.3f}{row['speedup_vs_torch']:>8.2f}x")
EOF
fi
[[ $build_rc -ne 0 ]] && echo "BUILD FAILED for some targets: see $build/build.log"
[[ $build_rc -eq 0 && $test_rc -eq 0 && $bench_rc -eq 0 ]]
