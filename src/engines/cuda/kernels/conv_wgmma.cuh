// Convolution forward as an implicit GEMM on the Hopper core (gemm_wgmma.cuh, sm_90a): the same
// consumer warpgroups and epilogue as the matmul; a producer warpgroup whose 128 threads gather
// the activation tile with cp.async (im2col addressing, zero-filled padding) straight into the
// 128-byte-swizzled K-major layout wgmma reads, while thread 0 loads the filter tile with TMA.
// Each producer thread's gathers arrive on the stage's mbarrier when they land
// (cp.async.mbarrier.arrive.noinc), so the full barrier expects 128 + 1 arrivals.
#pragma once
#include "conv_implicit_gemm.cuh"
#include "gemm_wgmma.cuh"

namespace dg {

__device__ __forceinline__ void cp_async_mbar_arrive(u32 bar) {
  asm volatile("cp.async.mbarrier.arrive.noinc.shared::cta.b64 [%0];\n" ::"r"(bar) : "memory");
}

// Rows (t >> 3) + 16 u of every 128-pixel tile, chunk t & 7 (8 channels) of every 64-wide k step.
template <int BN, int STAGES>
__device__ __forceinline__ void conv_produce(const ConvParams& P, const TmaDesc* mw, u32 base) {
  typedef WgmmaSmem<BN, STAGES> S;
  const int t = (int)threadIdx.x;  // 0..127
  const int jc = t & 7;
  const u16* x = static_cast<const u16*>(P.x);
  const i64 tiles = (i64)P.tiles_m * P.tiles_n;
  const int ktiles = (int)((P.K + S::BK - 1) / S::BK);
  int s = 0;
  u32 phase = 0;
  for (i64 tile = blockIdx.x; tile < tiles; tile += gridDim.x) {
    i64 b;
    int tm, tn;
    tile_coords(tile, P.tiles_m, P.tiles_n, b, tm, tn);
    i64 base_off[8];
    int d0[8], h0[8], w0[8];
#pragma unroll
    for (int u = 0; u < 8; ++u) {
      const i64 m = (i64)tm * S::BM + (t >> 3) + 16 * u;
      i64 q = m;
      const int qq = (int)(q % P.out[2]);
      q /= P.out[2];
      const int pp = (int)(q % P.out[1]);
      q /= P.out[1];
      const int oo = (int)(q % P.out[0]);
      base_off[u] = (q / P.out[0]) * P.x_stride[0];
      d0[u] = m < P.M ? oo * P.stride[0] - P.pad[0] : -(1 << 30);  // rows past M read nothing
      h0[u] = pp * P.stride[1] - P.pad[1];
      w0[u] = qq * P.stride[2] - P.pad[2];
    }
    for (int kt = 0; kt < ktiles; ++kt) {
      const u32 full = base + S::BARRIERS + 8 * s, empty = full + 8 * STAGES;
      mbar_wait(empty, phase ^ 1);
      const u32 a_dst = base + s * S::STAGE_BYTES, b_dst = a_dst + S::A_BYTES;
      if (t == 0) {
        mbar_expect_tx(full, S::B_BYTES);
        tma_load_3d(b_dst, mw, full, kt * S::BK, tn * BN, 0);
      }
      const i64 k = (i64)kt * S::BK + jc * 8;
      const bool kval = k < P.K;
      const int c = (int)(k % P.C);
      int tap = (int)(k / P.C);
      const int fs = tap % P.filt[2];
      tap /= P.filt[2];
      const int fr = tap % P.filt[1];
      const int ft = tap / P.filt[1];
#pragma unroll
      for (int u = 0; u < 8; ++u) {
        const int row = (t >> 3) + 16 * u;
        const int d = d0[u] + ft * P.dil[0], h = h0[u] + fr * P.dil[1], w = w0[u] + fs * P.dil[2];
        const bool ok = kval && (unsigned)d < (unsigned)P.in[0] && (unsigned)h < (unsigned)P.in[1] &&
                        (unsigned)w < (unsigned)P.in[2];
        const u16* src = x + base_off[u] + d * P.x_stride[1] + h * P.x_stride[2] + w * P.x_stride[3] + c;
        cp_async16(a_dst + row * 128 + ((jc ^ (row & 7)) << 4), ok ? (const void*)src : (const void*)x, ok ? 16 : 0);
      }
      cp_async_mbar_arrive(full);
      if (++s == STAGES) {
        s = 0;
        phase ^= 1;
      }
    }
  }
  asm volatile("cp.async.wait_all;\n" ::: "memory");  // no gather in flight when the thread exits
}

// Register split between the producer and the two consumer warpgroups (P + 2 C <= 504).
template <int BN> struct ConvRegs;
template <> struct ConvRegs<128> { static constexpr int P = 152, C = 176; };
template <> struct ConvRegs<256> { static constexpr int P = 88, C = 208; };

template <int DT, int BN, int STAGES, class Ep>
__device__ __forceinline__ void conv_fprop_wgmma(const ConvParams& P, const PointwiseParams& p, const TmaDesc* mw) {
  typedef WgmmaSmem<BN, STAGES> S;
  extern __shared__ __align__(1024) char smem_raw[];
  const u32 base = (smem_u32(smem_raw) + 1023u) & ~1023u;
  const int wg = (int)threadIdx.x / 128;
  float red[Ep::kFull > 0 ? Ep::kFull : 1];
  Ep::init_full(red);
  if (threadIdx.x == 0) {
    for (int s = 0; s < STAGES; ++s) {
      mbar_init(base + S::BARRIERS + 8 * s, 129);               // full: 128 gathers + the TMA's expect_tx
      mbar_init(base + S::BARRIERS + 8 * (STAGES + s), 256);    // empty: every consumer thread
    }
    asm volatile("fence.mbarrier_init.release.cluster;\n" ::: "memory");
    asm volatile("prefetch.tensormap [%0];\n" ::"l"(mw) : "memory");
  }
  __syncthreads();
  if (wg == 0) {
    asm volatile("setmaxnreg.dec.sync.aligned.u32 %0;\n" ::"n"(ConvRegs<BN>::P));
    conv_produce<BN, STAGES>(P, mw, base);
  } else {
    asm volatile("setmaxnreg.inc.sync.aligned.u32 %0;\n" ::"n"(ConvRegs<BN>::C));
    const ConsumerShape sh{(i64)P.tiles_m * P.tiles_n, P.tiles_m, P.tiles_n, (int)((P.K + S::BK - 1) / S::BK),
                           P.M, P.N, P.epi_vec, (const GemmParams*)0};
    wgmma_consume<DT, BN, STAGES, true, true, true, false, Ep>(sh, p, base, smem_raw + (base - smem_u32(smem_raw)),
                                                               wg - 1, red);
  }
  Ep::finish_full(p, red);
}

}  // namespace dg
