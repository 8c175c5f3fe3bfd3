// The Hopper flash-attention forward core (sm_90a), FA3-style. One block of three warpgroups per
// (query block of 128 rows, head, batch): warpgroup 0 produces (one thread issues every TMA load:
// the Q block once, then K and V tiles into a STAGES-deep ring, each completing on its own
// mbarrier); warpgroups 1 and 2 each own 64 query rows and consume: S = Q K^T with wgmma (both
// operands in shared memory), the online softmax in registers, O += P V with wgmma (P from
// registers, V N-major in shared memory). With OVERLAP, S for the next tile is issued before
// P V of the current one, so the softmax of one tile runs while the tensor cores work on P V.
// With PINGPONG the two consumer warpgroups also take turns issuing their GEMMs (two named
// barriers), so one warpgroup's softmax runs while the other's GEMMs hold the tensor cores.
//
// Shared memory (128-byte swizzle, every tile 1024-byte aligned): a tile of R rows and D (head dim
// rounded up to 64) columns is D / 64 TMA boxes of R rows x 64 columns (128 bytes a row), box c at
// c * R * 128. wgmma descriptors: K-major (Q, K): SBO 1024 (8-row groups), k16 steps +32 bytes
// inside a box; N-major (V): LBO = R * 128 (next 64 columns), SBO 1024, k16 steps +2048 bytes.
#pragma once
#include "sdpa_common.cuh"
#include "sdpa_wgmma_ops.cuh"

