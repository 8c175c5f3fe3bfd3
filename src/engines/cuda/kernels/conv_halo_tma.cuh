// Convolution forward over halo tiles (sm_90a, unit strides, 16-bit inputs): each activation
// pixel crosses L2 into a CTA once per channel block instead of once per filter tap.
//
// The output plane (Ho x Wo pixels of one image and output depth) is walked as a "virtual" grid
// of Ho rows x Wv columns, Wv = Wo + (S - 1) x dilation: virtual pixel v = h x Wv + w. A tile is
// 128 consecutive virtual pixels of one plane. One tiled TMA load per (depth tap, channel block)
// brings the tile's halo: a box of 64 channels x Wv input columns (from -pad) x box_rows input
// rows, zero-filled outside the input. In that box, the input under virtual pixel v for tap
// (r, s) sits at box pixel v - v_first + r x dil_h x Wv + s x dil_w: every tap's A operand is the
// same box read from a start shifted by whole 128-byte rows. The 128-byte swizzle is a function
// of the shared-memory address (TMA writes it from the 1024-byte-aligned box), so a wgmma
// descriptor may start at any row of it. Virtual pixels with w >= Wo (or past the last row) are
// computed and dropped by the epilogue (HaloTiles' output_row).
//
// Rings: halo boxes (HALO_STAGES of stage_bytes each, bytes known at launch) and filter tiles
// (STAGES of BN x 128 bytes, one per (tap, channel block) k step), each with full/empty barriers.
// Warpgroup 0's warps 0 and 1 produce (one thread each: boxes, filters); warpgroups 1 and 2
// each compute 64 virtual rows of the 128 x BN tile and run the epilogue.
#pragma once
#include "conv_implicit_gemm.cuh"
#include "gemm_wgmma.cuh"

