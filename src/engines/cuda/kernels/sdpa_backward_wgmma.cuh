// The flash-attention backward on wgmma (sm_90a), FlashAttention-3's key-stationary form, in three
// phases of one kernel (SdpaBwdParams::phase), launched in order on one stream:
//  0: a warp per query row: delta = rowsum(dO * O) into the workspace, and the row's fp32 dQ sums
//     zeroed.
//  1: one block of two warpgroups per (128 keys, KV head, batch); warpgroup w owns keys
//     [64w, 64w + 64) and holds their dK and dV in registers while it walks every (head of the
//     group, 64-row query tile) that sees them. Per tile, all five GEMMs on wgmma:
//       S^T = K Q^T and dP^T = V dO^T   (both operands K-major in shared memory),
//       P^T = exp2(S^T scale_log2 - lse), dS^T = P^T (dP^T - delta)   (in registers),
//       dV += P^T dO and dK += dS^T Q   (A from registers, B N-major in shared memory),
//       dQ_tile = dS K                 (dS^T stored to shared memory, read MN-major; K N-major),
//     and the tile's dQ added to the fp32 sums in global memory by the copy engine (a TMA tensor
//     reduce-add of each warpgroup's share, staged in shared memory). Q and dO tiles arrive by TMA,
//     double-buffered; K and V once.
//  2: a warp per query row: dQ = sums x scale, in the output type.
// Unlike the mma.sync core, S and dP are computed once (five GEMMs a tile, not seven), at the price
// of dQ's sums arriving in any order: the low bits of dQ may differ run to run (NONDETERMINISTIC).
//
// Shared memory (128-byte swizzle, tiles 1024-byte aligned): a tile of R rows x D columns is
// D / 64 boxes of R rows x 128 bytes, box c at c x R x 128 (as sdpa_wgmma.cuh). dS^T is one box of
// 128 key rows x 64 query columns, written by the threads in the swizzle TMA would use.
#pragma once
#include "sdpa_backward_common.cuh"
#include "sdpa_wgmma_ops.cuh"

