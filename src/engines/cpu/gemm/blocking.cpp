// The GEMM engines' cache blocking from this CPU's cache sizes (driver.hpp).
#include <algorithm>

#include "engines/cpu/cpu_features.hpp"
#include "engines/cpu/gemm/driver.hpp"
#include "engines/cpu/gemm/microkernel.hpp"

namespace dnngraph::cpu::gemm {
namespace {

int64_t round_up(int64_t x, int64_t m) { return (x + m - 1) / m * m; }
int64_t ceil_div(int64_t x, int64_t m) { return (x + m - 1) / m; }

}  // namespace

Blocking default_blocking(const KernelSet& ks) {
  const CpuFeatures& f = cpu_features();
  Blocking b;
  // Two thirds of L1 for the B panel, the rest for the A micro-panel and C streaming through:
  // sgemm 1024 and 2048 ran 4-5% faster than with half (Intel, AVX-512, 48 KB L1: kc 256 against
  // 192, in-process A/B, docs/perf.md 2026-12-06); ResNet-50's conv layers within 1-3% either way.
  b.kc = std::clamp<int64_t>(f.l1d_bytes * 2 / 3 / (ks.nr * 4), 64, 512) / 8 * 8;
  b.mc = std::clamp<int64_t>(f.l2_bytes / 4 / (b.kc * 4), 4 * ks.mr, 480) / ks.mr * ks.mr;
  b.nc = std::max<int64_t>(ks.nr, 512 / ks.nr * ks.nr);
  return b;
}

Blocking matmul_blocking(const KernelSet& ks, int64_t K) {
  // A matmul packs A again for every K block and adds every block after the first into C: fewer,
  // deeper blocks (a B panel of up to 96 KB on a 48 KB L1, streamed from L2 while the 12-row A
  // panel stays in L1) ran 5-8% faster on an encoder's 128 x 768 x {768, 2304, 3072} and 512 x 768
  // x {768, 3072}, 2048^3 10% (Intel AVX-512, 2026-12-06, docs/perf.md); the convolutions, whose
  // A is read in place, keep default_blocking (ResNet-50 1-2% slower with deeper blocks).
  const CpuFeatures& f = cpu_features();
  Blocking b = default_blocking(ks);
  const int64_t cap = std::max<int64_t>(b.kc, f.l1d_bytes * 2 / (ks.nr * 4) / 8 * 8);
  const int64_t blocks = ceil_div(std::max<int64_t>(K, 1), cap);
  b.kc = round_up(ceil_div(std::max<int64_t>(K, 1), blocks), 8);
  b.mc = std::clamp<int64_t>(f.l2_bytes / 4 / (b.kc * 4), 4 * ks.mr, 480) / ks.mr * ks.mr;
  return b;
}

}  // namespace dnngraph::cpu::gemm
