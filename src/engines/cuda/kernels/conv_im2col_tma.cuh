// Convolution forward as an implicit GEMM whose activation tiles come from TMA in im2col mode
// (sm_90a): one thread of the producer warpgroup issues, per k step, one im2col load of 128 output
// pixels x one 128-byte channel block of one filter tap (the copy engine computes the pixels'
// addresses, wraps rows and images, and zero-fills the padding and channels past C) and one tiled
// load of the filters' matching block; the consumer warpgroups and the epilogue are the matmul's
// (gemm_wgmma.cuh's wgmma_consume), ping-pong and split-K included.
//
// The GEMM's k runs over (tap, channel block) pairs, taps outermost: k step kt is tap kt / CB,
// channels (kt % CB) * BK .. + BK, CB = ceil(C / BK). The im2col map's coordinates are the tile's
// first pixel's window origin (output coordinate x stride - padding, per spatial dim, and the
// image), its offsets the tap's (filter coordinate x dilation); the filters are a (C, taps, K) map.
#pragma once
#include "conv_implicit_gemm.cuh"
#include "gemm_wgmma.cuh"

namespace dg {

// 2D (rank 4: C, W, H, N) and 3D (rank 5: C, W, H, D, N) im2col loads; the offsets are 16-bit.
__device__ __forceinline__ void tma_load_im2col_4d(u32 dst, const TmaDesc* map, u32 bar, int c, int w, int h, int n,
                                                   int ow, int oh) {
  asm volatile(
      "cp.async.bulk.tensor.4d.shared::cluster.global.im2col.mbarrier::complete_tx::bytes [%0], [%1, {%3, %4, %5, %6}], "
      "[%2], {%7, %8};\n" ::"r"(dst),
      "l"(map), "r"(bar), "r"(c), "r"(w), "r"(h), "r"(n), "h"((unsigned short)ow), "h"((unsigned short)oh)
      : "memory");
}
__device__ __forceinline__ void tma_load_im2col_5d(u32 dst, const TmaDesc* map, u32 bar, int c, int w, int h, int d,
                                                   int n, int ow, int oh, int od) {
  asm volatile(
      "cp.async.bulk.tensor.5d.shared::cluster.global.im2col.mbarrier::complete_tx::bytes [%0], [%1, {%3, %4, %5, %6, "
      "%7}], [%2], {%8, %9, %10};\n" ::"r"(dst),
      "l"(map), "r"(bar), "r"(c), "r"(w), "r"(h), "r"(d), "r"(n), "h"((unsigned short)ow), "h"((unsigned short)oh),
      "h"((unsigned short)od)
      : "memory");
}

// k steps of the (tap, channel block) walk.
template <int BK>
__device__ __forceinline__ int im2col_ktiles(const ConvParams& P) {
  return P.filt[0] * P.filt[1] * P.filt[2] * ((P.C + BK - 1) / BK);
}

// The producer's one thread: every load of every unit (tile, or with split-K one k range of a
// tile) this CTA owns, in the consumers' order (split_unit, then tile_coords).
template <int BN, int STAGES, int ES, int RANK>
__device__ __forceinline__ void im2col_produce(const ConvParams& P, const TmaDesc* mx, const TmaDesc* mw, u32 base) {
  typedef WgmmaSmem<BN, STAGES, ES> S;
  const int cb = (P.C + S::BK - 1) / S::BK, ktiles = im2col_ktiles<S::BK>(P);
  const i64 units = (i64)P.tiles_m * P.tiles_n * P.splits;
  int s = 0;
  u32 phase = 0;
  for (i64 unit = blockIdx.x; unit < units; unit += gridDim.x) {
    i64 tile, b;
    int split, kb, ke, tm, tn;
    split_unit(unit, P.splits, ktiles, tile, split, kb, ke);
    tile_coords(tile, P.tiles_m, P.tiles_n, b, tm, tn);
    // The tile's first pixel: its window's origin in the input and its image.
    const int m = tm * S::BM;
    const int q = m % P.out[2], r1 = m / P.out[2];
    const int pp = r1 % P.out[1], r2 = r1 / P.out[1];
    const int o = r2 % P.out[0], n = r2 / P.out[0];
    const int w0 = q * P.stride[2] - P.pad[2], h0 = pp * P.stride[1] - P.pad[1], d0 = o * P.stride[0] - P.pad[0];
    // The first k step's tap (s, r, t) and channel block, then advanced step by step.
    int c = kb % cb, tap = kb / cb;
    int fs = tap % P.filt[2], fr = (tap / P.filt[2]) % P.filt[1], ft = tap / (P.filt[2] * P.filt[1]);
    for (int kt = kb; kt < ke; ++kt) {
      const u32 full = base + S::BARRIERS + 8 * s, empty = full + 8 * STAGES;
      mbar_wait(empty, phase ^ 1);
      mbar_expect_tx(full, S::STAGE_BYTES);
      const u32 a_dst = base + s * S::STAGE_BYTES, b_dst = a_dst + S::A_BYTES;
      if (RANK == 4)
        tma_load_im2col_4d(a_dst, mx, full, c * S::BK, w0, h0, n, fs * P.dil[2], fr * P.dil[1]);
      else
        tma_load_im2col_5d(a_dst, mx, full, c * S::BK, w0, h0, d0, n, fs * P.dil[2], fr * P.dil[1], ft * P.dil[0]);
      tma_load_3d(b_dst, mw, full, c * S::BK, (ft * P.filt[1] + fr) * P.filt[2] + fs, tn * BN);
      if (++s == STAGES) {
        s = 0;
        phase ^= 1;
      }
      if (++c == cb) {
        c = 0;
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
}

// The generated kernel calls this with its configuration: kDataType, kTileN (tiles of 128 x
// kTileN), kStages, kSplitK, kPingpong, kRank (4: 1D/2D, 5: 3D) and the Epilogue.
template <class Config>
__device__ __forceinline__ void conv_fprop_im2col(const ConvParams& P, const PointwiseParams& p, const TmaDesc* mx,
                                                  const TmaDesc* mw) {
  constexpr int DT = Config::kDataType, BN = Config::kTileN, STAGES = Config::kStages, RANK = Config::kRank;
  constexpr bool SPLIT = Config::kSplitK, PINGPONG = Config::kPingpong;
  typedef typename Config::Epilogue Ep;
  typedef WgmmaSmem<BN, STAGES, MmaOperand<DT>::ES> S;
  const u32 base = swizzle_aligned_smem();
  const int wg = (int)threadIdx.x / 128;
  float red[Ep::kFull > 0 ? Ep::kFull : 1];
  Ep::init_full(red);
  if (threadIdx.x == 0) {
    // full: the producer's expect_tx; empty: every consuming thread (ping-pong: one warpgroup's)
    init_stage_barriers<S, STAGES>(base, 1, PINGPONG ? 128 : 256);
    asm volatile("prefetch.tensormap [%0];\n" ::"l"(mx) : "memory");
    asm volatile("prefetch.tensormap [%0];\n" ::"l"(mw) : "memory");
  }
  __syncthreads();
  if (wg == 0) {
    asm volatile("setmaxnreg.dec.sync.aligned.u32 56;\n");
    if (threadIdx.x == 0) im2col_produce<BN, STAGES, MmaOperand<DT>::ES, RANK>(P, mx, mw, base);
  } else {
    asm volatile("setmaxnreg.inc.sync.aligned.u32 224;\n");
    const ConsumerShape sh{(i64)P.tiles_m * P.tiles_n, P.tiles_m, P.tiles_n, im2col_ktiles<S::BK>(P), P.M, P.N,
                           P.epi_vec, (const GemmParams*)0, P.splits, static_cast<float*>(P.ws)};
    wgmma_consume<DT, BN, STAGES, true, true, false, PINGPONG, Ep, SPLIT, 1>(sh, p, base, smem_pointer(base), wg - 1,
                                                                            red);
  }
  Ep::finish_full(p, red);
}

}  // namespace dg