namespace dg {

template <int D>
struct WgBwdSmem {
  static constexpr int BK = 128, BQ = 64;  // keys per block, query rows per tile
  static constexpr int KV_BYTES = BK * D * 2, QT_BYTES = BQ * D * 2, DS_BYTES = BK * BQ * 2;
  static constexpr int K_OFF = 0, V_OFF = KV_BYTES, Q_OFF = 2 * KV_BYTES, DO_OFF = Q_OFF + 2 * QT_BYTES;
  static constexpr int DS_OFF = DO_OFF + 2 * QT_BYTES;
  static constexpr int ROWS_OFF = DS_OFF + DS_BYTES;       // [slot][lse (log2 units) x 64, delta x 64] floats
  // Per warpgroup, its dQ share (64 rows x 64 fp32 columns) as two TMA boxes of 32 columns.
  static constexpr int DQ_OFF = ROWS_OFF + 2 * 2 * BQ * 4, DQ_BOX = BQ * 128, DQ_BYTES = 2 * DQ_BOX;
  static constexpr int BAR_OFF = DQ_OFF + 2 * DQ_BYTES;      // kv_full, then q_full of the two slots
  static constexpr int BYTES = BAR_OFF + 3 * 8 + 1024;       // + alignment slack
  static_assert(D == 64 || D == 128, "the wgmma backward takes head dims padded to 64 or 128");
  __device__ static u32 kv_full(u32 base) { return base + BAR_OFF; }
  __device__ static u32 q_full(u32 base, int slot) { return base + BAR_OFF + 8 * (1 + slot); }
};

constexpr int kWgBwdThreads = 256;
constexpr int kWgBwdRowsPerBlock = kWgBwdThreads / 32;  // phases 0 and 2: a warp per row

__device__ __forceinline__ i64 bwd_row_index(const SdpaBwdParams& p, int b, int h, int i) {
  return ((i64)b * p.h + h) * p.sq + i;
}

// Phase 0: delta of one query row per warp, and its dQ sums zeroed.
template <int DT, int D>
__device__ __forceinline__ void wg_bwd_prepare(const SdpaBwdParams& p) {
  const int lane = (int)threadIdx.x % 32, hi = (int)blockIdx.y, bi = (int)blockIdx.z;
  const int i = (int)blockIdx.x * kWgBwdRowsPerBlock + (int)threadIdx.x / 32;
  if (i >= p.sq) return;
  const u16* o = static_cast<const u16*>(p.o) + bi * p.o_stride[0] + hi * p.o_stride[1] + i * p.o_stride[2];
  const u16* d_o = static_cast<const u16*>(p.d_o) + bi * p.do_stride[0] + hi * p.do_stride[1] + i * p.do_stride[2];
  float sum = 0.0f;
  for (int c = 2 * lane; c < p.d; c += 64) {  // pairs: d and the row strides are multiples of 8
    const u32 a = *reinterpret_cast<const u32*>(o + c), g = *reinterpret_cast<const u32*>(d_o + c);
    sum = fmaf(to_float<DT>((u16)(a & 0xffffu)), to_float<DT>((u16)(g & 0xffffu)), sum);
    sum = fmaf(to_float<DT>((u16)(a >> 16)), to_float<DT>((u16)(g >> 16)), sum);
  }
#pragma unroll
  for (int m = 16; m > 0; m >>= 1) sum += __shfl_xor_sync(0xffffffffu, sum, m);
  const i64 row = bwd_row_index(p, bi, hi, i);
  if (lane == 0) p.delta[row] = sum;
  float4* acc = reinterpret_cast<float4*>(p.dq_accum + row * D);
  for (int c = lane; c < D / 4; c += 32) acc[c] = make_float4(0.0f, 0.0f, 0.0f, 0.0f);
}

// Phase 2: dQ = sums x scale for one query row per warp.
template <int OT, int D>
__device__ __forceinline__ void wg_bwd_store_dq(const SdpaBwdParams& p) {
  const int lane = (int)threadIdx.x % 32, hi = (int)blockIdx.y, bi = (int)blockIdx.z;
  const int i = (int)blockIdx.x * kWgBwdRowsPerBlock + (int)threadIdx.x / 32;
  if (i >= p.sq || !p.dq) return;
  const float* acc = p.dq_accum + bwd_row_index(p, bi, hi, i) * D;
  const i64 off = bi * p.dq_stride[0] + hi * p.dq_stride[1] + i * p.dq_stride[2];
  for (int c = 2 * lane; c < p.d; c += 64) {
    const float2 v = *reinterpret_cast<const float2*>(acc + c);
    store_pair<OT>(p.dq, off + c, v.x * p.scale, v.y * p.scale);
  }
}

// A predicated reduction rather than a branch: the atomics run while wgmma groups are in flight,
// and a divergent path there makes ptxas serialize the wgmma pipeline.
// The fp32 box at `src` added to global memory at the map's coordinates (rows past the tensor are
// dropped by the copy engine).
__device__ __forceinline__ void tma_reduce_add_4d(const TmaDesc* map, u32 src, int c0, int c1, int c2, int c3) {
  asm volatile("cp.reduce.async.bulk.tensor.4d.global.shared::cta.add.tile.bulk_group [%0, {%2, %3, %4, %5}], [%1];\n" ::"l"(
                   map),
               "r"(src), "r"(c0), "r"(c1), "r"(c2), "r"(c3)
               : "memory");
}

// Generic-proxy stores to shared memory made visible to the async proxy (wgmma operand reads).
__device__ __forceinline__ void fence_proxy_async_smem() { asm volatile("fence.proxy.async.shared::cta;\n" ::: "memory"); }

// Phase 1's walk: step t is (head kh x group + t / m_tiles, query rows first + (t % m_tiles) x 64).
struct WgBwdSteps {
  int first, m_tiles, group, count;
  __device__ int head(int kh, int t) const { return kh * group + t / m_tiles; }
  __device__ int row0(int t) const { return first + (t % m_tiles) * 64; }
};

// The query tiles that see keys [n0, n1): rows i with hi(i) > n0 and lo(i) < n1 (exact under the clamps).
__device__ __forceinline__ WgBwdSteps wg_bwd_steps(const SdpaBwdParams& p, const SdpaBand& bd, int n0, int n1) {
  WgBwdSteps st;
  st.first = bd.has_right ? max(0, n0 - bd.off - bd.right) : 0;
  const int last = bd.has_left ? min(bd.lq, n1 - bd.off + bd.left - 1) : bd.lq;
  st.group = p.h / p.hk;
  st.m_tiles = st.first < last ? (last - st.first + 63) / 64 : 0;
  st.count = n1 > n0 ? st.group * st.m_tiles : 0;
  return st;
}

// Whether every pair of query rows [m0, m0 + 64) and keys [k0, k0 + 64) is visible: only other
// tiles pay for per-element masking.
__device__ __forceinline__ bool wg_tile_all_visible(const SdpaBand& bd, int m0, int k0) {
  return m0 + 63 < bd.lq && k0 + 64 <= bd.lkv && bd.lo(m0 + 63) <= k0 && bd.hi(m0) >= k0 + 64;
}

// One thread issues step t's Q and dO tiles into slot t & 1.
template <int D>
__device__ __forceinline__ void wg_bwd_load_step(const TmaDesc* mq, const TmaDesc* mdo, u32 base, const WgBwdSteps& st,
                                                 int kh, int bi, int t) {
  typedef WgBwdSmem<D> S;
  const int slot = t & 1, hi = st.head(kh, t), m0 = st.row0(t);
  const u32 bar = S::q_full(base, slot);
  mbar_expect_tx(bar, 2 * S::QT_BYTES);
#pragma unroll
  for (int c = 0; c < D / 64; ++c) {
    tma_load_4d(base + S::Q_OFF + slot * S::QT_BYTES + c * S::BQ * 128, mq, bar, 64 * c, m0, hi, bi);
    tma_load_4d(base + S::DO_OFF + slot * S::QT_BYTES + c * S::BQ * 128, mdo, bar, 64 * c, m0, hi, bi);
  }
}

// The value thread x < 128 keeps for step t: lse (x < 64, log2 units) or delta (x >= 64) of query
// row row0(t) + x % 64; 0 past the valid rows (their pairs are masked).
__device__ __forceinline__ float wg_bwd_row_value(const SdpaBwdParams& p, const SdpaBand& bd, const WgBwdSteps& st,
                                                  int kh, int bi, int t) {
  const int x = (int)threadIdx.x, hi = st.head(kh, t), i = st.row0(t) + x % 64;
  if (i >= bd.lq) return 0.0f;
  if (x < 64) return p.stats[bi * p.stats_stride[0] + hi * p.stats_stride[1] + i * p.stats_stride[2]] * kBwdLog2e;
  return p.delta[bwd_row_index(p, bi, hi, i)];
}

// S^T (64 keys of warpgroup w x 64 query rows) = K Q^T, or dP^T = V dO^T: both K-major.
template <int DT, int D>
__device__ __forceinline__ void wg_bwd_issue_transposed_scores(float (&s)[32], u32 keys, u32 rows) {
  typedef WgBwdSmem<D> S;
  const u64 a0 = smem_desc(keys, 16, 1024), b0 = smem_desc(rows, 16, 1024);
#pragma unroll
  for (int kk = 0; kk < D / 16; ++kk) {
    const int box = kk / 4, step = 32 * (kk % 4);
    wgmma_tile<DT, 64, false, false>(s, a0 + ((box * S::BK * 128 + step) >> 4), b0 + ((box * S::BQ * 128 + step) >> 4),
                                     kk > 0 ? 1 : 0);
  }
}

// acc (64 keys x D) += A (registers: 64 keys x 64 query rows) x tile (64 rows x D, N-major).
template <int DT, int D>
__device__ __forceinline__ void wg_bwd_issue_gradient(float (&acc)[D / 2], const u32 (&a)[4][4], u32 tile) {
  typedef WgBwdSmem<D> S;
  const u64 b0 = smem_desc(tile, S::BQ * 128, 1024);
#pragma unroll
  for (int kk = 0; kk < 4; ++kk) wgmma_rs<DT, D>(acc, a[kk], b0 + ((2048 * kk) >> 4), 1);
}

// dQ of the tile, warpgroup w's share: head dim 128, columns [64w, 64w + 64) over all 128 keys;
// head dim 64, every column over keys [64w, 64w + 64) (both warpgroups add theirs).
template <int DT, int D>
__device__ __forceinline__ void wg_bwd_issue_dq(float (&dq)[32], u32 base, int w) {
  typedef WgBwdSmem<D> S;
  constexpr int KEYS = D == 128 ? 128 : 64;
  const u32 ds = base + S::DS_OFF + (D == 128 ? 0 : w * 64 * 128);
  const u32 k = base + S::K_OFF + (D == 128 ? w * S::BK * 128 : w * 64 * 128);
  const u64 a0 = smem_desc(ds, S::BK * 128, 1024), b0 = smem_desc(k, S::BK * 128, 1024);
#pragma unroll
  for (int kk = 0; kk < KEYS / 16; ++kk)
    wgmma_tile<DT, 64, true, true>(dq, a0 + ((2048 * kk) >> 4), b0 + ((2048 * kk) >> 4), kk > 0 ? 1 : 0);
}

// P^T and dS^T of one tile in registers (accumulator layout: key rows, query columns).
template <bool MASK>
__device__ __forceinline__ void wg_bwd_probabilities(float (&s)[32], const SdpaBand& bd, const float* lse, int m0,
                                                     int key0, float scale_log2) {
  const int q4 = (int)threadIdx.x & 3;
#pragma unroll
  for (int j = 0; j < 8; ++j)
#pragma unroll
    for (int r = 0; r < 2; ++r)
#pragma unroll
      for (int e = 0; e < 2; ++e) {
        const int x = 4 * j + 2 * r + e, col = 8 * j + 2 * q4 + e;
        const float pv = exp2_approx(fmaf(s[x], scale_log2, -lse[col]));
        s[x] = (!MASK || bwd_visible(bd, m0 + col, key0 + 8 * r)) ? pv : 0.0f;
      }
}

__device__ __forceinline__ void wg_bwd_score_gradients(float (&dp)[32], const float (&pt)[32], const float* delta) {
  const int q4 = (int)threadIdx.x & 3;
#pragma unroll
  for (int j = 0; j < 8; ++j)
#pragma unroll
    for (int x = 4 * j; x < 4 * j + 4; ++x) dp[x] = pt[x] * (dp[x] - delta[8 * j + 2 * q4 + (x & 1)]);
}

// dS^T (packed as the A fragments of dK's GEMM) into the swizzled dS^T box, where TMA would put
// it: register a[j / 2][2 (j % 2) + r] holds query columns 8j + 2 q4 + {0, 1} of key row
// 16 warp + lane / 4 + 8r of warpgroup w.
__device__ __forceinline__ void wg_bwd_store_ds(const u32 (&a)[4][4], u32 ds_box, int w) {
  const int lane = (int)threadIdx.x % 32, warp = ((int)threadIdx.x / 32) % 4;
#pragma unroll
  for (int j = 0; j < 8; ++j)
#pragma unroll
    for (int r = 0; r < 2; ++r) {
      const int row = 64 * w + 16 * warp + lane / 4 + 8 * r;
      st_shared_u32(ds_box + tma_box_offset<2>(row, 8 * j + 2 * (lane & 3)), a[j / 2][2 * (j % 2) + r]);
    }
}

// The tile's dQ (this warpgroup's share) staged in its two fp32 boxes (128-byte swizzle, as TMA
// reads them): fragment j holds columns 8j + 2 q4 + {0, 1} of rows 16 warp + lane / 4 + {0, 8}.
__device__ __forceinline__ void wg_bwd_stage_dq(const float (&dq)[32], u32 boxes) {
  const int lane = (int)threadIdx.x % 32, warp = ((int)threadIdx.x / 32) % 4;
#pragma unroll
  for (int j = 0; j < 8; ++j)
#pragma unroll
    for (int r = 0; r < 2; ++r) {
      const int row = 16 * warp + lane / 4 + 8 * r, col = (8 * j + 2 * (lane & 3)) % 32;
      const u32 addr = boxes + (j / 4) * (64 * 128) + tma_box_offset<4>(row, col);
      asm volatile("st.shared.v2.f32 [%0], {%1, %2};\n" ::"r"(addr), "f"(dq[4 * j + 2 * r]), "f"(dq[4 * j + 2 * r + 1])
                   : "memory");
    }
}

// Phase 1's start: barriers, step 0's lse and delta, then K and V and the first two steps' tiles.
template <int D>
__device__ __forceinline__ void wg_bwd_begin(const SdpaBwdParams& p, const TmaDesc* mq, const TmaDesc* mk,
                                             const TmaDesc* mv, const TmaDesc* mdo, u32 base, const SdpaBand& bd,
                                             const WgBwdSteps& st, int n0, int kh, int bi, float* rows_s) {
  typedef WgBwdSmem<D> S;
  const int tid = (int)threadIdx.x;
  if (tid == 0) {
    mbar_init(S::kv_full(base), 1);
    mbar_init(S::q_full(base, 0), 1);
    mbar_init(S::q_full(base, 1), 1);
    asm volatile("fence.mbarrier_init.release.cluster;\n" ::: "memory");
  }
  if (st.count > 0 && tid < 128) rows_s[tid] = wg_bwd_row_value(p, bd, st, kh, bi, 0);
  __syncthreads();
  if (tid != 0 || st.count == 0) return;
  mbar_expect_tx(S::kv_full(base), 2 * S::KV_BYTES);
#pragma unroll
  for (int c = 0; c < D / 64; ++c) {
    tma_load_4d(base + S::K_OFF + c * S::BK * 128, mk, S::kv_full(base), 64 * c, n0, kh, bi);
    tma_load_4d(base + S::V_OFF + c * S::BK * 128, mv, S::kv_full(base), 64 * c, n0, kh, bi);
  }
  for (int t = 0; t < min(2, st.count); ++t) wg_bwd_load_step<D>(mq, mdo, base, st, kh, bi, t);
}

// Warpgroup w's staged dQ share (query rows [m0, m0 + 64) of head hi) added to the sums by the copy
// engine; one thread, one bulk group a step.
template <int D>
__device__ __forceinline__ void wg_bwd_send_dq(const TmaDesc* mdq, u32 boxes, int w, int m0, int hi, int bi) {
  const int c0 = D == 128 ? 64 * w : 0;
  tma_reduce_add_4d(mdq, boxes, c0, m0, hi, bi);
  tma_reduce_add_4d(mdq, boxes + WgBwdSmem<D>::DQ_BOX, c0 + 32, m0, hi, bi);
  bulk_commit();
}

// Phase 1.
template <int DT, int OT, int D>
__device__ __forceinline__ void wg_bwd_keys(const SdpaBwdParams& p, const TmaDesc* mq, const TmaDesc* mk,
                                            const TmaDesc* mv, const TmaDesc* mdo, const TmaDesc* mdq) {
  typedef WgBwdSmem<D> S;
  const u32 base = swizzle_aligned_smem();
  float* rows_s = reinterpret_cast<float*>(smem_pointer(base + S::ROWS_OFF));
  const int tid = (int)threadIdx.x, w = tid / 128, warp = (tid / 32) % 4, lane = tid % 32;
  const int n0 = (int)blockIdx.x * S::BK, kh = (int)blockIdx.y, bi = (int)blockIdx.z;
  const int k0 = n0 + 64 * w, key0 = k0 + 16 * warp + lane / 4;  // this warpgroup's keys; the thread's first row
  const SdpaBand bd = bwd_band(p, bi);
  const WgBwdSteps st = wg_bwd_steps(p, bd, n0, min(n0 + S::BK, bd.lkv));
  float dk[D / 2], dv[D / 2];
#pragma unroll
  for (int x = 0; x < D / 2; ++x) dk[x] = dv[x] = 0.0f;
  wg_bwd_begin<D>(p, mq, mk, mv, mdo, base, bd, st, n0, kh, bi, rows_s);
  const u32 keys_k = base + S::K_OFF + w * 64 * 128, keys_v = base + S::V_OFF + w * 64 * 128;
  if (st.count > 0) mbar_wait(S::kv_full(base), 0);
#pragma unroll 1
  for (int t = 0; t < st.count; ++t) {
    const int slot = t & 1, hi = st.head(kh, t), m0 = st.row0(t);
    const float next = tid < 128 && t + 1 < st.count ? wg_bwd_row_value(p, bd, st, kh, bi, t + 1) : 0.0f;
    const u32 q_tile = base + S::Q_OFF + slot * S::QT_BYTES, do_tile = base + S::DO_OFF + slot * S::QT_BYTES;
    mbar_wait(S::q_full(base, slot), (u32)(t >> 1) & 1u);
    float s[32], dp[32];
    wgmma_fence();
    wg_bwd_issue_transposed_scores<DT, D>(s, keys_k, q_tile);
    wgmma_commit();
    wg_bwd_issue_transposed_scores<DT, D>(dp, keys_v, do_tile);
    wgmma_commit();
    const float* lse = rows_s + slot * 128;
    wgmma_wait<1>();
    if (wg_tile_all_visible(bd, m0, k0)) wg_bwd_probabilities<false>(s, bd, lse, m0, key0, p.scale_log2);
    else wg_bwd_probabilities<true>(s, bd, lse, m0, key0, p.scale_log2);
    wgmma_wait<0>();
    wg_bwd_score_gradients(dp, s, lse + 64);
    u32 pa[4][4], da[4][4];
    pack_p<DT, 64>(s, pa);
    pack_p<DT, 64>(dp, da);
    wgmma_fence();
    wg_bwd_issue_gradient<DT, D>(dv, pa, do_tile);
    wg_bwd_issue_gradient<DT, D>(dk, da, q_tile);
    wgmma_commit();
    wg_bwd_store_ds(da, base + S::DS_OFF, w);
    fence_proxy_async_smem();
    if (tid < 128 && t + 1 < st.count) rows_s[(slot ^ 1) * 128 + tid] = next;  // that slot's step ended at the last barrier
    if (tid % 128 == 0) bulk_wait_read_below<0>();  // the last step's dQ boxes have been read
    __syncthreads();  // dS^T whole; the dQ boxes free
    float dq[32];
    wgmma_fence();
    wg_bwd_issue_dq<DT, D>(dq, base, w);
    wgmma_commit();
    wgmma_wait<0>();
    const u32 dq_boxes = base + S::DQ_OFF + w * S::DQ_BYTES;
    wg_bwd_stage_dq(dq, dq_boxes);
    fence_proxy_async_smem();
    __syncthreads();  // every read of this slot and of dS^T has completed; the dQ boxes written
    if (tid == 0 && t + 2 < st.count) wg_bwd_load_step<D>(mq, mdo, base, st, kh, bi, t + 2);
    if (tid % 128 == 0) wg_bwd_send_dq<D>(mdq, dq_boxes, w, m0, hi, bi);  // added while the next step runs
  }
  if (tid % 128 == 0) bulk_wait_all();  // the last reduce has completed before the kernel ends
  bwd_store<OT, D>(p.dk, p.dk_stride, bi, kh, key0, p.skv, p.d, dk, p.scale);
  bwd_store<OT, D>(p.dv, p.dv_stride, bi, kh, key0, p.skv, p.d, dv, 1.0f);
}

// The generated kernel calls this with its configuration: kInput, kOutput, kHeadDim (64 or 128).
template <class Config>
__device__ __forceinline__ void sdpa_backward_wgmma(const SdpaBwdParams& p, const TmaDesc* mq, const TmaDesc* mk,
                                                    const TmaDesc* mv, const TmaDesc* mdo, const TmaDesc* mdq) {
  constexpr int DT = Config::kInput, OT = Config::kOutput, D = Config::kHeadDim;
  if (p.phase == 0) wg_bwd_prepare<DT, D>(p);
  else if (p.phase == 1) wg_bwd_keys<DT, OT, D>(p, mq, mk, mv, mdo, mdq);
  else wg_bwd_store_dq<OT, D>(p);
}

}  // namespace dg
