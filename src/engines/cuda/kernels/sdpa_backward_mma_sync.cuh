// The flash-attention backward (FlashAttention-2's algorithm) on mma.sync (sm_80 and later), in
// three phases of one kernel (SdpaBwdParams::phase), launched in order on one stream:
//  0: delta = rowsum(dO * O) per query row, into the workspace (fp32).
//  1: one block per (64 keys, KV head, batch): 4 warps of 16 keys hold dK and dV in registers and
//     walk every query tile (64 rows, double-buffered) of the group's heads that sees their keys: S^T = K Q^T and
//     dP^T = V dO^T, P^T = exp2(S^T scale_log2 - lse), dS^T = P^T (dP^T - delta), then
//     dV += P^T dO and dK += dS^T Q: the forward's tile GEMMs with the roles of the operands swapped.
//  2: one block per (64 query rows, head, batch): 4 warps of 16 rows walk the visible key tiles
//     (double-buffered),
//     rebuild P and dS and sum dQ += dS K.
// No block writes another's output and the sums run in a fixed order: the same bits on every run,
// at the price of computing S and dP in both phases. Masking rules: src/graph/sdpa.cpp.
#pragma once
#include "sdpa_backward_common.cuh"
#include "sdpa_mma_sync.cuh"

namespace dg {

constexpr int kBwdTile = 64;  // keys and query rows per tile
constexpr int kBwdThreads = 128;

template <int D>
struct BwdShape {
  static constexpr int TILE_BYTES = kBwdTile * D * 2;
  // Two fixed tiles and two double-buffered ones, lse and delta for two tiles of rows.
  static constexpr int SMEM = 6 * TILE_BYTES + 4 * kBwdTile * 4;
};

// Phase 0: one thread per query row.
template <int DT>
__device__ __forceinline__ void bwd_delta(const SdpaBwdParams& p) {
  const int i = (int)blockIdx.x * kBwdThreads + (int)threadIdx.x, hi = (int)blockIdx.y, bi = (int)blockIdx.z;
  if (i >= p.sq) return;
  const u16* o = static_cast<const u16*>(p.o) + bi * p.o_stride[0] + hi * p.o_stride[1] + i * p.o_stride[2];
  const u16* d_o = static_cast<const u16*>(p.d_o) + bi * p.do_stride[0] + hi * p.do_stride[1] + i * p.do_stride[2];
  float sum = 0.0f;
  for (int c = 0; c < p.d; ++c) sum = fmaf(to_float<DT>(o[c]), to_float<DT>(d_o[c]), sum);
  p.delta[((i64)bi * p.h + hi) * p.sq + i] = sum;
}

// Phase 1: dK and dV of keys [n0, n0 + 64) of KV head kh. The (head, query tile) steps are one
// list; the next step's Q and dO tiles load (cp.async, double-buffered) while this one computes.
template <int DT, int OT, int D>
__device__ __forceinline__ void bwd_dkdv(const SdpaBwdParams& p, char* smem) {
  constexpr int T = kBwdTile, TB = BwdShape<D>::TILE_BYTES;
  const u32 base = smem_u32(smem), k_tile = base, v_tile = base + TB;
  float* rows_s = reinterpret_cast<float*>(smem + 6 * TB);  // [buffer][lse, delta][T]
  const int warp = (int)threadIdx.x / 32, lane = (int)threadIdx.x % 32, q4 = lane & 3;
  const int n0 = (int)blockIdx.x * T, kh = (int)blockIdx.y, bi = (int)blockIdx.z;
  const SdpaBand bd = bwd_band(p, bi);
  const int key0 = n0 + warp * 16 + lane / 4;
  float dk[D / 2], dv[D / 2];
#pragma unroll
  for (int x = 0; x < D / 2; ++x) dk[x] = dv[x] = 0.0f;
  const int n1 = min(n0 + T, bd.lkv);
  // Query rows that see a key of [n0, n1): hi(i) > n0 and lo(i) < n1 (both exact under the clamps).
  const int first = bd.has_right ? max(0, n0 - bd.off - bd.right) : 0;
  const int last = bd.has_left ? min(bd.lq, n1 - bd.off + bd.left - 1) : bd.lq;
  const int group = p.h / p.hk, m_tiles = first < last ? (last - first + T - 1) / T : 0;
  const int steps = n1 > n0 ? group * m_tiles : 0;
  // Step t: head kh * group + t / m_tiles, rows first + (t % m_tiles) * T, into buffer t & 1.
  auto load_step = [&](int t) {
    const int hi = kh * group + t / m_tiles, m0 = first + (t % m_tiles) * T, buf = t & 1;
    const u16* qg = static_cast<const u16*>(p.q) + bi * p.q_stride[0] + hi * p.q_stride[1];
    const u16* dog = static_cast<const u16*>(p.d_o) + bi * p.do_stride[0] + hi * p.do_stride[1];
    load_rows<T, D, kBwdThreads>(base + (2 + buf) * TB, qg, p.q_stride[2], m0, p.sq, p.d);
    load_rows<T, D, kBwdThreads>(base + (4 + buf) * TB, dog, p.do_stride[2], m0, p.sq, p.d);
    cp_async_commit();
    if ((int)threadIdx.x < T) {
      const int i = m0 + (int)threadIdx.x;
      const bool ok = i < bd.lq;
      rows_s[buf * 2 * T + threadIdx.x] =
          ok ? p.stats[bi * p.stats_stride[0] + hi * p.stats_stride[1] + i * p.stats_stride[2]] * kBwdLog2e : 0.0f;
      rows_s[buf * 2 * T + T + threadIdx.x] = ok ? p.delta[((i64)bi * p.h + hi) * p.sq + i] : 0.0f;
    }
  };
  if (steps > 0) {
    const u16* kg = static_cast<const u16*>(p.k) + bi * p.k_stride[0] + kh * p.k_stride[1];
    const u16* vg = static_cast<const u16*>(p.v) + bi * p.v_stride[0] + kh * p.v_stride[1];
    load_rows<T, D, kBwdThreads>(k_tile, kg, p.k_stride[2], n0, p.skv, p.d);
    load_rows<T, D, kBwdThreads>(v_tile, vg, p.v_stride[2], n0, p.skv, p.d);
    load_step(0);  // one group with K and V
  }
  u32 unused[1][4];
#pragma unroll 1
  for (int t = 0; t < steps; ++t) {
    const int buf = t & 1, m0 = first + (t % m_tiles) * T;
    if (t + 1 < steps) {
      load_step(t + 1);  // the buffer step t - 1 used: every warp passed the barrier ending it
      cp_async_wait<1>();
    } else {
      cp_async_wait<0>();
    }
    __syncthreads();
    const u32 q_tile = base + (2 + buf) * TB, do_tile = base + (4 + buf) * TB;
    const float* lse_s = rows_s + buf * 2 * T;
    const float* delta_s = lse_s + T;
    float s[T / 2], dp[T / 2];
    qk_tile<DT, D, T, false>(s, unused, k_tile, q_tile, warp, lane);
    qk_tile<DT, D, T, false>(dp, unused, v_tile, do_tile, warp, lane);
#pragma unroll
    for (int j = 0; j < T / 8; ++j)
#pragma unroll
      for (int r = 0; r < 2; ++r)
#pragma unroll
        for (int e = 0; e < 2; ++e) {
          const int x = 4 * j + 2 * r + e, col = 8 * j + 2 * q4 + e;
          const bool vis = bwd_visible(bd, m0 + col, key0 + 8 * r);
          const float pv = vis ? exp2_approx(fmaf(s[x], p.scale_log2, -lse_s[col])) : 0.0f;
          s[x] = pv;
          dp[x] = vis ? pv * (dp[x] - delta_s[col]) : 0.0f;
        }
    u32 pa[T / 16][4];
    pack_p<DT, T>(s, pa);
    pv_tile<DT, D, T>(dv, pa, do_tile, lane);
    pack_p<DT, T>(dp, pa);
    pv_tile<DT, D, T>(dk, pa, q_tile, lane);
    __syncthreads();  // step t + 2 loads into this buffer
  }
  bwd_store<OT, D>(p.dk, p.dk_stride, bi, kh, key0, p.skv, p.d, dk, p.scale);
  bwd_store<OT, D>(p.dv, p.dv_stride, bi, kh, key0, p.skv, p.d, dv, 1.0f);
}

// Phase 2: dQ of query rows [m0, m0 + 64) of head hi; the next key tile loads while this one computes.
template <int DT, int OT, int D>
__device__ __forceinline__ void bwd_dq(const SdpaBwdParams& p, char* smem) {
  constexpr int T = kBwdTile, TB = BwdShape<D>::TILE_BYTES;
  const u32 base = smem_u32(smem), q_tile = base, do_tile = base + TB;
  const int warp = (int)threadIdx.x / 32, lane = (int)threadIdx.x % 32, q4 = lane & 3;
  const int m0 = (int)blockIdx.x * T, hi = (int)blockIdx.y, bi = (int)blockIdx.z;
  const SdpaBand bd = bwd_band(p, bi);
  const KeyTiles kt = key_tiles(bd, m0, T, T);
  const int row0 = m0 + warp * 16 + lane / 4;
  float dq[D / 2];
#pragma unroll
  for (int x = 0; x < D / 2; ++x) dq[x] = 0.0f;
  if (kt.count > 0) {
    float lse[2], delta[2];
#pragma unroll
    for (int r = 0; r < 2; ++r) {
      const int i = row0 + 8 * r;
      const bool ok = i < bd.lq;
      lse[r] = ok ? p.stats[bi * p.stats_stride[0] + hi * p.stats_stride[1] + i * p.stats_stride[2]] * kBwdLog2e : 0.0f;
      delta[r] = ok ? p.delta[((i64)bi * p.h + hi) * p.sq + i] : 0.0f;
    }
    const int kh = hi / (p.h / p.hk);
    const u16* qg = static_cast<const u16*>(p.q) + bi * p.q_stride[0] + hi * p.q_stride[1];
    const u16* dog = static_cast<const u16*>(p.d_o) + bi * p.do_stride[0] + hi * p.do_stride[1];
    const u16* kg = static_cast<const u16*>(p.k) + bi * p.k_stride[0] + kh * p.k_stride[1];
    const u16* vg = static_cast<const u16*>(p.v) + bi * p.v_stride[0] + kh * p.v_stride[1];
    // Key tile `it` into buffer it & 1 (K at tile 2 + buf, V at 4 + buf).
    auto load_keys = [&](int it) {
      const int n0 = (kt.first + it) * T, buf = it & 1;
      load_rows<T, D, kBwdThreads>(base + (2 + buf) * TB, kg, p.k_stride[2], n0, p.skv, p.d);
      load_rows<T, D, kBwdThreads>(base + (4 + buf) * TB, vg, p.v_stride[2], n0, p.skv, p.d);
      cp_async_commit();
    };
    load_rows<T, D, kBwdThreads>(q_tile, qg, p.q_stride[2], m0, p.sq, p.d);
    load_rows<T, D, kBwdThreads>(do_tile, dog, p.do_stride[2], m0, p.sq, p.d);
    load_keys(0);  // one group with Q and dO
    u32 unused[1][4];
#pragma unroll 1
    for (int it = 0; it < kt.count; ++it) {
      const int n0 = (kt.first + it) * T, buf = it & 1;
      if (it + 1 < kt.count) {
        load_keys(it + 1);
        cp_async_wait<1>();
      } else {
        cp_async_wait<0>();
      }
      __syncthreads();
      const u32 k_tile = base + (2 + buf) * TB, v_tile = base + (4 + buf) * TB;
      float s[T / 2], dp[T / 2];
      qk_tile<DT, D, T, false>(s, unused, q_tile, k_tile, warp, lane);
      qk_tile<DT, D, T, false>(dp, unused, do_tile, v_tile, warp, lane);
#pragma unroll
      for (int j = 0; j < T / 8; ++j)
#pragma unroll
        for (int r = 0; r < 2; ++r)
#pragma unroll
          for (int e = 0; e < 2; ++e) {
            const int x = 4 * j + 2 * r + e, col = n0 + 8 * j + 2 * q4 + e;
            const bool vis = bwd_visible(bd, row0 + 8 * r, col);
            const float pv = vis ? exp2_approx(fmaf(s[x], p.scale_log2, -lse[r])) : 0.0f;
            dp[x] = vis ? pv * (dp[x] - delta[r]) : 0.0f;
          }
      u32 pa[T / 16][4];
      pack_p<DT, T>(dp, pa);
      pv_tile<DT, D, T>(dq, pa, k_tile, lane);
      __syncthreads();  // tile it + 2 loads into this buffer
    }
  }
  bwd_store<OT, D>(p.dq, p.dq_stride, bi, hi, row0, p.sq, p.d, dq, p.scale);
}

// The generated kernel calls this with its configuration: kInput, kOutput, kHeadDim (padded to 64).
template <class Config>
__device__ __forceinline__ void sdpa_backward_mma_sync(const SdpaBwdParams& p) {
  constexpr int DT = Config::kInput, OT = Config::kOutput, D = Config::kHeadDim;
  static_assert(D % 64 == 0, "tiles are whole 64-column rows");
  extern __shared__ __align__(128) char smem[];
  if (p.phase == 0) bwd_delta<DT>(p);
  else if (p.phase == 1) bwd_dkdv<DT, OT, D>(p, smem);
  else bwd_dq<DT, OT, D>(p, smem);
}

}  // namespace dg
