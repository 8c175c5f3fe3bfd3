// The Hopper GEMM core (sm_90a): TMA loads into 128-byte-swizzled shared memory, completed on
// mbarriers; warp specialization (warpgroup 0 produces, warpgroups 1 and 2 each compute 64 rows of
// a 128 x BN tile with wgmma.mma_async); a persistent grid walking the tiles in L2-friendly order;
// the generated epilogue applied to the accumulators in registers while the producer already
// loads the next tile.
//
// Shared-memory tiles (BK = 64, so one row of k is one 128-byte swizzle row; FLOAT inputs as TF32:
// BK = 32, the same bytes, k8 instructions at the same 32-byte steps; K-major operands only):
//   K-major operand:  rows = m or n, 64 k each: one TMA box (64 x rows); wgmma descriptor SBO =
//                     1024 (8-row groups), k16 steps advance the start address by 32 bytes.
//   MN-major operand: boxes of 64 (m or n) x 64 k, one per 64 columns, 8 KB apart (LBO); 8-row k
//                     groups 1024 bytes apart (SBO); k16 steps advance by 2048 bytes.
#pragma once
#include "epilogue_tma_store.cuh"
#include "gemm_wgmma_ops.cuh"
#include "hopper_sync.cuh"
#include "splitk_fixup.cuh"
#include "tf32x3_split.cuh"

