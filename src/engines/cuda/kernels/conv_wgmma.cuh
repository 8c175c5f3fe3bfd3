// Convolution forward as an implicit GEMM on the Hopper core (gemm_wgmma.cuh, sm_90a): the same
// consumer warpgroups and epilogue as the matmul; a producer warpgroup whose 128 threads gather
// the activation tile with cp.async (im2col addressing, zero-filled padding) straight into the
// 128-byte-swizzled K-major layout wgmma reads, while thread 0 loads the filter tile with TMA.
// Each producer thread's gathers arrive on the stage's mbarrier when they land
// (cp.async.mbarrier.arrive.noinc), so the full barrier expects 128 + 1 arrivals. SPLIT (knob
// split_k > 1): the persistent CTAs walk (tile, k range) units and a fix-up sums the splits.
// FLOAT inputs run as TF32 (m64nNk8): a k tile keeps its 128 bytes (32 fp32 channels), a gather
// chunk its 16 bytes (4 channels), so only the element counts change with ES.
#pragma once
#include "conv_implicit_gemm.cuh"
#include "gemm_wgmma.cuh"
#include "splitk_fixup.cuh"

namespace dg {

__device__ __forceinline__ void cp_async_mbar_arrive(u32 bar) {
  asm volatile("cp.async.mbarrier.arrive.noinc.shared::cta.b64 [%0];\n" ::"r"(bar) : "memory");
}

// Rows (t >> 3) + 16 u of every 128-pixel tile, chunk t & 7 (16 bytes: 8 channels, or 4 of fp32)
// of every 128-byte k step. The chunk's channel and tap advance incrementally from k step to k
// step (no division in the loop), and a tap's offset is shared by the thread's 8 rows.
template <int BN, int STAGES, int ES>
__device__ __forceinline__ void conv_produce(const ConvParams& P, const TmaDesc* mw, u32 base) {
  typedef WgmmaSmem<BN, STAGES, ES> S;
  const int t = (int)threadIdx.x;  // 0..127
  const int jc = t & 7;
  const typename RawElem<ES>::type* x = static_cast<const typename RawElem<ES>::type*>(P.x);
  const i64 units = (i64)P.tiles_m * P.tiles_n * P.splits;
  const int ktiles = (int)((P.K + S::BK - 1) / S::BK);
  int s = 0;
  u32 phase = 0;
  for (i64 unit = blockIdx.x; unit < units; unit += gridDim.x) {
    i64 tile, b;
    int split, kb, ke, tm, tn;
    split_unit(unit, P.splits, ktiles, tile, split, kb, ke);
    tile_coords(tile, P.tiles_m, P.tiles_n, b, tm, tn);
    // 32-bit pixel arithmetic (the host keeps M below 2^31): this runs once per unit, and with few
    // k steps per unit (1x1 filters, split-K) its divisions would otherwise show.
    i64 row_off[8];
    int d0[8], h0[8], w0[8];
#pragma unroll
    for (int u = 0; u < 8; ++u) {
      const int m = tm * S::BM + (t >> 3) + 16 * u;
      const int qq = m % P.out[2], r1 = m / P.out[2];
      const int pp = r1 % P.out[1], r2 = r1 / P.out[1];
      const int oo = r2 % P.out[0], nn = r2 / P.out[0];
      d0[u] = m < P.M ? oo * P.stride[0] - P.pad[0] : -(1 << 30);  // rows past M read nothing
      h0[u] = pp * P.stride[1] - P.pad[1];
      w0[u] = qq * P.stride[2] - P.pad[2];
      row_off[u] = m < P.M ? nn * P.x_stride[0] + d0[u] * P.x_stride[1] + h0[u] * P.x_stride[2] + w0[u] * P.x_stride[3]
                           : 0;
    }
    const i64 k0 = (i64)kb * S::BK + jc * (16 / ES);
    int c = (int)(k0 % P.C), ft = (int)(k0 / P.C);
    int fs = ft % P.filt[2];
    ft /= P.filt[2];
    int fr = ft % P.filt[1];
    ft /= P.filt[1];
    for (int kt = kb; kt < ke; ++kt) {
      const u32 full = base + S::BARRIERS + 8 * s, empty = full + 8 * STAGES;
      mbar_wait(empty, phase ^ 1);
      const u32 a_dst = base + s * S::STAGE_BYTES, b_dst = a_dst + S::A_BYTES;
      if (t == 0) {
        mbar_expect_tx(full, S::B_BYTES);
        tma_load_3d(b_dst, mw, full, kt * S::BK, tn * BN, 0);
      }
      const bool kval = ft < P.filt[0];  // k < K
      const int dd = ft * P.dil[0], hh = fr * P.dil[1], ww = fs * P.dil[2];
      const i64 tap_off = dd * P.x_stride[1] + hh * P.x_stride[2] + ww * P.x_stride[3] + c;
#pragma unroll
      for (int u = 0; u < 8; ++u) {
        const int row = (t >> 3) + 16 * u;
        const bool ok = kval && (unsigned)(d0[u] + dd) < (unsigned)P.in[0] &&
                        (unsigned)(h0[u] + hh) < (unsigned)P.in[1] && (unsigned)(w0[u] + ww) < (unsigned)P.in[2];
        cp_async16(a_dst + row * 128 + ((jc ^ (row & 7)) << 4), ok ? (const void*)(x + row_off[u] + tap_off) : (const void*)x,
                   ok ? 16 : 0);
      }
      cp_async_mbar_arrive(full);
      if (++s == STAGES) {
        s = 0;
        phase ^= 1;
      }
      for (c += S::BK; c >= P.C;) {  // the next k step's channel and tap
        c -= P.C;
        if (++fs == P.filt[2]) {
          fs = 0;
          if (++fr == P.filt[1]) {
            fr = 0;
            ++ft;
          }
        }
      }
    }
  }
  asm volatile("cp.async.wait_all;\n" ::: "memory");  // no gather in flight when the thread exits
}

// The conv's own consumer (cooperative, as wgmma_consume; BN 64, 128 or 256), used for 64-wide
// tiles and for split-K (SPLIT: splitk_fixup.cuh's deterministic fix-up of the partial sums).
template <int DT, int BN, int STAGES, bool SPLIT, class Ep>
__device__ __forceinline__ void conv_consume(const ConvParams& P, const PointwiseParams& p, u32 base,
                                                   char* smem_generic, int cw, float* red) {
  typedef WgmmaSmem<BN, STAGES, MmaOperand<DT>::ES> S;
  constexpr int REGS = BN / 2;
  const int ktiles = (int)((P.K + S::BK - 1) / S::BK);
  const int lane = (int)threadIdx.x % 32, warp = ((int)threadIdx.x / 32) % 4, ct = (int)threadIdx.x - 128;
  const i64 units = (i64)P.tiles_m * P.tiles_n * P.splits;
  int s = 0;
  u32 phase = 0;
  float acc[REGS];
  if (!SPLIT && ktiles == 0) zero_accumulators(acc);  // K = 0: no wgmma ever writes them
  for (i64 unit = blockIdx.x; unit < units; unit += gridDim.x) {
    i64 tile, b;
    int split, kb, ke, tm, tn;
    split_unit(unit, P.splits, ktiles, tile, split, kb, ke);
    tile_coords(tile, P.tiles_m, P.tiles_n, b, tm, tn);
    int prev = -1;
    for (int kt = kb; kt < ke; ++kt) {
      const u32 full = base + S::BARRIERS + 8 * s;
      mbar_wait(full, phase);
      asm volatile("fence.proxy.async.shared::cta;\n" ::: "memory");  // the gathers came through cp.async
      const u32 a_tile = base + s * S::STAGE_BYTES + cw * 8192, b_tile = base + s * S::STAGE_BYTES + S::A_BYTES;
      wgmma_fence();
#pragma unroll
      for (int kk = 0; kk < S::K_STEPS; ++kk)
        wgmma_tile<DT, BN, false, false>(acc, smem_desc(a_tile + 32 * kk, 16, 1024), smem_desc(b_tile + 32 * kk, 16, 1024),
                                (kt > kb || kk > 0) ? 1 : 0);
      wgmma_commit();
      wgmma_wait<1>();  // the previous k tile's products are done: its stage can be refilled
      if (prev >= 0) wgmma_release<1>(base + S::BARRIERS + 8 * STAGES + 8 * prev, lane);
      prev = s;
      if (++s == STAGES) {
        s = 0;
        phase ^= 1;
      }
    }
    wgmma_wait<0>();
    if (prev >= 0) wgmma_release<1>(base + S::BARRIERS + 8 * STAGES + 8 * prev, lane);
    if (SPLIT && kb == ke) zero_accumulators(acc);  // a split with no k steps
    if constexpr (SPLIT)
      if (!splitk_fixup<REGS>(acc, static_cast<float*>(P.ws), (i64)P.tiles_m * P.tiles_n, tile, split, P.splits, ct))
        continue;
    // Epilogue as wgmma_consume's: 64 rows x 32 columns at a time through shared memory.
    typename Ep::Index c[Ep::kRank];
#pragma unroll
    for (int d = 0; d < Ep::kRank; ++d) c[d] = 0;
    float* stage = reinterpret_cast<float*>(smem_generic) + (S::EPI / 4) + cw * 64 * S::EPI_LD;
    const int r = warp * 16 + (lane >> 2);
#pragma unroll 1
    for (int q = 0; q < BN / S::EPI_COLS; ++q) {
      named_barrier_sync(1 + cw, 128);  // the previous chunk has been read
#pragma unroll
      for (int j = 0; j < BN / 8; ++j) {
        if ((j * 8) / S::EPI_COLS != q) continue;
        const int col = (j * 8) % S::EPI_COLS + (lane & 3) * 2;
        *reinterpret_cast<float2*>(stage + r * S::EPI_LD + col) = make_float2(acc[4 * j], acc[4 * j + 1]);
        *reinterpret_cast<float2*>(stage + (r + 8) * S::EPI_LD + col) = make_float2(acc[4 * j + 2], acc[4 * j + 3]);
      }
      named_barrier_sync(1 + cw, 128);
      epilogue_staged<Ep>(p, c, stage, S::EPI_LD, 64, S::EPI_COLS, (i64)tm * S::BM + cw * 64,
                          (i64)tn * BN + q * S::EPI_COLS, P.M, P.N, P.epi_vec, red, (int)threadIdx.x % 128, 128);
    }
  }
}

// Register split between the producer and the two consumer warpgroups (P + 2 C <= 504).
template <int BN> struct ConvRegs;
template <> struct ConvRegs<64> { static constexpr int P = 152, C = 176; };
template <> struct ConvRegs<128> { static constexpr int P = 152, C = 176; };
template <> struct ConvRegs<256> { static constexpr int P = 88, C = 208; };

// The generated kernel calls this with its configuration: kDataType, kTileN (the tile is 128 x
// kTileN), kStages, kSplitK and the Epilogue.
template <class Config>
__device__ __forceinline__ void conv_fprop_wgmma(const ConvParams& P, const PointwiseParams& p, const TmaDesc* mw) {
  constexpr int DT = Config::kDataType, BN = Config::kTileN, STAGES = Config::kStages;
  constexpr bool SPLIT = Config::kSplitK;
  typedef typename Config::Epilogue Ep;
  typedef WgmmaSmem<BN, STAGES, MmaOperand<DT>::ES> S;
  const u32 base = swizzle_aligned_smem();
  const int wg = (int)threadIdx.x / 128;
  float red[Ep::kFull > 0 ? Ep::kFull : 1];
  Ep::init_full(red);
  if (threadIdx.x == 0) {
    init_stage_barriers<S, STAGES>(base, 129, EmptyArrivals<1, false>::value);  // full: 128 gathers + the TMA's expect_tx
    asm volatile("prefetch.tensormap [%0];\n" ::"l"(mw) : "memory");
  }
  __syncthreads();
  pdl_start();
  if (wg == 0) {
    asm volatile("setmaxnreg.dec.sync.aligned.u32 %0;\n" ::"n"(ConvRegs<BN>::P));
    conv_produce<BN, STAGES, MmaOperand<DT>::ES>(P, mw, base);
  } else {
    asm volatile("setmaxnreg.inc.sync.aligned.u32 %0;\n" ::"n"(ConvRegs<BN>::C));
    if constexpr (SPLIT || BN == 64) {
      conv_consume<DT, BN, STAGES, SPLIT, Ep>(P, p, base, smem_pointer(base), wg - 1, red);
    } else {
      const ConsumerShape sh{(i64)P.tiles_m * P.tiles_n, P.tiles_m, P.tiles_n, (int)((P.K + S::BK - 1) / S::BK),
                             P.M, P.N, P.epi_vec, (const GemmParams*)0};
      wgmma_consume<DT, BN, STAGES, true, true, true, false, Ep>(sh, p, base, smem_pointer(base),
                                                                 wg - 1, red);
    }
  }
  Ep::finish_full(p, red);
}

}  // namespace dg
