// wgmma.mma_async m64nNk16 wrappers for attention (sm_90a), fp32 accumulators:
//   wgmma_ss<DT, N>: D (=|+=) A * B, A and B K-major in shared memory (S = Q K^T): the GEMM's
//                    wgmma_tile (gemm_wgmma.cuh);
//   wgmma_rs<DT, N>: D (=|+=) A * B, A in registers (P, four 32-bit registers per thread), B N-major in
//                    shared memory (O += P V); its wrappers are written by the macro below over the
//                    operand tables of gemm_wgmma_ops.cuh.
#pragma once
#include "gemm_wgmma.cuh"

namespace dg {

// D (=|+=) A (registers) * B (a shared-memory descriptor), by operand type DT and width N.
template <int DT, int N>
struct WgmmaRs;

// TYPE "bf16" or "f16": A's four registers, B's descriptor, then scale_d.
#define DG_WGMMA_RS(DT, TYPE, N, NACC) DG_WGMMA_CALL(DG_WGMMA_RS_, DT, TYPE, N, NACC, DG_WGMMA_AFTER_##NACC)
#define DG_WGMMA_RS_(DT, TYPE, N, NACC, A0, A1, A2, A3, DB, SCALE)                                                     \
  template <>                                                                                                          \
  struct WgmmaRs<DT, N> {                                                                                              \
    __device__ __forceinline__ static void mma(float (&d)[NACC], const u32 (&a)[4], u64 db, int scale_d) {             \
      asm volatile("{\n.reg .pred p;\nsetp.ne.b32 p, " SCALE ", 0;\n"                                                  \
                   "wgmma.mma_async.sync.aligned.m64n" #N "k16.f32." TYPE "." TYPE " {" DG_WGMMA_ACC_##NACC "}, {" A0   \
                   ", " A1 ", " A2 ", " A3 "}, " DB ", p, 1, 1, 1;\n}\n"                                               \
                   : DG_WGMMA_D_##NACC                                                                                 \
                   : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "l"(db), "r"(scale_d));                               \
    }                                                                                                                  \
  };

DG_WGMMA_RS(DT_BFLOAT16, "bf16", 64, 32)
DG_WGMMA_RS(DT_HALF, "f16", 64, 32)
DG_WGMMA_RS(DT_BFLOAT16, "bf16", 128, 64)
DG_WGMMA_RS(DT_HALF, "f16", 128, 64)
DG_WGMMA_RS(DT_BFLOAT16, "bf16", 192, 96)
DG_WGMMA_RS(DT_HALF, "f16", 192, 96)
DG_WGMMA_RS(DT_BFLOAT16, "bf16", 256, 128)
DG_WGMMA_RS(DT_HALF, "f16", 256, 128)

template <int DT, int N>
__device__ __forceinline__ void wgmma_ss(float (&d)[N / 2], u64 da, u64 db, int scale_d) {
  static_assert(N == 64 || N == 128, "S tiles are 64 or 128 keys wide");
  wgmma_tile<DT, N, false, false>(d, da, db, scale_d);
}

template <int DT, int N>
__device__ __forceinline__ void wgmma_rs(float (&d)[N / 2], const u32 (&a)[4], u64 db, int scale_d) {
  static_assert(N == 64 || N == 128 || N == 192 || N == 256, "head dims are padded to 64, 128, 192 or 256");
  WgmmaRs<DT, N>::mma(d, a, db, scale_d);
}

}  // namespace dg
