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
// image), its offsets the tap's (filter coordinate x dilation); the filters are a (C, taps, K) map
// (a transposed convolution's phases: a (C, S, R, T, K) map, see DgradPhasesOf).
#pragma once
#include "conv_implicit_gemm.cuh"
#include "gemm_wgmma.cuh"
#include "tf32x3_split.cuh"

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

// The same loads written to every CTA of `mask` in the cluster (clusters along n share the
// activation tile: each CTA loads its piece of the pixels for all).
__device__ __forceinline__ void tma_load_im2col_4d_multicast(u32 dst, const TmaDesc* map, u32 bar, int c, int w, int h,
                                                             int n, int ow, int oh, unsigned short mask) {
  asm volatile(
      "cp.async.bulk.tensor.4d.shared::cluster.global.im2col.mbarrier::complete_tx::bytes.multicast::cluster [%0], [%1, "
      "{%3, %4, %5, %6}], [%2], {%7, %8}, %9;\n" ::"r"(dst),
      "l"(map), "r"(bar), "r"(c), "r"(w), "r"(h), "r"(n), "h"((unsigned short)ow), "h"((unsigned short)oh), "h"(mask)
      : "memory");
}
__device__ __forceinline__ void tma_load_im2col_5d_multicast(u32 dst, const TmaDesc* map, u32 bar, int c, int w, int h,
                                                             int d, int n, int ow, int oh, int od, unsigned short mask) {
  asm volatile(
      "cp.async.bulk.tensor.5d.shared::cluster.global.im2col.mbarrier::complete_tx::bytes.multicast::cluster [%0], [%1, "
      "{%3, %4, %5, %6, %7}], [%2], {%8, %9, %10}, %11;\n" ::"r"(dst),
      "l"(map), "r"(bar), "r"(c), "r"(w), "r"(h), "r"(d), "r"(n), "h"((unsigned short)ow), "h"((unsigned short)oh),
      "h"((unsigned short)od), "h"(mask)
      : "memory");
}

template <bool C, class A, class B>
struct Im2colSelect {
  typedef A type;
};
template <class A, class B>
struct Im2colSelect<false, A, B> {
  typedef B type;
};

// RESIDENT (every output channel in one tile column, N <= BN): the filters' tiles of every k step
// are loaded once per CTA and stay; the stage ring holds activation tiles only. Layout: the A
// stages, the epilogue staging, the barriers (full[STAGES], empty[STAGES], then the filters'
// one), then from B_BASE (1024-aligned) one BN x 128-byte filter tile per k step.
template <int BN, int STAGES, int ES>
struct Im2colResidentSmem {
  typedef WgmmaSmem<BN, STAGES, ES> W;
  static constexpr int BM = W::BM, BK = W::BK, K_STEPS = W::K_STEPS, EPI_COLS = W::EPI_COLS, EPI_LD = W::EPI_LD;
  static constexpr int A_BYTES = W::A_BYTES, B_BYTES = W::B_BYTES, STAGE_BYTES = A_BYTES;
  static constexpr int EPI = STAGES * A_BYTES;
  static constexpr int BARRIERS = EPI + 2 * 64 * EPI_LD * 4;
  static constexpr int FILTER_BAR = BARRIERS + 16 * STAGES;
  static constexpr int B_BASE = (FILTER_BAR + 8 + 1023) / 1024 * 1024;
};

// Diagnostics, for timing only (the results are wrong): Config::kProbeTiledA 1 loads each k step's
// activation tile by a tiled TMA of the filter map (the same 16 KB as 128 pixels when BN is 128)
// in place of the im2col load, to time the im2col mode apart (DNNGRAPH_CONV_PROBE_TILED_A).
template <class C, class = int>
struct ProbeTiledAOf {
  enum : int { value = 0 };
};
template <class C>
struct ProbeTiledAOf<C, decltype((int)C::kProbeTiledA)> {
  enum : int { value = C::kProbeTiledA };
};

// Config::kSplitCluster 1: split-K's CTAs of a tile form a cluster (wgmma_consume's SPLIT_CLUSTER),
// launched one unit per CTA with __cluster_dims__(splits) on the kernel.
template <class C, class = int>
struct SplitClusterOf {
  enum : bool { value = false };
};
template <class C>
struct SplitClusterOf<C, decltype((int)C::kSplitCluster)> {
  enum : bool { value = (bool)C::kSplitCluster };
};

