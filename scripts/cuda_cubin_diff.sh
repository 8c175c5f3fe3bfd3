#!/usr/bin/env bash
# Compares the CUDA kernels two builds compile, cubin by cubin: for a change that only restructures
# kernel source (src/engines/cuda/kernels/*.cuh) or the host code that generates it, every cubin
# must stay byte-for-byte the same.
#
#   scripts/cuda_cubin_diff.sh BEFORE_BUILD AFTER_BUILD [WORK_DIR]
#
# Each build's NVRTC compile tests (no GPU needed) run through a pass-through NVRTC that writes
# every program's source and cubin (named by the source's hash and the architecture); a file that
# instantiates every wgmma wrapper (wgmma_tile, wgmma_ss, wgmma_rs for each type and width) is
# compiled against each build's own kernels folder as well. Cubins of the same name are compared;
# where they differ and cuobjdump is on PATH (the nvidia-cuda-cuobjdump and nvidia-cuda-nvdisasm
# wheels carry it), it says whether the machine code (SASS) is the same and prints the HGMMA,
# UTMALDG and HMMA counts. Exits 1 on any difference.
set -euo pipefail

before=$(realpath "$1")
after=$(realpath "$2")
work=${3:-$(mktemp -d /tmp/cuda_cubin_diff.XXXXXX)}
mkdir -p "$work"
nvrtc=${DG_REAL_NVRTC:-$(ls /usr/local/cuda/lib64/libnvrtc.so.[0-9]* 2>/dev/null | head -1)}
[ -n "$nvrtc" ] || { echo "no libnvrtc.so found: set DG_REAL_NVRTC"; exit 2; }

