#!/usr/bin/env bash
# GPU run of the GEMM / implicit-GEMM conv engines: their GPU tests, their benchmark beside
# PyTorch eager in the same run, and SASS evidence (HGMMA count) of the kernels it compiled.
#
#   bash bench/gpu/gemm_conv.sh BIN_DIR OUT_DIR
#
# BIN_DIR holds dnngraph_gemm_conv_bench and, unless SKIP_TESTS is set, a test binary with
# tests/engines/test_cuda_{gemm,conv}.cpp: gemm_conv_tests, or the build's tests/dnngraph_engine_tests.
# Kernels compile in parallel first (tests in shards, each benchmark workload on its own), then the
# benchmark is timed alone. bench/gpu.sh calls it with SKIP_TESTS=1 (its ctest run covers the tests).
# To carry prebuilt binaries to a machine without the build dependencies, link them statically:
#   c++ -std=c++20 -O2 -Iinclude -Isrc bench/gpu/gemm_conv.cpp build/libdnngraph.a -l:libxxhash.a -ldl -pthread \
#       -static-libstdc++ -static-libgcc -o BIN_DIR/dnngraph_gemm_conv_bench
set -uo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
bin=$(cd "$1" && pwd)
out=$2
mkdir -p "$out"
export GEMM_BENCH_CACHE=${GEMM_BENCH_CACHE:-/tmp/dnngraph_gemm_cache}
mkdir -p "$GEMM_BENCH_CACHE"
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader
echo "==== compile in parallel ($SECONDS s)"
shards=6
tests=$bin/gemm_conv_tests
[[ -x $tests ]] || tests=$bin/tests/dnngraph_engine_tests
[[ -n "${SKIP_TESTS:-}" || ! -x "$tests" ]] && shards=0
for i in $(seq 0 $((shards - 1))); do
  GTEST_TOTAL_SHARDS=$shards GTEST_SHARD_INDEX=$i "$tests" --gtest_filter='CudaGemm*:CudaConv*' \
    >"$out/tests_$i.log" 2>&1 &
done
for w in gemm_8192 gemm_8x2048 gemm_16x1024 conv_tutorial_n32 conv_tutorial_alone rn50_3x3_c64_56 rn50_3x3_c256 \
  rn50_3x3_n8 rn50_1x1 rn50_3x3_c128 rn50_3x3_c512 rn50_3x3_n1 depthwise; do
  "$bin/dnngraph_gemm_conv_bench" --only "$w" --build-only --plans "${PLANS:-2}" >"$out/build_$w.log" 2>&1 &
done
wait
echo "==== tests ($SECONDS s)"
cat "$out"/tests_*.log >"$out/tests.log" 2>/dev/null; rm -f "$out"/tests_*.log
grep -E "^\[ +(OK|FAILED|SKIPPED) +\] [A-Za-z]" "$out/tests.log" | sed 's/ (.*//' | sort | uniq -c
grep -A10 "Failure" "$out/tests.log" | head -60
cat "$out"/build_*.log >"$out/build.log" && rm -f "$out"/build_*.log
grep "ERROR" "$out/build.log" | head -20
echo "==== benchmark ($SECONDS s)"
[[ -n "${SKIP_BENCH:-}" ]] ||
PYTHONUNBUFFERED=1 python3 "$root/bench/gpu/gemm_conv_torch.py" --bench "$bin/dnngraph_gemm_conv_bench" \
  --plans "${PLANS:-2}" --out "$out/gemm_conv_results.json" 2>&1 | tee "$out/bench.log" | grep -v "^PLAN\|^RESULT" | tail -40
echo "==== SASS of the compiled kernels ($SECONDS s)"
cuobjdump=$(command -v cuobjdump || echo /usr/local/cuda/bin/cuobjdump)
python3 - "$GEMM_BENCH_CACHE" "$cuobjdump" <<'PY'
import glob, os, struct, subprocess, sys
for f in sorted(glob.glob(sys.argv[1] + "/*")):
    data = open(f, "rb").read()
    i = data.find(b"\x7fELF")
    if i < 0:
        continue
    phoff, shoff = struct.unpack_from("<QQ", data, i + 0x20)
    phentsize, phnum, shentsize, shnum = struct.unpack_from("<HHHH", data, i + 0x36)
    end = max(shoff + shentsize * shnum, phoff + phentsize * phnum)
    open("/tmp/k.cubin", "wb").write(data[i:i + end])
    proc = subprocess.run([sys.argv[2], "--dump-sass", "/tmp/k.cubin"], capture_output=True, text=True)
    sass = proc.stdout
    if not sass:
        print(os.path.basename(f)[:16], "cuobjdump:", proc.stderr.strip()[:200], "elf at", i, "size", len(data))
        continue
    names = sorted({l.split("Function : ")[1].strip() for l in sass.splitlines() if "Function : " in l})
    print(f"{os.path.basename(f)[:16]} {','.join(names)[:60]:<60} HGMMA={sass.count('HGMMA')} HMMA={sass.count('HMMA')} "
          f"LDSM={sass.count('LDSM')} UTMALDG={sass.count('UTMALDG')} LDL/STL={sass.count('LDL') + sass.count('STL')}")
PY
echo "==== done ($SECONDS s)"
grep -h "RESULT" "$out/bench.log"