// Config::kDgradPhases 1: one phase of a strided conv_dgrad (transposed convolution) as a forward
// convolution over DY (src/engines/cuda/conv/conv_dgrad_phases.hpp): the filters come from a 5D
// (C, S, R, T, K) map of the phase's taps, loaded MN-major (C is contiguous, K is the GEMM's k) at
// filter coordinates that run backwards (T - 1 - tap per dim), and the epilogue writes the
// phase's rows into DX's strided sub-grid (P.rows).
template <class C, class = int>
struct DgradPhasesOf {
  enum : bool { value = false };
};
template <class C>
struct DgradPhasesOf<C, decltype((int)C::kDgradPhases)> {
  enum : bool { value = (bool)C::kDgradPhases };
};

// A conv_dgrad's phases launched together (up to 4, the kernel parameters' room): blockIdx.y
// picks the phase, so a phase's CTAs start as the previous one's retire, with no launch between.
// Mirrored by src/engines/cuda/conv/conv_dgrad_phases.hpp.
struct DgradPhaseArgs {
  TmaDesc mx[4];  // the phases' im2col maps of DY
  TmaDesc mw[4];  // their (C, S, R, T, K) filter maps
  TmaDesc my[4];  // register epilogues: their (channels, width, rows) maps of the output
  ConvParams cp[4];
};

// A dgrad phase's filter tile of k step (tap (ft, fr, fs), DY channels k0..): BN / 64 MN-major
// boxes of 64 DX channels (from n0) x BK DY channels, at the tap's backward filter coordinates.
template <int BN>
__device__ __forceinline__ void dgrad_filter_load(u32 dst, const TmaDesc* mw, u32 bar, const ConvParams& P, int n0,
                                                  int ft, int fr, int fs, int k0) {
#pragma unroll
  for (int j = 0; j < BN / 64; ++j)
    tma_load_5d(dst + 8192 * j, mw, bar, n0 + 64 * j, P.filt[2] - 1 - fs, P.filt[1] - 1 - fr, P.filt[0] - 1 - ft, k0);
}

// k steps of the (tap, channel block) walk.
template <int BK>
__device__ __forceinline__ int im2col_ktiles(const ConvParams& P) {
  return P.filt[0] * P.filt[1] * P.filt[2] * ((P.C + BK - 1) / BK);
}

// The producer's one thread: every load of every unit (tile, or with split-K one k range of a
// tile) this CTA owns, in the consumers' order (split_unit, then walk_tile). Clusters (CLUSTER
// CTAs, walk_tile's groups): along m (2 CTAs: adjacent pixel tiles, the same filter tile) each CTA
// loads its own activation tile and half of the filter tile, multicast into both (wgmma_produce's
// protocol: the filters are read from L2 once per pair), and a rank past the last pixel tile loads
// only its filter half; ALONG_N (the same pixel tile, adjacent filter tiles) each CTA loads its own
// filter tile and rows r * BM / CLUSTER.. of the activation tile (its own im2col map of that many
// pixels), multicast into all, so the 9 taps' re-reads of each pixel cross L2 once per cluster;
// a rank past the last filter tile loads only its piece.
template <int BN, int STAGES, int ES, int RANK, bool RESIDENT, int CLUSTER, int EPI_BYTES, int PROBE_A = 0,
          bool ALONG_N = false, bool DGRAD = false, bool X3 = false>
