// The portable flash-attention forward core (sm_80 and later), FA2-style: one block per (query
// block of 16 * WARPS rows, head, batch); each warp owns 16 query rows, holds their Q fragments in
// registers (head dims up to 128; larger ones re-read Q from shared memory) and walks the visible
// key tiles from the last to the first. K and V tiles come through shared memory with cp.async,
// double-buffered and waited for separately, so the V tile loads while S = Q K^T is computed.
// Tiles are D = head dim rounded up to 64 wide, 16-byte chunks XOR-swizzled by row (ldmatrix
// reads 8 rows of one chunk column without bank conflicts); columns past the head dim and rows
// past the tensor are zero-filled, so padding adds nothing to any dot product.
#pragma once
#include "sdpa_common.cuh"

namespace dg {

template <int D, int BN, int WARPS>
struct MmaSdpaShape {
  static constexpr int BM = 16 * WARPS, THREADS = 32 * WARPS;
  static constexpr int Q_BYTES = BM * D * 2, KV_BYTES = BN * D * 2;
  static constexpr int K_OFF = Q_BYTES, V_OFF = K_OFF + 2 * KV_BYTES;
  static constexpr int SMEM = V_OFF + 2 * KV_BYTES;
  static constexpr bool Q_REGS = D <= 128;
  static_assert(D % 64 == 0 && BN % 16 == 0, "tiles are whole 64-column rows and 16-key steps");
};

// Rows [r0, r0 + ROWS) of a [rows x d] matrix (row stride `ld` elements) into a swizzled tile.
template <int ROWS, int D, int THREADS>
__device__ __forceinline__ void load_rows(u32 tile, const u16* base, i64 ld, int r0, int rows, int d) {
  constexpr int CHUNKS = D / 8;
  static_assert((ROWS * CHUNKS) % THREADS == 0, "tile chunks must split evenly over the threads");
#pragma unroll
  for (int u = 0; u < ROWS * CHUNKS / THREADS; ++u) {
    const int id = (int)threadIdx.x + u * THREADS;
    const int r = id / CHUNKS, c = id % CHUNKS;
    const bool ok = r0 + r < rows && c * 8 < d;
    const u16* src = ok ? base + (i64)(r0 + r) * ld + c * 8 : base;
    cp_async16(tile + tile_offset<D>(r, c), src, ok ? 16 : 0);
  }
}

// A fragment of Q rows [16 w, 16 w + 16) and head-dim step kk.
template <int D>
__device__ __forceinline__ void load_q_frag(u32 q_tile, int warp, int lane, int kk, u32 (&a)[4]) {
  ldmatrix_x4(q_tile + tile_offset<D>(warp * 16 + (lane & 15), kk * 2 + (lane >> 4)), a);
}

// s (16 rows x BN keys) = Q K^T over the padded head dim.
template <int DT, int D, int BN, bool Q_REGS>
__device__ __forceinline__ void qk_tile(float (&s)[BN / 2], const u32 (&qf)[Q_REGS ? D / 16 : 1][4], u32 q_tile,
                                        u32 k_tile, int warp, int lane) {
#pragma unroll
  for (int i = 0; i < BN / 2; ++i) s[i] = 0.0f;
#pragma unroll
  for (int kk = 0; kk < D / 16; ++kk) {
    u32 a[4];
    if constexpr (Q_REGS) {
#pragma unroll
      for (int x = 0; x < 4; ++x) a[x] = qf[kk][x];
    } else {
      load_q_frag<D>(q_tile, warp, lane, kk, a);
    }
#pragma unroll
    for (int np = 0; np < BN / 16; ++np) {
      // Matrices: keys [16np, +8) x dims [16kk, +8), then +8 dims, then +8 keys, then both.
      u32 b[4];
      ldmatrix_x4(k_tile + tile_offset<D>(np * 16 + ((lane >> 4) << 3) + (lane & 7), kk * 2 + ((lane >> 3) & 1)), b);
      mma_16816<DT>(*reinterpret_cast<float(*)[4]>(&s[8 * np]), a, b[0], b[1]);
      mma_16816<DT>(*reinterpret_cast<float(*)[4]>(&s[8 * np + 4]), a, b[2], b[3]);
    }
  }
}

// o (16 rows x D) += P (16 rows x BN keys) V (BN keys x D).
template <int DT, int D, int BN>
__device__ __forceinline__ void pv_tile(float (&o)[D / 2], const u32 (&pa)[BN / 16][4], u32 v_tile, int lane) {
#pragma unroll
  for (int kk = 0; kk < BN / 16; ++kk)
#pragma unroll
    for (int dp = 0; dp < D / 16; ++dp) {
      // Transposed matrices: keys [16kk, +8) x dims [16dp, +8), then +8 keys, then +8 dims, then both.
      u32 b[4];
      ldmatrix_x4_trans(v_tile + tile_offset<D>(kk * 16 + (((lane >> 3) & 1) << 3) + (lane & 7), dp * 2 + (lane >> 4)), b);
      mma_16816<DT>(*reinterpret_cast<float(*)[4]>(&o[8 * dp]), pa[kk], b[0], b[1]);
      mma_16816<DT>(*reinterpret_cast<float(*)[4]>(&o[8 * dp + 4]), pa[kk], b[2], b[3]);
    }
}

// The generated kernel calls this with its configuration: kInput and kOutput (types), kHeadDim
// (padded), kKeysPerTile, kWarps and kNegativeScale.
template <class Config>
__device__ __forceinline__ void sdpa_mma_sync(const SdpaParams& p) {
  constexpr int DT = Config::kInput, OT = Config::kOutput, D = Config::kHeadDim, BN = Config::kKeysPerTile;
  constexpr int WARPS = Config::kWarps;
  constexpr bool NEG = Config::kNegativeScale;
  typedef MmaSdpaShape<D, BN, WARPS> S;
  extern __shared__ __align__(128) char smem[];
  const u32 base = smem_u32(smem);
  const int warp = (int)threadIdx.x / 32, lane = (int)threadIdx.x % 32;
  const BlockCoords blk = sdpa_block(p, S::BM);
  const int bi = blk.bi, hi = blk.hi, m0 = blk.m0;
  const SdpaBand bd = sdpa_band(p, bi);
  const KeyTiles kt = key_tiles(bd, m0, S::BM, BN);
  const int row0 = m0 + warp * 16 + lane / 4;
  RowState st;
  row_state_init(st);
  float o[D / 2];
#pragma unroll
  for (int i = 0; i < D / 2; ++i) o[i] = 0.0f;
  if (kt.count > 0) {
    const int kh = hi / (p.h / p.hk);
    const u16* qg = static_cast<const u16*>(p.q) + bi * p.q_stride[0] + hi * p.q_stride[1];
    const u16* kg = static_cast<const u16*>(p.k) + bi * p.k_stride[0] + kh * p.k_stride[1];
    const u16* vg = static_cast<const u16*>(p.v) + bi * p.v_stride[0] + kh * p.v_stride[1];
    const int top = kt.first + kt.count - 1;
    load_rows<S::BM, D, S::THREADS>(base, qg, p.q_stride[2], m0, p.sq, p.d);
    load_rows<BN, D, S::THREADS>(base + S::K_OFF, kg, p.k_stride[2], top * BN, p.skv, p.d);
    cp_async_commit();
    load_rows<BN, D, S::THREADS>(base + S::V_OFF, vg, p.v_stride[2], top * BN, p.skv, p.d);
    cp_async_commit();
    u32 qf[S::Q_REGS ? D / 16 : 1][4];
#pragma unroll 1
    for (int it = 0; it < kt.count; ++it) {
      const int n0 = (top - it) * BN;
      const u32 k_tile = base + S::K_OFF + (it & 1) * S::KV_BYTES, v_tile = base + S::V_OFF + (it & 1) * S::KV_BYTES;
      const bool next = it + 1 < kt.count;
      // Groups in flight, oldest first: K(it) V(it) [K(it+1)]; K(it) must be done.
      if (next) {
        load_rows<BN, D, S::THREADS>(base + S::K_OFF + ((it + 1) & 1) * S::KV_BYTES, kg, p.k_stride[2], n0 - BN, p.skv, p.d);
        cp_async_commit();
        cp_async_wait<2>();
      } else {
        cp_async_wait<1>();
      }
      __syncthreads();
      if constexpr (S::Q_REGS) {
        if (it == 0) {
#pragma unroll
          for (int kk = 0; kk < D / 16; ++kk) load_q_frag<D>(base, warp, lane, kk, qf[kk]);
        }
      }
      float s[BN / 2];
      qk_tile<DT, D, BN, S::Q_REGS>(s, qf, base, k_tile, warp, lane);
      float corr[2];
      if (tile_needs_mask(bd, m0, kt.last_row, n0, BN)) softmax_tile<BN, true, NEG>(s, st, corr, bd, row0, n0, p.scale_log2);
      else softmax_tile<BN, false, NEG>(s, st, corr, bd, row0, n0, p.scale_log2);
      rescale_rows<D>(o, corr);
      u32 pa[BN / 16][4];
      pack_p<DT, BN>(s, pa);
      // Groups in flight: V(it) [K(it+1) V(it+1)]; V(it) must be done.
      if (next) {
        load_rows<BN, D, S::THREADS>(base + S::V_OFF + ((it + 1) & 1) * S::KV_BYTES, vg, p.v_stride[2], n0 - BN, p.skv, p.d);
        cp_async_commit();
        cp_async_wait<2>();
      } else {
        cp_async_wait<0>();
      }
      __syncthreads();
      pv_tile<DT, D, BN>(o, pa, v_tile, lane);
    }
  }
  store_rows<OT, D>(p, o, st, bd, bi, hi, row0);
}

}  // namespace dg