namespace dg {

template <int D, int BN, int STAGES>
struct WgSdpaSmem {
  static constexpr int BM = 128, BOXES = D / 64;
  static constexpr int Q_BYTES = BM * D * 2, KV_BYTES = BN * D * 2;
  static constexpr int K_OFF = Q_BYTES, V_OFF = K_OFF + STAGES * KV_BYTES;
  // Barriers: q_full, q_empty, then k_full, v_full, k_empty, v_empty (STAGES each).
  static constexpr int BAR_OFF = V_OFF + STAGES * KV_BYTES;
  static constexpr int BYTES = BAR_OFF + 8 * (2 + 4 * STAGES) + 1024;  // + alignment slack
  static_assert(D % 64 == 0 && (BN == 64 || BN == 128), "D is whole 64-column boxes; S tiles 64 or 128 keys");
  static_assert(Q_BYTES % 1024 == 0 && KV_BYTES % 1024 == 0, "tiles stay 1024-byte aligned");
  __device__ static u32 q_full(u32 base) { return base + BAR_OFF; }
  __device__ static u32 q_empty(u32 base) { return base + BAR_OFF + 8; }
  __device__ static u32 k_full(u32 base, int s) { return base + BAR_OFF + 8 * (2 + s); }
  __device__ static u32 v_full(u32 base, int s) { return base + BAR_OFF + 8 * (2 + STAGES + s); }
  __device__ static u32 k_empty(u32 base, int s) { return base + BAR_OFF + 8 * (2 + 2 * STAGES + s); }
  __device__ static u32 v_empty(u32 base, int s) { return base + BAR_OFF + 8 * (2 + 3 * STAGES + s); }
};

// Where a block's tiles sit in the K/V ring and which use of the Q buffer it is: a persistent block
// runs several query blocks, and the ring and the Q barriers carry on from one to the next.
// The ring position is kept modulo two trips around the ring (all the stage and its phase depend
// on), so it never grows with the number of query blocks a persistent block runs.
struct RingPos {
  int ring;  // K/V tiles loaded (consumed) before this query block's first, modulo 2 x STAGES
  u32 q;     // query blocks with any key tile before this one (the Q barriers' phase)
  __device__ int stage(int it, int stages) const { return (ring + it) % stages; }
  __device__ u32 phase(int it, int stages) const { return (u32)((ring + it) / stages) & 1u; }
  __device__ void advance(int tiles, int stages) {
    ring = (ring + tiles) % (2 * stages);
    ++q;
  }
};

// The producer thread: Q once (after the previous query block's last Q K^T), then K and V of every
// visible tile, last tile first.
template <int D, int BN, int STAGES>
__device__ __forceinline__ void wg_sdpa_produce(const TmaDesc* mq, const TmaDesc* mk, const TmaDesc* mv, u32 base,
                                                int m0, int h, int kh, int b, const KeyTiles& kt, RingPos rp) {
  typedef WgSdpaSmem<D, BN, STAGES> S;
  mbar_wait(S::q_empty(base), (rp.q & 1u) ^ 1u);
  mbar_expect_tx(S::q_full(base), S::Q_BYTES);
#pragma unroll
  for (int c = 0; c < S::BOXES; ++c) tma_load_4d(base + c * S::BM * 128, mq, S::q_full(base), 64 * c, m0, h, b);
  const int top = kt.first + kt.count - 1;
#pragma unroll 1
  for (int it = 0; it < kt.count; ++it) {
    const int s = rp.stage(it, STAGES);
    const u32 phase = rp.phase(it, STAGES);
    const int n0 = (top - it) * BN;
    const u32 k_dst = base + S::K_OFF + s * S::KV_BYTES, v_dst = base + S::V_OFF + s * S::KV_BYTES;
    mbar_wait(S::k_empty(base, s), phase ^ 1u);
    mbar_expect_tx(S::k_full(base, s), S::KV_BYTES);
#pragma unroll
    for (int c = 0; c < S::BOXES; ++c) tma_load_4d(k_dst + c * BN * 128, mk, S::k_full(base, s), 64 * c, n0, kh, b);
    mbar_wait(S::v_empty(base, s), phase ^ 1u);
    mbar_expect_tx(S::v_full(base, s), S::KV_BYTES);
#pragma unroll
    for (int c = 0; c < S::BOXES; ++c) tma_load_4d(v_dst + c * BN * 128, mv, S::v_full(base, s), 64 * c, n0, kh, b);
  }
}

// S (64 rows of this warpgroup x BN keys) = Q K^T. Descriptors are built once per tile and stepped
// by constants: a descriptor's address field counts 16 bytes and every shared address here is below
// 2^18, so adding (bytes >> 4) never carries out of it.
template <int DT, int D, int BN, int STAGES>
__device__ __forceinline__ void wg_issue_qk(float (&s)[BN / 2], u32 base, int cw, int stage) {
  typedef WgSdpaSmem<D, BN, STAGES> S;
  const u64 q0 = smem_desc(base + cw * 64 * 128, 16, 1024);
  const u64 k0 = smem_desc(base + S::K_OFF + stage * S::KV_BYTES, 16, 1024);
#pragma unroll
  for (int kk = 0; kk < D / 16; ++kk) {
    const int box = kk / 4, step = 32 * (kk % 4);
    wgmma_ss<DT, BN>(s, q0 + ((box * S::BM * 128 + step) >> 4), k0 + ((box * BN * 128 + step) >> 4), kk > 0 ? 1 : 0);
  }
}

// O (64 rows x D) (+)= P V; `accumulate` 0 overwrites O (the first tile).
template <int DT, int D, int BN, int STAGES>
__device__ __forceinline__ void wg_issue_pv(float (&o)[D / 2], const u32 (&pa)[BN / 16][4], u32 base, int stage,
                                            int accumulate) {
  typedef WgSdpaSmem<D, BN, STAGES> S;
  const u64 v0 = smem_desc(base + S::V_OFF + stage * S::KV_BYTES, BN * 128, 1024);
#pragma unroll
  for (int kk = 0; kk < BN / 16; ++kk) wgmma_rs<DT, D>(o, pa[kk], v0 + ((2048 * kk) >> 4), (accumulate || kk > 0) ? 1 : 0);
}

// A consumer warpgroup frees a K, V or Q buffer once its wgmma reads of it have completed
// (wgmma.wait_group waits for the whole warpgroup's operations): one arrival per warpgroup, as
// CUTLASS's pipelines do, not one per thread (S2: 8.9 M mbarrier operations against cuDNN's 1.6 M).
__device__ __forceinline__ void wg_release(u32 bar) {
  if (threadIdx.x % 128 == 0) mbar_arrive(bar);
}

// Softmax of one tile: the band applied only where the tile needs it.
template <int BN, bool NEG>
__device__ __forceinline__ void wg_softmax(float (&s)[BN / 2], RowState& st, float (&corr)[2], const SdpaBand& bd,
                                           const KeyTiles& kt, int m0, int row0, int n0, float scale_log2) {
  if (tile_needs_mask(bd, m0, kt.last_row, n0, BN)) softmax_tile<BN, true, NEG>(s, st, corr, bd, row0, n0, scale_log2);
  else softmax_tile<BN, false, NEG>(s, st, corr, bd, row0, n0, scale_log2);
}

// Ping-pong turns: warpgroup cw waits on barrier 1 + cw before issuing a tile's GEMMs and lets the
// other one go after. Each wait (128 threads) pairs with one arrival (128 threads) of the other
// warpgroup; warpgroup 1 arrives once up front (warpgroup 0 goes first) and skips its last
// arrival, so both barriers end balanced whatever the tile count.
template <bool PINGPONG>
__device__ __forceinline__ void pingpong_start(int cw) {
  if (PINGPONG && cw == 1) named_barrier_arrive(1, 256);
}
template <bool PINGPONG>
__device__ __forceinline__ void turn_begin(int cw) {
  if (PINGPONG) named_barrier_sync(1 + cw, 256);
}
template <bool PINGPONG>
__device__ __forceinline__ void turn_end(int cw, bool last) {
  if (PINGPONG && !(cw == 1 && last)) named_barrier_arrive(2 - cw, 256);
}

// A consumer warpgroup (cw = 0 or 1) over every tile; returns with o, st final (unnormalized).
template <int DT, int D, int BN, int STAGES, bool NEG, bool OVERLAP, bool PINGPONG>
__device__ __forceinline__ void wg_sdpa_consume(const SdpaParams& p, u32 base, int cw, int m0, int row0,
                                                const SdpaBand& bd, const KeyTiles& kt, RingPos rp, float (&o)[D / 2],
                                                RowState& st) {
  typedef WgSdpaSmem<D, BN, STAGES> S;
  const int top = kt.first + kt.count - 1;
  mbar_wait(S::q_full(base), rp.q & 1u);
  float s[BN / 2];
  u32 pa[BN / 16][4];
  float corr[2];
  if constexpr (!OVERLAP) {
#pragma unroll 1
    for (int it = 0; it < kt.count; ++it) {
      const int stage = rp.stage(it, STAGES);
      const u32 phase = rp.phase(it, STAGES);
      const int n0 = (top - it) * BN;
      mbar_wait(S::k_full(base, stage), phase);
      wgmma_fence();
      wg_issue_qk<DT, D, BN, STAGES>(s, base, cw, stage);
      wgmma_commit();
      wgmma_wait<0>();
      wg_release(S::k_empty(base, stage));
      wg_softmax<BN, NEG>(s, st, corr, bd, kt, m0, row0, n0, p.scale_log2);
      rescale_rows<D>(o, corr);
      pack_p<DT, BN>(s, pa);
      mbar_wait(S::v_full(base, stage), phase);
      wgmma_fence();
      wg_issue_pv<DT, D, BN, STAGES>(o, pa, base, stage, it > 0);
      wgmma_commit();
      wgmma_wait<0>();
      wg_release(S::v_empty(base, stage));
    }
    wg_release(S::q_empty(base));
  } else {
    // Tile 0: S, softmax, P. Then for each further tile: issue S(it) and P(it-1) V(it-1), wait for
    // S(it) only, softmax it while P V runs, then wait for P V, rescale O and pack P(it).
    pingpong_start<PINGPONG>(cw);
    const int stage0 = rp.stage(0, STAGES);
    mbar_wait(S::k_full(base, stage0), rp.phase(0, STAGES));
    turn_begin<PINGPONG>(cw);
    wgmma_fence();
    wg_issue_qk<DT, D, BN, STAGES>(s, base, cw, stage0);
    wgmma_commit();
    turn_end<PINGPONG>(cw, kt.count == 1);
    wgmma_wait<0>();
    wg_release(S::k_empty(base, stage0));
    wg_softmax<BN, NEG>(s, st, corr, bd, kt, m0, row0, top * BN, p.scale_log2);
    pack_p<DT, BN>(s, pa);
#pragma unroll 1
    for (int it = 1; it < kt.count; ++it) {
      const int stage = rp.stage(it, STAGES), prev = rp.stage(it - 1, STAGES);
      const u32 phase = rp.phase(it, STAGES), prev_phase = rp.phase(it - 1, STAGES);
      const int n0 = (top - it) * BN;
      mbar_wait(S::k_full(base, stage), phase);
      mbar_wait(S::v_full(base, prev), prev_phase);
      turn_begin<PINGPONG>(cw);
      wgmma_fence();
      wg_issue_qk<DT, D, BN, STAGES>(s, base, cw, stage);
      wgmma_commit();
      wg_issue_pv<DT, D, BN, STAGES>(o, pa, base, prev, it > 1);
      wgmma_commit();
      turn_end<PINGPONG>(cw, it == kt.count - 1);
      wgmma_wait<1>();
      wg_release(S::k_empty(base, stage));
      wg_softmax<BN, NEG>(s, st, corr, bd, kt, m0, row0, n0, p.scale_log2);
      wgmma_wait<0>();
      wg_release(S::v_empty(base, prev));
      rescale_rows<D>(o, corr);
      pack_p<DT, BN>(s, pa);
    }
    wg_release(S::q_empty(base));  // every Q K^T of this query block has completed
    const int last = rp.stage(kt.count - 1, STAGES);
    mbar_wait(S::v_full(base, last), rp.phase(kt.count - 1, STAGES));
    wgmma_fence();
    wg_issue_pv<DT, D, BN, STAGES>(o, pa, base, last, kt.count > 1);
    wgmma_commit();
    wgmma_wait<0>();
    wg_release(S::v_empty(base, last));
  }
}

// The generated kernel calls this with its configuration: kInput and kOutput (types), kHeadDim
// (padded), kKeysPerTile, kStages (the K/V ring), kNegativeScale, kOverlap, kPingpong and
// kPersistent (a grid of at most one block per SM slot; each runs a pair of consecutive query
// blocks per round, the next one's Q and first K/V tiles loading while this one finishes).
//
// The query block a block runs i-th, or -1 past the last (later ones only go further). Pairs carry
// about the same work (sdpa_block), so taking them round-robin balances the grid.
template <bool PERSISTENT>
__device__ __forceinline__ int nth_block(int i, int blocks) {
  if (!PERSISTENT) return i == 0 ? (int)blockIdx.x : -1;
  const i64 x = 2 * ((i64)blockIdx.x + (i64)(i >> 1) * gridDim.x) + (i & 1);  // may pass 2^31 past the end
  return x < blocks ? (int)x : -1;
}

template <class Config>
__device__ __forceinline__ void sdpa_wgmma(const SdpaParams& p, const TmaDesc* mq, const TmaDesc* mk,
                                           const TmaDesc* mv) {
  constexpr int DT = Config::kInput, OT = Config::kOutput, D = Config::kHeadDim, BN = Config::kKeysPerTile;
  constexpr int STAGES = Config::kStages;
  constexpr bool NEG = Config::kNegativeScale, OVERLAP = Config::kOverlap, PINGPONG = Config::kPingpong;
  static_assert(OVERLAP || !PINGPONG, "ping-pong turns are taken in the overlapped loop");
  static_assert(Config::kBlocksPerSm == 1 || !OVERLAP, "two blocks an SM leave no registers for the overlap's S");
  // kBlocksPerSm 2 (head dim 64, 64-key tiles): two blocks share an SM, so one block's Q load,
  // pipeline start and output stores hide under the other's main loop; the consumers then fit in
  // 104 registers (launch bound 80 x 384 threads: 24 for the producer, 104 for each consumer).
  constexpr int CONSUMER_REGS = Config::kBlocksPerSm == 2 ? 104 : 240;
  typedef WgSdpaSmem<D, BN, STAGES> S;
  const u32 base = swizzle_aligned_smem();
  const int wg = (int)threadIdx.x / 128;
  constexpr bool PERSISTENT = Config::kPersistent;
  const int blocks = p.m_blocks * p.h * p.b;
  if (threadIdx.x == 0) {
    mbar_init(S::q_full(base), 1);
    mbar_init(S::q_empty(base), 2);  // one arrival per consumer warpgroup (wg_release)
    for (int s = 0; s < STAGES; ++s) {
      mbar_init(S::k_full(base, s), 1);
      mbar_init(S::v_full(base, s), 1);
      mbar_init(S::k_empty(base, s), 2);
      mbar_init(S::v_empty(base, s), 2);
    }
    asm volatile("fence.mbarrier_init.release.cluster;\n" ::: "memory");
  }
  __syncthreads();
  RingPos rp{0, 0u};
  if (wg == 0) {
    asm volatile("setmaxnreg.dec.sync.aligned.u32 24;\n");
    if (threadIdx.x != 0) return;
    asm volatile("prefetch.tensormap [%0];\n" ::"l"(mq) : "memory");
    asm volatile("prefetch.tensormap [%0];\n" ::"l"(mk) : "memory");
    asm volatile("prefetch.tensormap [%0];\n" ::"l"(mv) : "memory");
#pragma unroll 1
    for (int i = 0, x; (x = nth_block<PERSISTENT>(i, blocks)) >= 0; ++i) {
      const BlockCoords blk = sdpa_block(p, S::BM, x);
      const KeyTiles kt = key_tiles(sdpa_band(p, blk.bi), blk.m0, S::BM, BN);
      if (kt.count == 0) continue;
      wg_sdpa_produce<D, BN, STAGES>(mq, mk, mv, base, blk.m0, blk.hi, blk.hi / (p.h / p.hk), blk.bi, kt, rp);
      rp.advance(kt.count, STAGES);
    }
    return;
  }
  asm volatile("setmaxnreg.inc.sync.aligned.u32 %0;\n" ::"n"(CONSUMER_REGS));
  const int cw = wg - 1;
#pragma unroll 1
  for (int i = 0, x; (x = nth_block<PERSISTENT>(i, blocks)) >= 0; ++i) {
    const BlockCoords blk = sdpa_block(p, S::BM, x);
    const SdpaBand bd = sdpa_band(p, blk.bi);
    const KeyTiles kt = key_tiles(bd, blk.m0, S::BM, BN);
    const int row0 = blk.m0 + cw * 64 + (((int)threadIdx.x / 32) % 4) * 16 + ((int)threadIdx.x % 32) / 4;
    RowState st;
    row_state_init(st);
    float o[D / 2];
#pragma unroll
    for (int j = 0; j < D / 2; ++j) o[j] = 0.0f;
    if (kt.count > 0) {
      wg_sdpa_consume<DT, D, BN, STAGES, NEG, OVERLAP, PINGPONG>(p, base, cw, blk.m0, row0, bd, kt, rp, o, st);
      rp.advance(kt.count, STAGES);
    }
    store_rows<OT, D>(p, o, st, bd, blk.bi, blk.hi, row0);
  }
}

}  // namespace dg