__device__ __forceinline__ void im2col_produce(const ConvParams& P, const TmaDesc* mx, const TmaDesc* mw, u32 base) {
  typedef typename Im2colSelect<RESIDENT, Im2colResidentSmem<BN, STAGES, ES>, WgmmaSmem<BN, STAGES, ES, EPI_BYTES, X3>>::type S;
  static_assert(CLUSTER == 1 || !RESIDENT, "clusters share streamed tiles, not resident ones");
  static_assert(!PROBE_A || (BN == 128 && CLUSTER == 1 && !RESIDENT), "the tiled-A probe reads a 128-row filter box");
  static_assert(ALONG_N || CLUSTER <= 2, "clusters along m are pairs");
  static_assert(!DGRAD || (CLUSTER == 1 && !PROBE_A), "dgrad phases load their own filter tiles");
  constexpr unsigned short MASK = (unsigned short)((1u << CLUSTER) - 1);
  constexpr int PIECE_ROWS = ALONG_N ? S::BM / CLUSTER : S::BM;  // the activation rows this CTA loads
  const int cb = (P.C + S::BK - 1) / S::BK, ktiles = im2col_ktiles<S::BK>(P);
  const i64 units = walk_units<CLUSTER, ALONG_N>((i64)P.tiles_m * P.tiles_n, P.tiles_m, P.tiles_n) * P.splits;
  const int rank = CLUSTER > 1 ? (int)cluster_ctarank() : 0;
  if constexpr (RESIDENT) {  // every k step's filter tile, once
    const u32 bar = base + Im2colResidentSmem<BN, STAGES, ES>::FILTER_BAR;
    mbar_expect_tx(bar, (u32)ktiles * S::B_BYTES);
    for (int kt = 0; kt < ktiles; ++kt) {
      const u32 dst = base + Im2colResidentSmem<BN, STAGES, ES>::B_BASE + kt * S::B_BYTES;
      const int tap = kt / cb;
      if (DGRAD)
        dgrad_filter_load<BN>(dst, mw, bar, P, 0, tap / (P.filt[2] * P.filt[1]), (tap / P.filt[2]) % P.filt[1],
                              tap % P.filt[2], (kt % cb) * S::BK);
      else
        tma_load_3d(dst, mw, bar, (kt % cb) * S::BK, tap, 0);
    }
  }
  int s = 0;
  u32 phase = 0;
  for (i64 unit = blockIdx.x / CLUSTER; unit < units; unit += gridDim.x / CLUSTER) {
    i64 tile, b;
    int split, kb, ke, tm, tn;
    split_unit(unit, P.splits, ktiles, tile, split, kb, ke);
    walk_tile<CLUSTER, ALONG_N>(tile, P.tiles_m, P.tiles_n, b, tm, tn);
    const bool has_a = ALONG_N || tm < P.tiles_m, has_b = !ALONG_N || tn < P.tiles_n;
    // This CTA's first activation row: its window's origin in the input and its image.
    const int m = tm * S::BM + (ALONG_N ? rank * PIECE_ROWS : 0);
    const int q = m % P.out[2], r1 = m / P.out[2];
    const int pp = r1 % P.out[1], r2 = r1 / P.out[1];
    const int o = r2 % P.out[0], n = r2 / P.out[0];
    const int w0 = q * P.stride[2] - P.pad[2], h0 = pp * P.stride[1] - P.pad[1], d0 = o * P.stride[0] - P.pad[0];
    // The first k step's tap (s, r, t) and channel block, then advanced step by step.
    int c = kb % cb;
    const int tap0 = kb / cb;
    int fs = tap0 % P.filt[2], fr = (tap0 / P.filt[2]) % P.filt[1], ft = tap0 / (P.filt[2] * P.filt[1]);
    for (int kt = kb; kt < ke; ++kt) {
      const u32 full = base + S::BARRIERS + 8 * s, empty = full + 8 * STAGES;
      mbar_wait(empty, phase ^ 1);
      // Along n every CTA receives the whole activation tile (its peers' pieces too) and its own
      // filter tile; along m its activation tile (if any) and both filter halves.
      mbar_expect_tx(full, (has_a ? S::A_BYTES : 0) + (RESIDENT || !has_b ? 0 : S::B_BYTES));
      const u32 a_dst = base + s * S::STAGE_BYTES, b_dst = a_dst + S::A_BYTES;
      const int tap = (ft * P.filt[1] + fr) * P.filt[2] + fs;
      if (!has_a) {
        // no pixel tile (odd tiles_m): only the filter half, counted alone above
      } else if (PROBE_A) {
        tma_load_3d(a_dst, mw, full, c * S::BK, tap, tn * BN);
      } else if (ALONG_N) {
        const u32 piece = a_dst + rank * (S::A_BYTES / CLUSTER);
        if (RANK == 4)
          tma_load_im2col_4d_multicast(piece, mx, full, c * S::BK, w0, h0, n, fs * P.dil[2], fr * P.dil[1], MASK);
        else
          tma_load_im2col_5d_multicast(piece, mx, full, c * S::BK, w0, h0, d0, n, fs * P.dil[2], fr * P.dil[1],
                                       ft * P.dil[0], MASK);
      } else if (RANK == 4) {
        tma_load_im2col_4d(a_dst, mx, full, c * S::BK, w0, h0, n, fs * P.dil[2], fr * P.dil[1]);
      } else {
        tma_load_im2col_5d(a_dst, mx, full, c * S::BK, w0, h0, d0, n, fs * P.dil[2], fr * P.dil[1], ft * P.dil[0]);
      }
      if (DGRAD && !RESIDENT)
        dgrad_filter_load<BN>(b_dst, mw, full, P, tn * BN, ft, fr, fs, c * S::BK);
      else if (CLUSTER > 1 && !ALONG_N)  // the filter map's box is BN / 2 output channels
        tma_load_3d_multicast(b_dst + rank * (S::B_BYTES / 2), mw, full, c * S::BK, tap, tn * BN + rank * (BN / 2), MASK);
      else if (!RESIDENT && has_b)
        tma_load_3d(b_dst, mw, full, c * S::BK, tap, tn * BN);
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

// The consumers of RESIDENT tiles (cooperative: warpgroup cw takes rows cw * 64.. of every tile;
// SPLIT as wgmma_consume's): wgmma_consume's main loop and epilogue with the filter tile of k step
// kt at B_BASE + kt * B_BYTES, awaited once. DGRAD: MN-major filter tiles, rows into P.rows.
template <int DT, int BN, int STAGES, bool SPLIT, class Ep, bool DGRAD = false>
__device__ __forceinline__ void im2col_consume_resident(const ConvParams& P, const PointwiseParams& p, u32 base, int cw,
                                                        float* red) {
  typedef Im2colResidentSmem<BN, STAGES, MmaOperand<DT>::ES> S;
  constexpr int REGS = BN / 2;
  const int ktiles = im2col_ktiles<S::BK>(P);
  const int lane = (int)threadIdx.x % 32;
  const i64 tiles = (i64)P.tiles_m * P.tiles_n, units = tiles * P.splits;
  int s = 0;
  u32 phase = 0;
  float acc[REGS];
  if (!SPLIT && ktiles == 0) zero_accumulators(acc);  // K = 0: no wgmma ever writes them
  mbar_wait(base + S::FILTER_BAR, 0);
  for (i64 unit = blockIdx.x; unit < units; unit += gridDim.x) {
    i64 tile, b;
    int split, kb, ke, tm, tn;
    split_unit(unit, P.splits, ktiles, tile, split, kb, ke);
    tile_coords(tile, P.tiles_m, P.tiles_n, b, tm, tn);
    int prev = -1;
    for (int kt = kb; kt < ke; ++kt) {
      mbar_wait(base + S::BARRIERS + 8 * s, phase);
      const u32 a_tile = base + s * S::STAGE_BYTES + cw * 8192, b_tile = base + S::B_BASE + kt * S::B_BYTES;
      wgmma_fence();
#pragma unroll
      for (int kk = 0; kk < S::K_STEPS; ++kk)
        wgmma_tile<DT, BN, false, DGRAD>(acc, smem_desc(a_tile + 32 * kk, 16, 1024),
                                         DGRAD ? smem_desc(b_tile + 2048 * kk, 8192, 1024) : smem_desc(b_tile + 32 * kk, 16, 1024),
                                         (kt > kb || kk > 0) ? 1 : 0);
      wgmma_commit();
      wgmma_wait<1>();  // the previous k step's products are done: its stage can be refilled
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
      if (!splitk_fixup<REGS>(acc, static_cast<float*>(P.ws), tiles, tile, split, P.splits, (int)threadIdx.x - 128))
        continue;
    typename Ep::Index c[Ep::kRank];
#pragma unroll
    for (int d = 0; d < Ep::kRank; ++d) c[d] = 0;
    float* stage = reinterpret_cast<float*>(smem_pointer(base)) + (S::EPI / 4) + cw * 64 * S::EPI_LD;
    epilogue_staged_block<Ep, BN, S::EPI_COLS, S::EPI_LD>(p, c, acc, stage, (i64)tm * S::BM + cw * 64, (i64)tn * BN,
                                                          P.M, P.N, P.epi_vec, red, cw,
                                                          DGRAD ? &P.rows : (const SubgridRows*)0);
  }
}

// The generated kernel calls this with its configuration: kDataType, kTileN (tiles of 128 x
// kTileN), kStages, kSplitK, kPingpong, kRank (4: 1D/2D, 5: 3D), kResidentB, kCluster (CTAs per
// cluster, launched along x by __cluster_dims__ on the kernel) and kClusterAlongN (im2col_produce's
// two kinds), kEpilogue (epilogue_tma_store.cuh's modes; EPI_TMA_STORE stores through `my`, the
// output's map), kTf32x3 (Tf32x3Of) and the Epilogue.
template <class Config>
__device__ __forceinline__ void conv_fprop_im2col(const ConvParams& P, const PointwiseParams& p, const TmaDesc* mx,
                                                  const TmaDesc* mw, const TmaDesc* my = 0) {
  constexpr int DT = Config::kDataType, BN = Config::kTileN, STAGES = Config::kStages, RANK = Config::kRank;
  constexpr bool SPLIT = Config::kSplitK, PINGPONG = Config::kPingpong, RESIDENT = Config::kResidentB;
  constexpr int CLUSTER = Config::kCluster;
  constexpr bool ALONG_N = Config::kClusterAlongN;
  constexpr bool SPLIT_CLUSTER = SplitClusterOf<Config>::value, DGRAD = DgradPhasesOf<Config>::value;
  constexpr bool X3 = Tf32x3Of<Config>::value;
  static_assert(!X3 || (DT == DT_FLOAT && !RESIDENT && CLUSTER == 1 && !DGRAD && !ProbeTiledAOf<Config>::value),
                "3xTF32 streams FLOAT tiles of one CTA");
  static_assert(!(RESIDENT && PINGPONG), "resident filter tiles go with cooperative consumers");
  static_assert(!SPLIT_CLUSTER || (SPLIT && !RESIDENT && CLUSTER == 1), "a cluster's splits stream their own tiles");
  static_assert(!DGRAD || (MmaOperand<DT>::ES == 2 && !SPLIT && CLUSTER == 1), "dgrad phases: 16-bit, whole tiles");
  typedef typename Config::Epilogue Ep;
  constexpr int EPI = EpilogueModeOf<Config>::value, EPI_BYTES = EpilogueBytes<EPI, Ep, BN>::value;
  static_assert(EPI == EPI_STAGED || !RESIDENT, "resident filter tiles keep the staged epilogue");
  typedef WgmmaSmem<BN, STAGES, MmaOperand<DT>::ES, EPI_BYTES, X3> S;
  const u32 base = swizzle_aligned_smem();
  const int wg = (int)threadIdx.x / 128;
  float red[Ep::kFull > 0 ? Ep::kFull : 1];
  Ep::init_full(red);
  if (threadIdx.x == 0) {
    // full: the producer's expect_tx; empty: one arrival per consumer warp (wgmma_release)
    if constexpr (RESIDENT) {
      init_stage_barriers<Im2colResidentSmem<BN, STAGES, MmaOperand<DT>::ES>, STAGES>(base, 1, EmptyArrivals<1, false>::value);
      mbar_init(base + Im2colResidentSmem<BN, STAGES, MmaOperand<DT>::ES>::FILTER_BAR, 1);
      asm volatile("fence.mbarrier_init.release.cluster;\n" ::: "memory");
    } else {
      if constexpr (X3) tf32x3_init_barriers<S, STAGES>(base);
      init_stage_barriers<S, STAGES>(base, 1, EmptyArrivals<CLUSTER, PINGPONG>::value);
    }
    asm volatile("prefetch.tensormap [%0];\n" ::"l"(mx) : "memory");
    asm volatile("prefetch.tensormap [%0];\n" ::"l"(mw) : "memory");
  }
  // Clusters: the peer's barriers are initialized before any multicast or remote arrive reaches them.
  if (CLUSTER > 1) cluster_sync();
  else __syncthreads();
  pdl_start();
  if (wg == 0) {
    asm volatile("setmaxnreg.dec.sync.aligned.u32 56;\n");
    if (threadIdx.x == 0)
      im2col_produce<BN, STAGES, MmaOperand<DT>::ES, RANK, RESIDENT, CLUSTER, EPI_BYTES, ProbeTiledAOf<Config>::value,
                     ALONG_N, DGRAD, X3>(P, mx, mw, base);
    else if (X3 && threadIdx.x >= 32)
      tf32x3_split<S, STAGES>(base, UnitWalk{(i64)P.tiles_m * P.tiles_n, im2col_ktiles<S::BK>(P), P.splits, 0},
                              (int)threadIdx.x - 32);
  } else if constexpr (RESIDENT) {
    asm volatile("setmaxnreg.inc.sync.aligned.u32 224;\n");
    im2col_consume_resident<DT, BN, STAGES, SPLIT, Ep, DGRAD>(P, p, base, wg - 1, red);
  } else {
    asm volatile("setmaxnreg.inc.sync.aligned.u32 224;\n");
    const ConsumerShape sh{(i64)P.tiles_m * P.tiles_n, P.tiles_m, P.tiles_n, im2col_ktiles<S::BK>(P), P.M, P.N,
                           P.epi_vec, (const GemmParams*)0, P.splits, static_cast<float*>(P.ws), my,
                           DGRAD ? &P.rows : (const SubgridRows*)0, DGRAD ? P.out[2] : 0};
    wgmma_consume<DT, BN, STAGES, true, !DGRAD, false, PINGPONG, Ep, SPLIT, CLUSTER, EPI, ALONG_N, SPLIT_CLUSTER, X3>(
        sh, p, base, smem_pointer(base), wg - 1, red);
  }
  Ep::finish_full(p, red);
  // No CTA exits while its peer may still multicast into it or arrive on its "empty" barriers.
  if (CLUSTER > 1) cluster_sync();
}

}  // namespace dg
