// The AMX-BF16 microkernel: a 32 x 32 fp32 C block as four 16 x 16 tiles, A as two 16-row tiles
// of equally spaced rows (packed by pack_a_bf16_rows, or a convolution's input pixels read in
// place), B as two 16-column halves of a bf16-pair panel (the pair
// layout is AMX's B layout); each 16-pair step is four TDPBF16PS (16 x 16 x 32 products each).
// K per segment must be a multiple of 16 pairs (the problem pads it with zeros), or of 8 for the
// 8-pair kernels (16-channel convolutions). Linux grants a
// process the tile data state on request (arch_prctl ARCH_REQ_XCOMP_PERM), asked once.
#include "engines/cpu/gemm/microkernel.hpp"
#include "engines/cpu/simd/target.hpp"

#if DNNGRAPH_SIMD_X86 && defined(__linux__)
#include <immintrin.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cstring>
#define DNNGRAPH_HAVE_AMX 1
#else
#define DNNGRAPH_HAVE_AMX 0
#endif

namespace dnngraph::cpu::gemm {
namespace {

#if DNNGRAPH_HAVE_AMX
constexpr int kRows = 32, kCols = 32;  // C block

// The LDTILECFG layout (palette 1): C tiles 16 rows of 64 bytes; A tiles 16 rows of KSTEP pairs;
// B tiles KSTEP rows of 64 bytes.
struct alignas(64) TileConfig {
  uint8_t palette = 1, start_row = 0;
  uint8_t reserved[14] = {};
  uint16_t colsb[16] = {};
  uint8_t rows[16] = {};
};

// The K step (pairs) whose tile configuration this thread has loaded, 0 for none: LDTILECFG was
// ~18% of the kernel's samples when loaded per call. Cleared before every run's tiles
// (begin_tiles), since other code on the thread (another library's AMX kernels) may load its own.
thread_local int t_config_step = 0;

void begin_amx_tiles() { t_config_step = 0; }

template <int KSTEP>
__attribute__((target("amx-tile,amx-bf16,avx512f"))) void load_config() {
  TileConfig cfg;
  for (int t = 0; t < 8; ++t) {
    const bool a = t == 4 || t == 5, b = t == 6 || t == 7;
    cfg.colsb[t] = a ? KSTEP * 4 : 64;
    cfg.rows[t] = b ? KSTEP : 16;
  }
  _tile_loadconfig(&cfg);
  t_config_step = KSTEP;
}

// HALVES 2: the 32 x 32 block; 1: its first 16 rows (C tiles 0 and 1, A tile 4), for short tiles.
// KSTEP pairs per tile product: 16 (every channel count that is a multiple of 32), or 8 (16
// channels a tap, where 16-pair steps would read past each pixel's channels).
template <int HALVES, int KSTEP>
__attribute__((target("amx-tile,amx-bf16,avx512f"))) void amx_kernel(int nseg, int64_t seg_len, const float* const* rows,
                                                                     const float* b, float* c, int64_t ldc,
                                                                     bool accumulate) {
  if (t_config_step != KSTEP) load_config<KSTEP>();
  const int64_t cs = ldc * 4;
  if (accumulate) {
    _tile_loadd(0, c, cs);
    _tile_loadd(1, c + 16, cs);
    if constexpr (HALVES == 2) {
      _tile_loadd(2, c + 16 * ldc, cs);
      _tile_loadd(3, c + 16 * ldc + 16, cs);
    }
  } else {
    _tile_zero(0);
    _tile_zero(1);
    if constexpr (HALVES == 2) {
      _tile_zero(2);
      _tile_zero(3);
    }
  }
  for (int s = 0; s < nseg; ++s) {
    // Each 16-row half is equally spaced rows: its first row and its stride (rows 1 - 0, 17 - 16).
    const float* const* r = rows + s * kRows;
    const float *lo = r[0], *hi = r[16];
    const int64_t ls = reinterpret_cast<intptr_t>(r[1]) - reinterpret_cast<intptr_t>(lo);
    const int64_t hs = reinterpret_cast<intptr_t>(r[17]) - reinterpret_cast<intptr_t>(hi);
    for (int64_t k = 0; k < seg_len; k += KSTEP) {
      _tile_loadd(4, lo + k, ls);
      _tile_loadd(6, b + k * kCols, kCols * 4);
      _tile_loadd(7, b + k * kCols + 16, kCols * 4);
      _tile_dpbf16ps(0, 4, 6);
      _tile_dpbf16ps(1, 4, 7);
      if constexpr (HALVES == 2) {
        _tile_loadd(5, hi + k, hs);
        _tile_dpbf16ps(2, 5, 6);
        _tile_dpbf16ps(3, 5, 7);
      }
    }
    b += seg_len * kCols;
  }
  _tile_stored(0, c, cs);
  _tile_stored(1, c + 16, cs);
  if constexpr (HALVES == 2) {
    _tile_stored(2, c + 16 * ldc, cs);
    _tile_stored(3, c + 16 * ldc + 16, cs);
  }
}

constexpr KernelSet kAmx{Isa::AVX512, kRows, kCols, amx_kernel<2, 16>, amx_kernel<2, 16>, begin_amx_tiles,
                         /*kernel_chain=*/nullptr, /*kernel_half=*/amx_kernel<1, 16>};
constexpr KernelSet kAmxStep8{Isa::AVX512, kRows, kCols, amx_kernel<2, 8>, amx_kernel<2, 8>, begin_amx_tiles,
                              /*kernel_chain=*/nullptr, /*kernel_half=*/amx_kernel<1, 8>};

bool tile_data_granted() {
  constexpr long kReqXcompPerm = 0x1023, kXfeatureTileData = 18;
  return syscall(SYS_arch_prctl, kReqXcompPerm, kXfeatureTileData) == 0;
}

bool amx_usable() {
  static const bool kUsable = cpu_features().amx_bf16 && tile_data_granted();
  return kUsable;
}
#endif

}  // namespace

const KernelSet* amx_bf16_kernels() {
#if DNNGRAPH_HAVE_AMX
  return amx_usable() ? &kAmx : nullptr;
#else
  return nullptr;
#endif
}

const KernelSet* amx_bf16_kernels_step8() {
#if DNNGRAPH_HAVE_AMX
  return amx_usable() ? &kAmxStep8 : nullptr;
#else
  return nullptr;
#endif
}

}  // namespace dnngraph::cpu::gemm