namespace dg {

// The persistent walk's unit u as a tile. CLUSTER > 1: u numbers groups of CLUSTER tiles, by
// default along m (tiles CLUSTER p + r with the same n tile and batch, L2-grouped as tile_coords
// groups single tiles) or, ALONG_N, along n (the same m tile); rank r takes the group's r-th. A
// group past the last tile gives its rank tm == tiles_m (tn == tiles_n): no tile (see the producers).
template <int CLUSTER, bool ALONG_N = false>
__device__ __forceinline__ void walk_tile(i64 u, int tiles_m, int tiles_n, i64& b, int& tm, int& tn) {
  if (CLUSTER == 1) {
    tile_coords(u, tiles_m, tiles_n, b, tm, tn);
    return;
  }
  const int r = (int)cluster_ctarank();
  int p;
  if (ALONG_N) {
    tile_coords(u, tiles_m, (tiles_n + CLUSTER - 1) / CLUSTER, b, tm, p);
    tn = CLUSTER * p + r;
  } else {
    tile_coords(u, (tiles_m + CLUSTER - 1) / CLUSTER, tiles_n, b, p, tn);
    tm = CLUSTER * p + r;
  }
}
// Units of the walk: tiles, or groups of CLUSTER tiles along m (ALONG_N: along n).
template <int CLUSTER, bool ALONG_N = false>
__device__ __forceinline__ i64 walk_units(i64 tiles, int tiles_m, int tiles_n) {
  if (CLUSTER == 1) return tiles;
  const i64 batches = tiles / ((i64)tiles_m * tiles_n);
  return ALONG_N ? batches * tiles_m * ((tiles_n + CLUSTER - 1) / CLUSTER)
                 : batches * ((tiles_m + CLUSTER - 1) / CLUSTER) * tiles_n;
}

// One m64 x BN x k16 (tf32: k8) product by operand type and tile width.
template <int DT, int BN, bool TA, bool TB>
__device__ __forceinline__ void wgmma_tile(float (&d)[BN / 2], u64 da, u64 db, int scale_d) {
  static_assert(BN == 64 || BN == 128 || BN == 256, "wgmma tiles are 64, 128 or 256 wide");
  WgmmaSs<DT, BN>::template mma<TA, TB>(d, da, db, scale_d);
}

// The staged epilogue's shared memory: per consumer warpgroup 64 rows x 32 columns of fp32 (+4
// floats of row pad). The register epilogue's: two TmaStoreTiles (epilogue_tma_store.cuh).
constexpr int kStagedEpilogueBytes = 2 * 64 * (32 + 4) * 4;

// ES: operand element bytes (2, or 4 for tf32). A k tile is one 128-byte row either way, read in
// K_STEPS instructions of 32 bytes of k. EPI_BYTES: the epilogue's region after the stages (1024-
// aligned, as every stage is). X3 (3xTF32, tf32x3_split.cuh): a stage also holds its operands'
// small parts at SMALL (A's then B's, in the same swizzled layout), and a third ring of barriers
// says they are written.
template <int BN, int STAGES, int ES = 2, int EPI_BYTES = kStagedEpilogueBytes, bool X3 = false>
struct WgmmaSmem {
  static constexpr int BM = 128, BK = 128 / ES, K_STEPS = 4;
  static constexpr int A_BYTES = BM * BK * ES, B_BYTES = BN * BK * ES;
  // LOADED: the bytes TMA writes into a stage, what its "full" barrier expects; with X3 the stage
  // is twice that (the small parts are written by threads, not counted by the barrier).
  static constexpr int LOADED = A_BYTES + B_BYTES, SMALL = LOADED;
  static constexpr int STAGE_BYTES = SMALL * (X3 ? 2 : 1);
  static constexpr int EPI_COLS = 32, EPI_LD = EPI_COLS + 4;
  static constexpr int EPI = STAGES * STAGE_BYTES;
  static constexpr int BARRIERS = EPI + EPI_BYTES;  // full[STAGES], then empty[STAGES], then (X3) split[STAGES]
  static constexpr int SPLIT_BARRIERS = BARRIERS + 16 * STAGES;
  static constexpr int BYTES = BARRIERS + (X3 ? 24 : 16) * STAGES;
};

// The epilogue region's bytes for epilogue mode EPI (EpilogueModeOf) and tile width BN.
template <int EPI, class Ep, int BN>
struct EpilogueBytes {
  static constexpr int value = kStagedEpilogueBytes;
};
template <class Ep, int BN>
struct EpilogueBytes<EPI_TMA_STORE, Ep, BN> {
  static constexpr int value = 2 * TmaStoreTile<Ep, BN>::BYTES;
};
template <class Ep, int BN>
struct EpilogueBytes<EPI_TMA_STORE_BOXED, Ep, BN> : EpilogueBytes<EPI_TMA_STORE, Ep, BN> {};

// The stage ring's barriers (thread 0, before any use): full[s] completes after `full_count`
// arrivals, empty[s] after `empty_count`.
template <class S, int STAGES>
__device__ __forceinline__ void init_stage_barriers(u32 base, u32 full_count, u32 empty_count) {
  for (int s = 0; s < STAGES; ++s) {
    mbar_init(base + S::BARRIERS + 8 * s, full_count);
    mbar_init(base + S::BARRIERS + 8 * (STAGES + s), empty_count);
  }
  asm volatile("fence.mbarrier_init.release.cluster;\n" ::: "memory");
}

// The producer: one thread issues every TMA load of every unit this CTA owns (a unit: a tile, or
// with split-K one k range of a tile). CLUSTER 2: the pair's CTAs share the B tile; each loads its
// own A and half of B (its rank's rows, or MN-major boxes), multicast into both CTAs, so each
// CTA's "full" barrier still receives A_BYTES + B_BYTES per stage. A stage is refilled only when
// the consumers of both CTAs released it (their arrivals reach both "empty" barriers). A rank-1
// CTA without a tile (odd tiles_m) runs the same protocol: its B half and barriers as usual, no A
// load (nothing is expected of it) and no epilogue.
template <int BN, int STAGES, bool A_KM, bool B_KM, int ES, int CLUSTER = 1, int EPI_BYTES = kStagedEpilogueBytes,
          bool X3 = false>
__device__ __forceinline__ void wgmma_produce(const GemmParams& g, const TmaDesc* ma, const TmaDesc* mb, u32 base) {
  typedef WgmmaSmem<BN, STAGES, ES, EPI_BYTES, X3> S;
  const int ktiles = (int)((g.K + S::BK - 1) / S::BK);
  const UnitWalk walk{walk_units<CLUSTER>(g.batch_count * g.tiles_m * g.tiles_n, g.tiles_m, g.tiles_n), ktiles,
                      g.splits, g.stream_k};
  const i64 ctas = gridDim.x / CLUSTER, units = walk.count(ctas);
  const int rank = CLUSTER > 1 ? (int)cluster_ctarank() : 0;
  int s = 0;
  u32 phase = 0;
  for (i64 u = blockIdx.x / CLUSTER; u < units; u += ctas) {
    const WorkUnit w = walk.at(u, ctas);
    if (w.tile < 0) continue;  // a stream-K share's unused segment slot
    i64 b;
    int tm, tn;
    const int kb = w.kb, ke = w.ke;
    walk_tile<CLUSTER>(w.tile, g.tiles_m, g.tiles_n, b, tm, tn);
    const bool has_a = tm < g.tiles_m;
    // The operands' batch coordinates in their maps' units.
    i64 a_off = 0, b_off = 0, rest = b;
    for (int d = g.batch_dims - 1; d >= 0; --d) {
      const i64 x = rest % g.batch_size[d];
      rest /= g.batch_size[d];
      a_off += x * g.a_batch_stride[d];
      b_off += x * g.b_batch_stride[d];
    }
    const int ab = (int)(a_off / g.a_batch_unit), bb = (int)(b_off / g.b_batch_unit);
    const int m0 = tm * S::BM, n0 = tn * BN;
    for (int kt = kb; kt < ke; ++kt) {
      const u32 full = base + S::BARRIERS + 8 * s, empty = full + 8 * STAGES;
      mbar_wait(empty, phase ^ 1);
      mbar_expect_tx(full, has_a ? S::LOADED : S::B_BYTES);
      const u32 a_dst = base + s * S::STAGE_BYTES, b_dst = a_dst + S::A_BYTES;
      const int k0 = kt * S::BK;
      if (!has_a) {
        // no tile (odd tiles_m): only the B half, which the expect_tx above counted alone
      } else if (A_KM) {
        tma_load_3d(a_dst, ma, full, k0, m0, ab);
      } else {
        tma_load_3d(a_dst, ma, full, m0, k0, ab);
        tma_load_3d(a_dst + 8192, ma, full, m0 + 64, k0, ab);
      }
      if (CLUSTER > 1 && B_KM) {  // the B map's box is BN / 2 rows
        tma_load_3d_multicast(b_dst + rank * (S::B_BYTES / 2), mb, full, k0, n0 + rank * (BN / 2), bb, 3);
      } else if (CLUSTER > 1) {
#pragma unroll
        for (int i = 0; i < BN / 128; ++i) {  // boxes rank * BN / 128 ..
          const int j = rank * (BN / 128) + i;
          tma_load_3d_multicast(b_dst + 8192 * j, mb, full, n0 + 64 * j, k0, bb, 3);
        }
      } else if (B_KM) {
        tma_load_3d(b_dst, mb, full, k0, n0, bb);
      } else {
#pragma unroll
        for (int j = 0; j < BN / 64; ++j) tma_load_3d(b_dst + 8192 * j, mb, full, n0 + 64 * j, k0, bb);
      }
      if (++s == STAGES) {
        s = 0;
        phase ^= 1;
      }
    }
  }
}

// A consumer warp is done reading a stage (its warpgroup's wgmma_wait, which every lane passes
// together): one lane arrives on the CTA's "empty" barrier, or (CLUSTER > 1) on every CTA's
// barrier of the cluster, whose stages hold pieces their peers loaded and multicast. One arrival
// per warp, not per thread: 8 barrier updates a k step instead of 256 (the SDPA kernel's 8.9 M
// mbarrier operations against cuDNN's 1.6 M, 2026-12-06).
template <int CLUSTER>
__device__ __forceinline__ void wgmma_release(u32 empty, int lane) {
  if (lane != 0) return;
  if (CLUSTER == 1) {
    mbar_arrive(empty);
  } else {
#pragma unroll
    for (int r = 0; r < CLUSTER; ++r) mbar_arrive_cluster(empty, (u32)r);
  }
}

// The "empty" barrier's count: wgmma_release's arrivals per stage, one per consumer warp of every
// CTA of the cluster (ping-pong: one warpgroup, 4 warps, reads a stage).
template <int CLUSTER, bool PINGPONG>
struct EmptyArrivals {
  static constexpr u32 value = 8u * CLUSTER / (PINGPONG ? 2 : 1);
};

// Accumulators no wgmma will write, zeroed: where K is 0 (the only case in which a unit without
// splits has no k steps) once before the tiles, since zeroing per tile costs 128 selects a tile;
// and a split unit's with no k steps.
template <int N>
__device__ __forceinline__ void zero_accumulators(float (&acc)[N]) {
#pragma unroll
  for (int i = 0; i < N; ++i) acc[i] = 0.0f;
}

// A cooperative warpgroup's staged epilogue (cw: its rows m0..m0+63 of the tile): the m64 x BN
// accumulators through shared memory EPI_COLS columns at a time (`stage`: its 64 rows x EPI_LD
// floats), each chunk applied by epilogue_staged with the rows' map `rows`. Fragment j holds rows
// r and r + 8, columns 8j + 2 * (lane % 4) + {0, 1}; the chunk loop is not unrolled, the copy is,
// every fragment's store predicated on its chunk.
template <class Ep, int BN, int EPI_COLS, int EPI_LD, class Rows>
__device__ __forceinline__ void epilogue_staged_block(const PointwiseParams& p, typename Ep::Index (&c)[Ep::kRank],
                                                      const float (&acc)[BN / 2], float* stage, i64 m0, i64 n0, i64 M,
                                                      i64 N, int vec, float* red, int cw, const Rows* rows) {
  const int lane = (int)threadIdx.x % 32, warp = ((int)threadIdx.x / 32) % 4;
  const int r = warp * 16 + (lane >> 2);
#pragma unroll 1
  for (int q = 0; q < BN / EPI_COLS; ++q) {
    named_barrier_sync(1 + cw, 128);  // the previous chunk has been read
#pragma unroll
    for (int j = 0; j < BN / 8; ++j) {
      if ((j * 8) / EPI_COLS != q) continue;
      const int col = (j * 8) % EPI_COLS + (lane & 3) * 2;
      *reinterpret_cast<float2*>(stage + r * EPI_LD + col) = make_float2(acc[4 * j], acc[4 * j + 1]);
      *reinterpret_cast<float2*>(stage + (r + 8) * EPI_LD + col) = make_float2(acc[4 * j + 2], acc[4 * j + 3]);
    }
    named_barrier_sync(1 + cw, 128);
    epilogue_staged<Ep>(p, c, stage, EPI_LD, 64, EPI_COLS, m0, n0 + q * EPI_COLS, M, N, vec, red,
                        (int)threadIdx.x % 128, 128, rows);
  }
}

// What a consumer needs to know of the problem: the tile grid, sizes and epilogue vector width,
// (matmul only) the batch for the epilogue's batch coordinates, and (split-K) the splits and the
// workspace of their partial sums.
struct ConsumerShape {
  i64 tiles;
  int tiles_m, tiles_n;
  int ktiles;
  i64 M, N;
  int epi_vec;
  const GemmParams* g;  // null: no batch dims
  int splits = 1;
  float* ws = 0;
  const TmaDesc* out_map = 0;  // register epilogues: the output as a 3D (n, m, batch) map of 64 x 64-row boxes
  const SubgridRows* rows = 0;  // staged epilogues: the rows of a strided sub-grid of the output (null: its own)
  // Register epilogues of a transposed convolution's phase: out_map is (channels, the phase's
  // width, its rows), and a block's rows m0.. lie in map row m0 / store_width from column
  // m0 % store_width (0: the map's rows are the GEMM's).
  int store_width = 0;
  int stream_k = 0;  // SPLIT: the stream-K tail's units (work_units.cuh) instead of split-K's
};

// A consumer warpgroup, cw = 0 or 1. Cooperative: rows cw*64 .. cw*64+63 of every tile. PINGPONG
// (BN = 128, or 64): whole 128-row tiles, the CTA's even tiles to warpgroup 0 and odd ones to 1, so one
// warpgroup's epilogue overlaps the other's main loop (their main loops take turns through the
// stage ring; a warpgroup finds its stages by counting the k steps of the tiles before its own).
// PROXY_FENCE: the stage was written by cp.async (the generic proxy), so order those writes before
// wgmma reads it through the async proxy. SPLIT (cooperative only): units are (tile, k range)
// pairs, and a tile's last split sums the partial sums (splitk_fixup.cuh) before the epilogue.
// EPI: the epilogue (epilogue_tma_store.cuh's modes); with SPLIT, the register epilogue runs on the
// CTA whose unit is its tile's last, once the fix-up has put the full sums in its accumulators.
// CLUSTER, ALONG_N: the producers' clusters (walk_tile); the consumers release every CTA's stage.
// SPLIT_CLUSTER (with SPLIT, one unit per CTA): a tile's splits are the CTAs of one cluster, whose
// partial sums rank 0 adds through distributed shared memory (splitk_fixup_cluster).
// X3 (FLOAT, 3xTF32): a stage is ready once its small parts are written (the split barrier), and
// each k step takes three products: big x big, big x small(B), small(A) x big, into accumulators of
// their own that are added to the tile's sums (FADD, round to nearest) once the step is done: the
// tensor cores' fp32 accumulation does not round to nearest, and over a deep k its error grew to
// ~4e-4 of the output (H100, 2026-12-07; fp32 FMA: 3e-5).
template <int DT, int BN, int STAGES, bool A_KM, bool B_KM, bool PROXY_FENCE, bool PINGPONG, class Ep,
          bool SPLIT = false, int CLUSTER = 1, int EPI = EPI_STAGED, bool ALONG_N = false, bool SPLIT_CLUSTER = false,
          bool X3 = false>
__device__ __forceinline__ void wgmma_consume(const ConsumerShape& sh, const PointwiseParams& p, u32 base,
                                              char* smem_generic, int cw, float* red) {
  typedef WgmmaSmem<BN, STAGES, MmaOperand<DT>::ES, EpilogueBytes<EPI, Ep, BN>::value, X3> S;
  static_assert(!X3 || (DT == DT_FLOAT && A_KM && B_KM && !(PINGPONG && BN == 128)),
                "3xTF32 splits K-major FLOAT operands (ping-pong: 64-wide tiles, for the step sums' registers)");
  // (The convolution engine's cores 2 and 3 also run 128 x 64 ping-pong tiles: two m64n64 accumulators.)
  static_assert(!PINGPONG || BN == 128 || BN == 64, "ping-pong tiles are 128 x 128 or 128 x 64 (two m64 accumulators)");
  static_assert(!(PINGPONG && SPLIT), "split-K units have uneven k ranges; the ping-pong stage count assumes even ones");
  static_assert(CLUSTER == 1 || !(SPLIT || PROXY_FENCE), "clusters: whole tiles of TMA loads");
  static_assert(!SPLIT_CLUSTER || (SPLIT && CLUSTER == 1), "a cluster's splits share one tile, with no multicast");
  constexpr int HALVES = PINGPONG ? 2 : 1;  // m64 row blocks per warpgroup and tile
  constexpr int REGS = BN / 2;              // accumulators per m64 block
  const int ktiles = sh.ktiles;
  const int lane = (int)threadIdx.x % 32, warp = ((int)threadIdx.x / 32) % 4;
  int s = 0;
  u32 phase = 0;
  float acc[HALVES * REGS];
  float step_acc[X3 ? HALVES * REGS : 1];  // X3: one k step's products (the wgmmas' accumulators)
  if (!SPLIT && ktiles == 0) zero_accumulators(acc);  // K = 0: no wgmma ever writes them
  i64 local = 0;  // this CTA's tile counter
  // EPI_TMA_STORE: the unit's first k step was issued by the previous tile's epilogue, from `head`.
  bool headed = false;
  int head = 0;
  // One k step from stage s: wait for its loads, issue its products (the tile's first: over
  // whatever the accumulators held), commit. The caller waits and releases.
  auto mma_step = [&](int st, u32 ph, bool first) {
    mbar_wait(base + (X3 ? S::SPLIT_BARRIERS : S::BARRIERS) + 8 * st, ph);
    if (PROXY_FENCE) asm volatile("fence.proxy.async.shared::cta;\n" ::: "memory");
    const u32 a_tile = base + st * S::STAGE_BYTES + (PINGPONG ? 0 : cw * 8192);
    const u32 b_tile = base + st * S::STAGE_BYTES + S::A_BYTES;
    wgmma_fence();
#pragma unroll
    for (int kk = 0; kk < S::K_STEPS; ++kk) {
      const u64 db = B_KM ? smem_desc(b_tile + 32 * kk, 16, 1024) : smem_desc(b_tile + 2048 * kk, 8192, 1024);
#pragma unroll
      for (int h = 0; h < HALVES; ++h) {
        const u32 a_half = a_tile + h * 8192;  // rows 64h.. : 64 rows of 128 bytes, or the next MN box
        const u64 da = A_KM ? smem_desc(a_half + 32 * kk, 16, 1024) : smem_desc(a_half + 2048 * kk, 8192, 1024);
        float(&d)[REGS] = *reinterpret_cast<float(*)[REGS]>((X3 ? step_acc : acc) + h * REGS);
        wgmma_tile<DT, BN, !A_KM, !B_KM>(d, da, db, ((first || X3) && kk == 0) ? 0 : 1);
        if constexpr (X3) {
          wgmma_tile<DT, BN, false, false>(d, da, smem_desc(b_tile + S::SMALL + 32 * kk, 16, 1024), 1);
          wgmma_tile<DT, BN, false, false>(d, smem_desc(a_half + S::SMALL + 32 * kk, 16, 1024), db, 1);
        }
      }
    }
    wgmma_commit();
  };
  const UnitWalk walk{sh.tiles, ktiles, sh.splits, sh.stream_k};
  const i64 ctas = gridDim.x / CLUSTER;
  const i64 units = SPLIT ? walk.count(ctas) : walk_units<CLUSTER, ALONG_N>(sh.tiles, sh.tiles_m, sh.tiles_n);
  for (i64 u = blockIdx.x / CLUSTER; u < units; u += ctas, ++local) {
    if (PINGPONG && (int)(local & 1) != cw) continue;
    i64 t = u, b;
    int kb = 0, ke = ktiles, tm, tn;
    WorkUnit w{};
    if constexpr (SPLIT) {
      w = walk.at(u, ctas);
      if (w.tile < 0) continue;  // a stream-K share's unused segment slot
      t = w.tile, kb = w.kb, ke = w.ke;
    }
    walk_tile<CLUSTER, ALONG_N>(t, sh.tiles_m, sh.tiles_n, b, tm, tn);
    int prev = headed ? head : -1;
    // Ping-pong: the main loops take turns. Waiting on the stage ring by parity is only sound
    // within one phase of its producer, so a warpgroup starts a tile's main loop once the other
    // has waited for every stage of the tile before (named barriers 3 and 4, 256 threads).
    if (PINGPONG && local > 0) named_barrier_sync(3 + cw, 256);
    if (PINGPONG) {  // the ring position of this tile's first k step (the other warpgroup took the ones between)
      const i64 step = local * ktiles;
      s = (int)(step % STAGES);
      phase = (u32)((step / STAGES) & 1);
    }
    for (int kt = kb + (headed ? 1 : 0); kt < ke; ++kt) {
      mma_step(s, phase, kt == kb);
      if constexpr (X3) {  // the step's products into the sums, then its stage can be refilled
        wgmma_wait<0>();
#pragma unroll
        for (int i = 0; i < HALVES * REGS; ++i) acc[i] = kt == kb ? step_acc[i] : acc[i] + step_acc[i];
        wgmma_release<CLUSTER>(base + S::BARRIERS + 8 * STAGES + 8 * s, lane);
      } else {
        wgmma_wait<1>();  // the previous k tile's products are done: its stage can be refilled
        if (prev >= 0) wgmma_release<CLUSTER>(base + S::BARRIERS + 8 * STAGES + 8 * prev, lane);
        prev = s;
      }
      if (++s == STAGES) {
        s = 0;
        phase ^= 1;
      }
    }
    headed = false;
    if (PINGPONG && u + ctas < units) named_barrier_arrive(3 + (cw ^ 1), 256);  // the next tile's turn
    wgmma_wait<0>();
    if (prev >= 0) wgmma_release<CLUSTER>(base + S::BARRIERS + 8 * STAGES + 8 * prev, lane);
    if (CLUSTER > 1 && (ALONG_N ? tn >= sh.tiles_n : tm >= sh.tiles_m)) continue;  // the group's missing tile: protocol only
    if (SPLIT && kb == ke) zero_accumulators(acc);  // a split with no k steps
    if constexpr (SPLIT_CLUSTER) {
      if (!splitk_fixup_cluster<REGS>(acc, base, w.part, sh.splits, (int)threadIdx.x - 128)) continue;
    } else if constexpr (SPLIT) {
      if (w.parts > 1 && !splitk_fixup<REGS>(acc, sh.ws, walk.split_tiles(ctas), w.slot, w.part, w.parts,
                                             walk.slot_parts(), (int)threadIdx.x - 128))
        continue;
    }
    if constexpr (EPI == EPI_PROBE_NONE) continue;
    if constexpr (kRegisterEpilogue<EPI>) {
      typedef TmaStoreTile<Ep, BN> T;
      typename Ep::Index c[Ep::kRank];
#pragma unroll
      for (int d = 0; d < Ep::kRank; ++d) c[d] = 0;
      if (sh.g) {  // a matmul's batch: the chain's coordinates, and the output map's third one
        i64 a_off, b_off;
        batch_coords<Ep>(*sh.g, b, a_off, b_off, c);
      }
      const int z = sh.g ? (int)b : 0;
      const u32 buf = base + S::EPI + cw * T::BYTES;
      // Ping-pong: the warpgroup's two m64 blocks one after the other (the other warpgroup's main
      // loop runs meanwhile). Cooperative: one block, and the accumulators are free once its last
      // box is in shared memory, so the next tile's first k step (its loads were issued during this
      // tile's main loop) goes to the tensor cores before that box's barrier and store. Not for split
      // units (split-K, the stream-K tail), 128-wide boxed chains (the conv GELU chain's) or chains
      // that reduce (AMAX, Ep::kFull) unboxed: a wgmma issued here made ptxas serialize every wgmma
      // of the kernel (C7518, C7514, which the compile tests refuse; stream-K 128 x 256 on 8192^3
      // ran 1.545 ms against 1.489 with the staged epilogue).
      auto next_first_step = [&] {
        const bool next = u + ctas < units && !SPLIT && !(EPI == EPI_TMA_STORE_BOXED && BN == 128) &&
                          !(EPI == EPI_TMA_STORE && Ep::kFull > 0);
        if (!PINGPONG && !X3 && next && ktiles > 0) {
          mma_step(s, phase, true);
          headed = true;
          head = s;
          if (++s == STAGES) {
            s = 0;
            phase ^= 1;
          }
        }
      };
#pragma unroll
      for (int h = 0; h < HALVES; ++h) {  // (unrolled: the accumulators' indices are constants)
        const i64 m0 = (i64)tm * S::BM + (PINGPONG ? h * 64 : cw * 64), n0 = (i64)tn * BN;
        // Where the block goes in the output map: (m0, z), or a phase's (column, row).
        const i64 sm = sh.store_width ? m0 % sh.store_width : m0;
        const int sz = sh.store_width ? (int)(m0 / sh.store_width) : z;
        float* block = acc + h * REGS;
        if constexpr (EPI == EPI_TMA_STORE_BOXED) {
          epilogue_tma_boxed<Ep, BN>(p, c, block, buf, sh.out_map, m0, n0, sm, sz, sh.M, sh.N, sh.epi_vec, red,
                                     1 + cw, next_first_step);
          continue;
        }
        epilogue_tma_apply<Ep, BN>(p, c, block, m0, n0, sh.M, sh.N, sh.epi_vec, red);
        TmaStoreBoxes<Ep, BN, 0, T::BOXES - 1>::run(block, buf, sh.out_map, sm, n0, sz, 1 + cw);
        epilogue_tma_write_box<Ep, BN, T::BOXES - 1>(block, buf, 1 + cw);
        next_first_step();
        epilogue_tma_store_box<Ep, BN>(buf, sh.out_map, sm, n0, sz, T::BOXES - 1, 1 + cw);
      }
      continue;
    }
    // Epilogue, 64 rows x 32 columns at a time through shared memory: fragment j of an m64 block
    // holds rows r and r + 8, columns 8j + 2 * (lane % 4) + {0, 1}. The chunk loop is not
    // unrolled; the register copy is, with every fragment's store predicated on its chunk.
    typename Ep::Index c[Ep::kRank];
#pragma unroll
    for (int d = 0; d < Ep::kRank; ++d) c[d] = 0;
    if (sh.g) {
      i64 a_off, b_off;
      batch_coords<Ep>(*sh.g, b, a_off, b_off, c);
    }
    float* stage = reinterpret_cast<float*>(smem_generic) + (S::EPI / 4) + cw * 64 * S::EPI_LD;
    const int r = warp * 16 + (lane >> 2);
    constexpr int CHUNKS = BN / S::EPI_COLS;
#pragma unroll 1
    for (int hq = 0; hq < HALVES * CHUNKS; ++hq) {
      const int hsel = hq / CHUNKS, q = hq % CHUNKS;
      named_barrier_sync(1 + cw, 128);  // the previous chunk has been read
#pragma unroll
      for (int h = 0; h < HALVES; ++h)
#pragma unroll
        for (int j = 0; j < BN / 8; ++j) {
          if (h != hsel || (j * 8) / S::EPI_COLS != q) continue;
          const int col = (j * 8) % S::EPI_COLS + (lane & 3) * 2;
          const float* a = acc + h * REGS + 4 * j;
          *reinterpret_cast<float2*>(stage + r * S::EPI_LD + col) = make_float2(a[0], a[1]);
          *reinterpret_cast<float2*>(stage + (r + 8) * S::EPI_LD + col) = make_float2(a[2], a[3]);
        }
      named_barrier_sync(1 + cw, 128);
      const i64 m0 = (i64)tm * S::BM + (PINGPONG ? hsel * 64 : cw * 64);
      // (EPI_PROBE_STAGE_ONLY: no row is in range, so only the staging above and its barriers run.)
      epilogue_staged<Ep>(p, c, stage, S::EPI_LD, 64, S::EPI_COLS, m0, (i64)tn * BN + q * S::EPI_COLS,
                          EPI == EPI_PROBE_STAGE_ONLY ? 0 : sh.M, sh.N, sh.epi_vec, red, (int)threadIdx.x % 128, 128,
                          sh.rows);
    }
  }
  if constexpr (kRegisterEpilogue<EPI>)
    if (threadIdx.x % 128 == 0) bulk_wait_all();  // the last tile's store, before the CTA exits
}

// The generated kernel calls this with its configuration: kDataType, kTileN (the tile is 128 x
// kTileN), kStages, the operands' majors (kAKMajor, kBKMajor), kPingpong, kSplitK, kCluster, kTf32x3
// (Tf32x3Of: FLOAT as 3xTF32, the producer warpgroup's warps 1-3 writing the small parts) and the
// Epilogue. kCluster 2: launched in clusters of 2 CTAs along x (__cluster_dims__ on the kernel); see
// wgmma_produce.
template <class Config>
__device__ __forceinline__ void gemm_wgmma(const GemmParams& g, const PointwiseParams& p, const TmaDesc* ma,
                                           const TmaDesc* mb, const TmaDesc* my = 0) {
  constexpr int DT = Config::kDataType, BN = Config::kTileN, STAGES = Config::kStages, CLUSTER = Config::kCluster;
  constexpr bool A_KM = Config::kAKMajor, B_KM = Config::kBKMajor, PINGPONG = Config::kPingpong, SPLIT = Config::kSplitK;
  typedef typename Config::Epilogue Ep;
  constexpr int EPI = EpilogueModeOf<Config>::value, EPI_BYTES = EpilogueBytes<EPI, Ep, BN>::value;
  constexpr bool X3 = Tf32x3Of<Config>::value;
  static_assert(!X3 || (DT == DT_FLOAT && CLUSTER == 1), "3xTF32 streams FLOAT tiles of one CTA");
  typedef WgmmaSmem<BN, STAGES, MmaOperand<DT>::ES, EPI_BYTES, X3> S;
  const u32 base = swizzle_aligned_smem();
  const int wg = (int)threadIdx.x / 128;
  float red[Ep::kFull > 0 ? Ep::kFull : 1];
  Ep::init_full(red);
  if (threadIdx.x == 0) {
    // full: the producer's expect_tx; empty: one arrival per consumer warp of every CTA
    if constexpr (X3) tf32x3_init_barriers<S, STAGES>(base);
    init_stage_barriers<S, STAGES>(base, 1, EmptyArrivals<CLUSTER, PINGPONG>::value);
    asm volatile("prefetch.tensormap [%0];\n" ::"l"(ma) : "memory");
    asm volatile("prefetch.tensormap [%0];\n" ::"l"(mb) : "memory");
  }
  // Clusters: the peer's barriers are initialized before any multicast or remote arrive reaches them.
  if (CLUSTER > 1) cluster_sync();
  else __syncthreads();
  pdl_start();
  // (3xTF32's splitting warps need more registers than the one thread issuing loads: 56 / 224.)
  if (wg == 0) {
    if constexpr (X3) asm volatile("setmaxnreg.dec.sync.aligned.u32 56;\n");
    else asm volatile("setmaxnreg.dec.sync.aligned.u32 40;\n");
    const int ktiles = (int)((g.K + S::BK - 1) / S::BK);
    if (threadIdx.x == 0)
      wgmma_produce<BN, STAGES, A_KM, B_KM, MmaOperand<DT>::ES, CLUSTER, EPI_BYTES, X3>(g, ma, mb, base);
    else if (X3 && threadIdx.x >= 32)
      tf32x3_split<S, STAGES>(base, UnitWalk{g.batch_count * g.tiles_m * g.tiles_n, ktiles, g.splits, g.stream_k},
                              (int)threadIdx.x - 32);
  } else {
    if constexpr (X3) asm volatile("setmaxnreg.inc.sync.aligned.u32 224;\n");
    else asm volatile("setmaxnreg.inc.sync.aligned.u32 232;\n");
    const ConsumerShape sh{g.batch_count * g.tiles_m * g.tiles_n, g.tiles_m, g.tiles_n, (int)((g.K + S::BK - 1) / S::BK),
                           g.M, g.N, g.epi_vec, &g, g.splits, static_cast<float*>(g.ws), my, 0, 0, g.stream_k};
    wgmma_consume<DT, BN, STAGES, A_KM, B_KM, false, PINGPONG, Ep, SPLIT, CLUSTER, EPI, false, false, X3>(
        sh, p, base, smem_pointer(base), wg - 1, red);
  }
  Ep::finish_full(p, red);
  // No CTA exits while its peer may still arrive on its "empty" barriers (every multicast into its
  // shared memory was awaited by its own consumers).
  if (CLUSTER > 1) cluster_sync();
}

}  // namespace dg
