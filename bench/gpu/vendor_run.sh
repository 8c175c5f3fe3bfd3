#!/usr/bin/env bash
# One GPU run for the vendor engines (cudnn, cublaslt): their GPU tests (every vendor plan against
# ref) and dnngraph_vendor_bench (own and vendor plans side by side, host cost of a launch), in a
# time budget.
#
#   bash bench/gpu/vendor_run.sh OUT_DIR [BIN_DIR] [SECONDS]
#
# BIN_DIR holds vendor_tests (tests/engines/test_{cudnn,cudnn_gpu,cudnn_sdpa,cublaslt}.cpp with gtest_main) and
# dnngraph_vendor_bench, built elsewhere for x86-64 with -static-libstdc++. When they do not run
# here (another glibc), both are built here, the dependencies coming from DNNGRAPH_DEPS (a folder
# made by bench/gpu/carry_deps.sh), as bench/gpu.sh does.
set -uo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
out=${1:-/tmp/vendor_run}
bin=${2:-$root/.vendor_gpu}
budget=${3:-230}
mkdir -p "$out"
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader 2>&1 | head -2

build_here() {
  local build=/tmp/vendor_build deps prefix jobs
  jobs=$(nproc)
  deps=$(cd "${DNNGRAPH_DEPS:?DNNGRAPH_DEPS must name the carried dependencies}" && pwd)
  prefix=$build/deps
  mkdir -p "$prefix/lib/pkgconfig" "$prefix/include"
  cp "$deps"/src/xxhash/*.h "$prefix/include/"
  printf '#define XXH_IMPLEMENTATION\n#define XXH_STATIC_LINKING_ONLY\n#include "xxhash.h"\n' >"$prefix/xxhash.c"
  cc -O2 -fPIC -I"$prefix/include" -c "$prefix/xxhash.c" -o "$prefix/xxhash.o" && ar rcs "$prefix/lib/libxxhash.a" "$prefix/xxhash.o"
  printf 'prefix=%s\nincludedir=${prefix}/include\nlibdir=${prefix}/lib\nName: xxhash\nDescription: xxHash\nVersion: 0.8.1\nLibs: -L${libdir} -lxxhash\nCflags: -I${includedir}\n' \
    "$prefix" >"$prefix/lib/pkgconfig/libxxhash.pc"
  export PKG_CONFIG_PATH="$prefix/lib/pkgconfig"
  local pc=()
  command -v pkg-config >/dev/null || { export LD_LIBRARY_PATH="$deps/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"; pc=(-DPKG_CONFIG_EXECUTABLE="$deps/bin/pkg-config"); }
  (cmake -S "$deps/src/googletest" -B "$build/googletest" -G Ninja -DCMAKE_BUILD_TYPE=Release -DCMAKE_INSTALL_PREFIX="$prefix" \
     -DCMAKE_INSTALL_LIBDIR=lib -DBUILD_GMOCK=OFF -DCMAKE_POLICY_VERSION_MINIMUM=3.5 >"$out/gtest.log" 2>&1 &&
   cmake --build "$build/googletest" -j "$jobs" >>"$out/gtest.log" 2>&1 && cmake --install "$build/googletest" >>"$out/gtest.log" 2>&1) &
  cmake -S "$root" -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release -DDNNGRAPH_BUILD_TESTS=OFF -DDNNGRAPH_BUILD_TOOLS=OFF \
    -DDNNGRAPH_BUILD_BENCH=OFF -DDNNGRAPH_BUILD_PYTHON=OFF -DCMAKE_PREFIX_PATH="$deps;$prefix" "${pc[@]}" >"$out/configure.log" 2>&1 &&
    cmake --build "$build" --target dnngraph -j "$jobs" >"$out/build.log" 2>&1 || { tail -30 "$out/configure.log" "$out/build.log"; return 1; }
  wait
  local flags=(-std=c++20 -O2 -I"$root/include" -I"$root/src" -I"$root/tests" -I"$prefix/include")
  c++ "${flags[@]}" "$root/tests/engines/test_cudnn.cpp" "$root/tests/engines/test_cudnn_gpu.cpp" "$root/tests/engines/test_cudnn_sdpa.cpp" \
    "$root/tests/engines/test_cublaslt.cpp" "$build/libdnngraph.a" \
    "$prefix/lib/libgtest_main.a" "$prefix/lib/libgtest.a" "$prefix/lib/libxxhash.a" -ldl -pthread -o "$build/vendor_tests" &
  c++ "${flags[@]}" "$root/bench/gpu/vendor_bench.cpp" "$build/libdnngraph.a" "$prefix/lib/libxxhash.a" -ldl -pthread \
    -o "$build/dnngraph_vendor_bench" &
  wait
  bin=$build
}

# BIN_DIR/dyn may hold a build against the shared libstdc++ (older glibc symbols) as a second choice.
runs() { "$1/vendor_tests" --gtest_list_tests >/dev/null 2>&1 && "$1/dnngraph_vendor_bench" --only none >/dev/null 2>&1; }
if runs "$bin"; then :
elif runs "$bin/dyn"; then bin=$bin/dyn
else
  echo "==== the carried binaries do not run here: $("$bin/vendor_tests" --gtest_list_tests 2>&1 | head -1); building ($SECONDS s)"
  build_here || { echo "build failed"; exit 1; }
fi
echo "binaries: $bin"

echo "==== libraries found ($SECONDS s)"
"$bin/dnngraph_vendor_bench" --only none 2>&1 | head -30 | tee "$out/libraries.log"
if grep -q "cuDNN not found" "$out/libraries.log"; then
  site=$(python3 -c 'import site; print(site.getsitepackages()[0])' 2>/dev/null)
  echo "cuDNN was not found by the default search; retrying with DNNGRAPH_PYTHON_SITE=$site"
  export DNNGRAPH_PYTHON_SITE=$site
fi

left=$((budget - SECONDS))
echo "==== GPU tests, ${left}s left ($SECONDS s)"
DNNGRAPH_REQUIRE_GPU=1 timeout $((left * 45 / 100)) "$bin/vendor_tests" \
  --gtest_filter='VendorLibrary*:CudnnGpu*:CudnnSdpa*:CublasLtGpu*' >"$out/tests.log" 2>&1
echo "tests exit code $?"
grep -E "^\[ +(OK|FAILED|SKIPPED) +\]" "$out/tests.log" | sed 's/ (.*//' | sort | uniq -c
grep -B1 -A8 "Failure$" "$out/tests.log" | cut -c1-400 | head -70

left=$((budget - SECONDS))
echo "==== benchmark, ${left}s left ($SECONDS s)"
# DNNGRAPH_VENDOR_BENCH_ARGS: more arguments for the benchmark (e.g. --vendor 10 --only sdpa).
timeout $((left - 5)) "$bin/dnngraph_vendor_bench" --budget $((left - 25)) ${DNNGRAPH_VENDOR_BENCH_ARGS:-} >"$out/bench.log" 2>&1
echo "bench exit code $?"
grep -v "^PLAN" "$out/bench.log" | cut -c1-600
for w in $(grep "^PLAN" "$out/bench.log" | awk '{print $2}' | sort -u); do
  echo "fastest plans of $w:"
  grep "^PLAN $w " "$out/bench.log" | sort -k3 -g | head -4 | cut -c1-200
done
echo "==== done ($SECONDS s)"