namespace dg {

// The halo geometry of a launch. Mirrored by src/engines/cuda/conv/conv_halo_view.hpp.
struct HaloTiles {
  int wv;               // virtual columns: Wo + (S - 1) x dil_w
  int box_rows;         // input rows per halo box
  int tiles_per_plane;  // ceil(Ho x Wv / 128)
  int stage_bytes;      // one halo box's shared memory (1024-aligned)
  int box_bytes;        // the bytes its load delivers (64 channels x Wv x box_rows x 2)
  int ho, wo;           // the real output plane
  int pad_;
  u64 div_plane;        // fast_div magic of tiles_per_plane x 128 (virtual rows per plane)
  u64 div_wv;           // fast_div magic of wv
};

// The register epilogue's output (epilogue=1): the stored tensor and its row stride in bytes.
// Mirrored by src/engines/cuda/conv/conv_halo_view.hpp.
struct HaloOutput {
  char* y;
  i64 row_bytes;
};

// Virtual GEMM row m -> the output row it is (plane x Ho x Wo + h x Wo + w), or -1 where it
// is one of the virtual grid's padding pixels; epilogue_tile's row map (rows are below 2^31).
__device__ __forceinline__ i64 output_row(const HaloTiles& t, i64 m) {
  const u32 per_plane = (u32)t.tiles_per_plane * 128u;
  const u32 plane = fast_div((u32)m, t.div_plane), v = (u32)m - plane * per_plane;
  const u32 h = fast_div(v, t.div_wv), w = v - h * (u32)t.wv;
  if (h >= (u32)t.ho || w >= (u32)t.wo) return -1;
  return ((i64)plane * t.ho + h) * t.wo + w;
}

// Shared memory: the halo ring at 0, the filter ring after it, the epilogue's staging, then the
// barriers (halo full/empty, filter full/empty). Offsets depend on the launch's stage_bytes.
template <int BN, int HALO_STAGES, int STAGES>
struct HaloSmem {
  static constexpr int BM = 128, BK = 64, K_STEPS = 4, B_BYTES = BN * 128;
  static constexpr int EPI_COLS = 32, EPI_LD = EPI_COLS + 4, EPI_BYTES = 2 * 64 * EPI_LD * 4;
  static __device__ __forceinline__ u32 b_stage(u32 base, const HaloTiles& t, int s) {
    return base + HALO_STAGES * t.stage_bytes + s * B_BYTES;
  }
  static __device__ __forceinline__ u32 epi(const HaloTiles& t) { return HALO_STAGES * t.stage_bytes + STAGES * B_BYTES; }
  static __device__ __forceinline__ u32 halo_full(u32 base, const HaloTiles& t, int s) {
    return base + epi(t) + EPI_BYTES + 8 * s;
  }
  static __device__ __forceinline__ u32 halo_empty(u32 base, const HaloTiles& t, int s) {
    return halo_full(base, t, HALO_STAGES + s);
  }
  static __device__ __forceinline__ u32 b_full(u32 base, const HaloTiles& t, int s) {
    return halo_full(base, t, 2 * HALO_STAGES + s);
  }
  static __device__ __forceinline__ u32 b_empty(u32 base, const HaloTiles& t, int s) {
    return halo_full(base, t, 2 * HALO_STAGES + STAGES + s);
  }
};

// A ring position: slot and the parity of its current trip.
template <int N>
struct RingSlot {
  int s = 0;
  u32 phase = 0;
  __device__ __forceinline__ void next() {
    if (++s == N) {
      s = 0;
      phase ^= 1;
    }
  }
};

// The tile's plane (image x output depth) and first virtual pixel.
__device__ __forceinline__ void halo_tile(const HaloTiles& t, int tm, int& plane, int& v0) {
  plane = tm / t.tiles_per_plane;
  v0 = (tm - plane * t.tiles_per_plane) * 128;
}

__device__ __forceinline__ uint4 ld_shared_v4(u32 addr) {
  uint4 v;
  asm volatile("ld.shared.v4.b32 {%0, %1, %2, %3}, [%4];\n" : "=r"(v.x), "=r"(v.y), "=r"(v.z), "=r"(v.w) : "r"(addr));
  return v;
}
__device__ __forceinline__ u16 ld_shared_u16(u32 addr) {
  u16 v;
  asm volatile("ld.shared.u16 %0, [%1];\n" : "=h"(v) : "r"(addr));
  return v;
}

// The register epilogue of one warpgroup's m64 x BN block (first element (m0, n0)), a 64-column
// box at a time: the chain applied in registers (per-channel loads only: the host's rule), the
// box written 128-byte swizzled to the warpgroup's 8 KB slot, then copied out row by row in
// 16-byte stores, 8 threads a row, skipping the virtual grid's padding rows (a TMA store's box
// cannot). The host allows no full reductions here: the padding rows would feed them.
template <class Ep, int BN>
__device__ __forceinline__ void halo_store_block(const PointwiseParams& p, typename Ep::Index (&c)[Ep::kRank],
                                                 const float* acc, u32 slot, const HaloTiles& t, const HaloOutput& o,
                                                 i64 m0, i64 n0, i64 M, i64 N, int vec, float* red, int bar) {
  constexpr int BOXES = BN / 64;
  const int tid = (int)threadIdx.x % 128;
#pragma unroll 1
  for (int b = 0; b < BOXES; ++b) {
    float v[32];
    copy_box<BOXES>(acc, b, v);
    epilogue_tma_apply<Ep, 64>(p, c, v, m0, n0 + 64 * b, M, N, vec, red);
    epilogue_tma_write_values<Ep, 1>(v, slot, bar);  // (its barrier first: the last box's copy is done)
    epilogue_bar(bar);
#pragma unroll
    for (int i = 0; i < 4; ++i) {
      const int q = tid + 128 * i, row = q >> 3, chunk = q & 7;
      const i64 out = output_row(t, m0 + row), col = n0 + 64 * b + 8 * chunk;
      if (out < 0 || col >= N) continue;
      const u32 src = slot + (u32)(row * 128 + ((chunk ^ (row & 7)) * 16));
      char* dst = o.y + out * o.row_bytes + col * 2;
      if (col + 8 <= N) {
        *reinterpret_cast<uint4*>(dst) = ld_shared_v4(src);
      } else {
        for (int e = 0; e < (int)(N - col); ++e) *reinterpret_cast<u16*>(dst + 2 * e) = ld_shared_u16(src + 2 * e);
      }
    }
  }
}

// A producer thread, walking the CTA's tiles in the consumers' order: BOXES, per tile and (depth
// tap, channel block) one halo box; else the filter tiles, one per (r, s) tap of each. Two threads
// (warps 0 and 1 of the producer warpgroup) run the two streams, so that the next tile's box is
// not queued behind this tile's filter loads, which wait for the ring's slots.
template <int BN, int HALO_STAGES, int STAGES, bool BOXES>
__device__ __forceinline__ void halo_produce(const ConvParams& P, const HaloTiles& t, const TmaDesc* mx,
                                             const TmaDesc* mw, u32 base) {
  typedef HaloSmem<BN, HALO_STAGES, STAGES> S;
  const int cb = (P.C + S::BK - 1) / S::BK;
  const i64 tiles = (i64)P.tiles_m * P.tiles_n;
  RingSlot<HALO_STAGES> a;
  RingSlot<STAGES> w;
  for (i64 u = blockIdx.x; u < tiles; u += gridDim.x) {
    i64 b;
    int tm, tn, plane, v0;
    tile_coords(u, P.tiles_m, P.tiles_n, b, tm, tn);
    halo_tile(t, tm, plane, v0);
    const int o = plane % P.out[0], n = plane / P.out[0];
    const int h0 = v0 / t.wv - P.pad[1];  // the box's first input row
    for (int ft = 0; ft < P.filt[0]; ++ft)
      for (int c = 0; c < cb; ++c) {
        if constexpr (BOXES) {
          const u32 full = S::halo_full(base, t, a.s);
          mbar_wait(S::halo_empty(base, t, a.s), a.phase ^ 1);
          mbar_expect_tx(full, (u32)t.box_bytes);
          tma_load_5d(base + a.s * t.stage_bytes, mx, full, c * S::BK, -P.pad[2], h0, o - P.pad[0] + ft * P.dil[0], n);
          a.next();
        } else {
          for (int fr = 0; fr < P.filt[1]; ++fr)
            for (int fs = 0; fs < P.filt[2]; ++fs) {
              const u32 bf = S::b_full(base, t, w.s);
              mbar_wait(S::b_empty(base, t, w.s), w.phase ^ 1);
              mbar_expect_tx(bf, S::B_BYTES);
              tma_load_3d(S::b_stage(base, t, w.s), mw, bf, c * S::BK, (ft * P.filt[1] + fr) * P.filt[2] + fs, tn * BN);
              w.next();
            }
        }
      }
  }
}

// A consumer warpgroup (cw 0 or 1: virtual rows cw x 64.. of every tile). Each k step multiplies
// the halo box from the tap's shifted row by the tap's filter tile; a filter slot is released
// once the next step's products are issued and the previous ones done (wgmma_wait<1>), a halo
// slot likewise after the first step of the next box. (A flat k loop with the tap decoded per step,
// and the register epilogue issuing the next tile's first step before its stores, ran 25-45%
// slower on an H100, 2026-12-06: ptxas injected a warpgroup.wait into the register epilogue's
// form, and the staged form lost as much without one; the nested loops are kept.)
template <int DT, int BN, int HALO_STAGES, int STAGES, class Ep, int EPI>
__device__ __forceinline__ void halo_consume(const ConvParams& P, const HaloTiles& t, const HaloOutput& o,
                                             const PointwiseParams& p, u32 base, int cw, float* red) {
  typedef HaloSmem<BN, HALO_STAGES, STAGES> S;
  constexpr int REGS = BN / 2;
  const int cb = (P.C + S::BK - 1) / S::BK;
  const int lane = (int)threadIdx.x % 32;
  const i64 tiles = (i64)P.tiles_m * P.tiles_n;
  RingSlot<HALO_STAGES> a;
  RingSlot<STAGES> w;
  float acc[REGS];
  for (i64 u = blockIdx.x; u < tiles; u += gridDim.x) {
    i64 b;
    int tm, tn, plane, v0;
    tile_coords(u, P.tiles_m, P.tiles_n, b, tm, tn);
    halo_tile(t, tm, plane, v0);
    // This warpgroup's first virtual pixel as a row of the box (which starts at input row v0 / Wv - pad).
    const int row0 = v0 % t.wv + cw * 64;
    int prev_w = -1, prev_a = -1;
    bool first = true;
    for (int ft = 0; ft < P.filt[0]; ++ft)
      for (int c = 0; c < cb; ++c) {
        mbar_wait(S::halo_full(base, t, a.s), a.phase);
        const u32 box = base + a.s * t.stage_bytes;
        for (int fr = 0; fr < P.filt[1]; ++fr)
          for (int fs = 0; fs < P.filt[2]; ++fs) {
            mbar_wait(S::b_full(base, t, w.s), w.phase);
            const u32 a_tile = box + (u32)(row0 + fr * P.dil[1] * t.wv + fs * P.dil[2]) * 128u;
            const u32 b_tile = S::b_stage(base, t, w.s);
            wgmma_fence();
#pragma unroll
            for (int kk = 0; kk < S::K_STEPS; ++kk)
              wgmma_tile<DT, BN, false, false>(acc, smem_desc(a_tile + 32 * kk, 16, 1024),
                                               smem_desc(b_tile + 32 * kk, 16, 1024), (first && kk == 0) ? 0 : 1);
            wgmma_commit();
            first = false;
            wgmma_wait<1>();  // the previous step's products are done: its slots can be refilled
            if (prev_w >= 0) wgmma_release<1>(S::b_empty(base, t, prev_w), lane);
            if (prev_a >= 0) wgmma_release<1>(S::halo_empty(base, t, prev_a), lane);
            prev_w = w.s;
            prev_a = -1;
            w.next();
          }
        prev_a = a.s;  // released after the next step's wait, or below
        a.next();
      }
    wgmma_wait<0>();
    if (prev_w >= 0) wgmma_release<1>(S::b_empty(base, t, prev_w), lane);
    if (prev_a >= 0) wgmma_release<1>(S::halo_empty(base, t, prev_a), lane);
    if (first) zero_accumulators(acc);  // no k step (C = 0)
    typename Ep::Index ci[Ep::kRank];
#pragma unroll
    for (int d = 0; d < Ep::kRank; ++d) ci[d] = 0;
    const i64 virtual_rows = (i64)P.tiles_m * S::BM;
    if constexpr (EPI == EPI_TMA_STORE) {
      halo_store_block<Ep, BN>(p, ci, acc, base + S::epi(t) + cw * 8192, t, o, (i64)tm * S::BM + cw * 64, (i64)tn * BN,
                               virtual_rows, P.N, P.epi_vec, red, 1 + cw);
      continue;
    }
    float* stage = reinterpret_cast<float*>(smem_pointer(base + S::epi(t))) + cw * 64 * S::EPI_LD;
    epilogue_staged_block<Ep, BN, S::EPI_COLS, S::EPI_LD>(p, ci, acc, stage, (i64)tm * S::BM + cw * 64, (i64)tn * BN,
                                                          virtual_rows, P.N, P.epi_vec, red, cw, &t);
  }
}

// The generated kernel calls this with its configuration: kDataType (16-bit), kTileN (64 or
// 128), kStages (the filter ring), kHaloStages, kEpilogue (EPI_STAGED, or EPI_TMA_STORE: the
// register epilogue, stored through `o`) and the Epilogue.
template <class Config>
__device__ __forceinline__ void conv_fprop_halo(const ConvParams& P, const HaloTiles& t, const HaloOutput& o,
                                                const PointwiseParams& p, const TmaDesc* mx, const TmaDesc* mw) {
  constexpr int DT = Config::kDataType, BN = Config::kTileN, STAGES = Config::kStages, HALO = Config::kHaloStages;
  constexpr int EPI = EpilogueModeOf<Config>::value;
  static_assert(MmaOperand<DT>::ES == 2, "halo tiles hold 64 channels of 16-bit inputs per 128-byte row");
  static_assert(EPI == EPI_STAGED || EPI == EPI_TMA_STORE, "halo tiles: the staged or the register epilogue");
  typedef HaloSmem<BN, HALO, STAGES> S;
  typedef typename Config::Epilogue Ep;
  const u32 base = swizzle_aligned_smem();
  const int wg = (int)threadIdx.x / 128;
  float red[Ep::kFull > 0 ? Ep::kFull : 1];
  Ep::init_full(red);
  if (threadIdx.x == 0) {
    // full: the producer's expect_tx; empty: one arrival per consumer warp (wgmma_release)
    for (int s = 0; s < HALO; ++s) {
      mbar_init(S::halo_full(base, t, s), 1);
      mbar_init(S::halo_empty(base, t, s), EmptyArrivals<1, false>::value);
    }
    for (int s = 0; s < STAGES; ++s) {
      mbar_init(S::b_full(base, t, s), 1);
      mbar_init(S::b_empty(base, t, s), EmptyArrivals<1, false>::value);
    }
    asm volatile("fence.mbarrier_init.release.cluster;\n" ::: "memory");
    asm volatile("prefetch.tensormap [%0];\n" ::"l"(mx) : "memory");
    asm volatile("prefetch.tensormap [%0];\n" ::"l"(mw) : "memory");
  }
  __syncthreads();
  pdl_start();
  if (wg == 0) {
    asm volatile("setmaxnreg.dec.sync.aligned.u32 56;\n");
    if (threadIdx.x == 0) halo_produce<BN, HALO, STAGES, true>(P, t, mx, mw, base);
    if (threadIdx.x == 32) halo_produce<BN, HALO, STAGES, false>(P, t, mx, mw, base);
  } else {
    asm volatile("setmaxnreg.inc.sync.aligned.u32 224;\n");
    halo_consume<DT, BN, HALO, STAGES, Ep, EPI>(P, t, o, p, base, wg - 1, red);
  }
  Ep::finish_full(p, red);
}

}  // namespace dg