# ---- the pass-through NVRTC
cat >"$work/shim.c" <<'EOF'
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
typedef int R;
typedef void* P;
static void* lib;
static void* sym(const char* n) {
  if (!lib) lib = dlopen(getenv("DG_REAL_NVRTC"), RTLD_NOW | RTLD_LOCAL);
  return lib ? dlsym(lib, n) : NULL;
}
#define FWD(ret, name, params, args) \
  ret name params {                  \
    static ret(*f) params;           \
    if (!f) f = sym(#name);          \
    return f args;                   \
  }
FWD(R, nvrtcVersion, (int* a, int* b), (a, b))
FWD(const char*, nvrtcGetErrorString, (R r), (r))
FWD(R, nvrtcGetProgramLogSize, (P p, size_t* s), (p, s))
FWD(R, nvrtcGetProgramLog, (P p, char* s), (p, s))
FWD(R, nvrtcGetCUBINSize, (P p, size_t* s), (p, s))
FWD(R, nvrtcGetNumSupportedArchs, (int* n), (n))
FWD(R, nvrtcGetSupportedArchs, (int* a), (a))
#define MAXP 256
static struct { P prog; char* src; char arch[64]; } progs[MAXP];
static int slot(P p) {
  for (int i = 0; i < MAXP; ++i)
    if (progs[i].prog == p) return i;
  return -1;
}
R nvrtcCreateProgram(P* prog, const char* src, const char* name, int nh, const char* const* h, const char* const* hn) {
  static R (*f)(P*, const char*, const char*, int, const char* const*, const char* const*);
  if (!f) f = sym("nvrtcCreateProgram");
  R r = f(prog, src, name, nh, h, hn);
  int i = r == 0 ? slot(NULL) : -1;
  if (i >= 0) progs[i].prog = *prog, progs[i].src = strdup(src), progs[i].arch[0] = 0;
  return r;
}
R nvrtcDestroyProgram(P* p) {
  static R (*f)(P*);
  if (!f) f = sym("nvrtcDestroyProgram");
  int i = slot(*p);
  if (i >= 0) free(progs[i].src), progs[i].prog = NULL;
  return f(p);
}
R nvrtcCompileProgram(P p, int n, const char* const* o) {
  static R (*f)(P, int, const char* const*);
  if (!f) f = sym("nvrtcCompileProgram");
  int i = slot(p);
  for (int k = 0; i >= 0 && k < n; ++k)
    if (!strncmp(o[k], "--gpu-architecture=", 19)) snprintf(progs[i].arch, sizeof progs[i].arch, "%s", o[k] + 19);
  return f(p, n, o);
}
R nvrtcGetCUBIN(P p, char* buf) {
  static R (*f)(P, char*);
  if (!f) f = sym("nvrtcGetCUBIN");
  R r = f(p, buf);
  int i = slot(p);
  const char* dir = getenv("DG_NVRTC_DUMP");
  if (r != 0 || i < 0 || !dir) return r;
  size_t size = 0;
  nvrtcGetCUBINSize(p, &size);
  uint64_t h = 1469598103934665603ull;
  for (const char* c = progs[i].src; *c; ++c) h = (h ^ (unsigned char)*c) * 1099511628211ull;
  char path[512];
  snprintf(path, sizeof path, "%s/%016llx.%s.cubin", dir, (unsigned long long)h, progs[i].arch);
  FILE* out = fopen(path, "wb");
  if (out) fwrite(buf, 1, size, out), fclose(out);
  snprintf(path, sizeof path, "%s/%016llx.cu", dir, (unsigned long long)h);
  out = fopen(path, "wb");
  if (out) fputs(progs[i].src, out), fclose(out);
  return r;
}
EOF
mkdir -p "$work/shim"
cc -O1 -shared -fPIC -o "$work/shim/libnvrtc.so" "$work/shim.c" -ldl
for b in "$(dirname "$nvrtc")"/libnvrtc-builtins.so*; do ln -sf "$b" "$work/shim/"; done

# ---- every wgmma wrapper, instantiated once
python3 - "$work/wgmma_ops.cu" <<'EOF'
import sys
out = ['#include "sdpa_wgmma_ops.cuh"', "using namespace dg;"]
body = "{ float d[%d]; for (int i = 0; i < %d; ++i) d[i] = o[i]; %s; for (int i = 0; i < %d; ++i) o[i] = d[i]; }"
def kernel(name, args, n, call):
    out.append('extern "C" __global__ void %s(float* o, %s) %s' % (name, args, body % (n, n, call, n)))
for dt in ("DT_BFLOAT16", "DT_HALF", "DT_FLOAT"):
    for bn in (64, 128, 256):
        for ta, tb in ((0, 0), (0, 1), (1, 0), (1, 1)):
            if dt == "DT_FLOAT" and (ta or tb): continue
            b = lambda v: "true" if v else "false"
            kernel("ss_%s_%d_%d%d" % (dt, bn, ta, tb), "u64 da, u64 db, int s", bn // 2,
                   "wgmma_tile<%s, %d, %s, %s>(d, da, db, s)" % (dt, bn, b(ta), b(tb)))
for dt in ("DT_BFLOAT16", "DT_HALF"):
    for n in (64, 128):
        kernel("sdpa_ss_%s_%d" % (dt, n), "u64 da, u64 db, int s", n // 2, "wgmma_ss<%s, %d>(d, da, db, s)" % (dt, n))
    for n in (64, 128, 192, 256):
        kernel("sdpa_rs_%s_%d" % (dt, n), "const u32* a, u64 db, int s", n // 2,
               "u32 r[4] = {a[0], a[1], a[2], a[3]}; wgmma_rs<%s, %d>(d, r, db, s)" % (dt, n))
open(sys.argv[1], "w").write("\n".join(out) + "\n")
EOF
cat >"$work/nvrtc_cubin.py" <<'EOF'
import ctypes, sys
nv = ctypes.CDLL(sys.argv[5])
src, out, arch, inc = sys.argv[1:5]
prog = ctypes.c_void_p()
assert nv.nvrtcCreateProgram(ctypes.byref(prog), open(src, "rb").read(), b"wgmma_ops.cu", 0, None, None) == 0
opts = [b"--std=c++17", b"-DNDEBUG", b"--gpu-architecture=" + arch.encode(), b"-I" + inc.encode()]
r = nv.nvrtcCompileProgram(prog, len(opts), (ctypes.c_char_p * len(opts))(*opts))
n = ctypes.c_size_t()
nv.nvrtcGetProgramLogSize(prog, ctypes.byref(n))
log = ctypes.create_string_buffer(n.value)
nv.nvrtcGetProgramLog(prog, log)
if r != 0: sys.exit("wgmma_ops.cu does not compile:\n" + log.value.decode())
nv.nvrtcGetCUBINSize(prog, ctypes.byref(n))
buf = ctypes.create_string_buffer(n.value)
nv.nvrtcGetCUBIN(prog, buf)
open(out, "wb").write(buf.raw)
EOF

# ---- both builds
for side in before after; do
  build=${!side}
  dump="$work/$side"
  rm -rf "$dump" && mkdir -p "$dump"
  src=$(sed -n 's/^CMAKE_HOME_DIRECTORY:INTERNAL=//p' "$build/CMakeCache.txt")
  echo "$side: $build (sources $src)"
  export DNNGRAPH_NVRTC_PATH="$work/shim/libnvrtc.so" DG_REAL_NVRTC="$nvrtc" DG_NVRTC_DUMP="$dump"
  "$build/tests/dnngraph_engine_tests" --gtest_filter='Cuda*' >"$work/$side.engine.log" 2>&1 || echo "  engine tests failed (see $work/$side.engine.log)"
  "$build/tests/dnngraph_unit_tests" --gtest_filter='Nvrtc*' >"$work/$side.unit.log" 2>&1 || echo "  unit tests failed (see $work/$side.unit.log)"
  python3 "$work/nvrtc_cubin.py" "$work/wgmma_ops.cu" "$dump/wgmma_ops.sm_90a.cubin" sm_90a \
    "$src/src/engines/cuda/kernels" "$nvrtc"
  unset DNNGRAPH_NVRTC_PATH DG_NVRTC_DUMP
done

# ---- the comparison
status=0
same=0
counts() { cuobjdump -sass "$1" | awk '/HGMMA/ {h++} /UTMALDG/ {t++} / HMMA/ {m++} END {printf "HGMMA %d UTMALDG %d HMMA %d", h, t, m}'; }
# The machine code alone: every function's SASS, without the listing's headers.
sass() { cuobjdump -sass "$1" | grep -v -e '^\s*$' -e 'code for' -e 'Fatbin' -e 'arch = ' -e 'identifier' -e 'EF_CUDA'; }
for f in "$work"/before/*.cubin; do
  name=$(basename "$f")
  g="$work/after/$name"
  if [ ! -f "$g" ]; then
    echo "only before: $name (its source changed or it is no longer compiled)"
    status=1
  elif cmp -s "$f" "$g"; then
    same=$((same + 1))
  else
    status=1
    if ! command -v cuobjdump >/dev/null; then
      echo "differs: $name"
    elif cmp -s <(sass "$f") <(sass "$g"); then
      echo "differs: $name: the same SASS ($(counts "$g")); the ELF differs elsewhere (symbols, globals)"
    else
      echo "differs: $name: SASS differs; before: $(counts "$f"), after: $(counts "$g")"
    fi
  fi
done
for g in "$work"/after/*.cubin; do
  [ -f "$work/before/$(basename "$g")" ] || { echo "only after: $(basename "$g")"; status=1; }
done
if command -v cuobjdump >/dev/null; then
  echo "wgmma wrappers: before $(counts "$work/before/wgmma_ops.sm_90a.cubin"); after $(counts "$work/after/wgmma_ops.sm_90a.cubin")"
fi
echo "$same of $(ls "$work"/before/*.cubin | wc -l) cubins identical (work folder $work)"
exit $status
