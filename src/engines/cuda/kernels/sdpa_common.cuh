// Pieces both attention cores share (sdpa_mma_sync.cuh on sm_80+, sdpa_wgmma.cuh on sm_90a): the
// kernel arguments, the mask band of a batch, the key tiles a query block visits, the online
// softmax over one tile of scores held in mma/wgmma accumulator layout, and the final store.
//
// Accumulator layout (mma.sync m16n8 and wgmma m64nN alike): a warp owns 16 rows; lane l holds
// rows r = l / 4 and r + 8, and for every 8-column block j the columns 8j + 2 (l % 4) + {0, 1}:
// acc[4j + 0..1] on row r, acc[4j + 2..3] on row r + 8.
//
// Masking rules: src/graph/sdpa.cpp. Scores are kept in log2 units (attn_scale * log2(e) folded
// into one FFMA before exp2); the running maximum is of the scaled scores, so a negative attn_scale
// (NEG) takes the minimum of the raw scores instead.
#pragma once
#include "gemm_common.cuh"

namespace dg {

// Mirrored by src/engines/cuda/sdpa/sdpa_params.hpp, field for field.
struct SdpaParams {
  const void* q;
  const void* k;
  const void* v;
  void* o;
  float* stats;                   // null when the graph does not ask for it
  const int* seq_q;               // padding mask: per-batch lengths, else null
  const int* seq_kv;
  i64 q_stride[3];                // batch, head, sequence (elements; the head dim is contiguous)
  i64 k_stride[3];
  i64 v_stride[3];
  i64 o_stride[3];
  i64 stats_stride[3];
  i64 seq_q_stride, seq_kv_stride;  // along the batch
  int b, h, hk, sq, skv, d;       // d: the head dim (the kernel's D is d rounded up to 64)
  float scale_log2;               // attn_scale * log2(e)
  int left, right;                // band bounds, when has_left / has_right
  int has_left, has_right, bottom_right;
  int m_blocks;                   // query blocks per head
};

// Block x's batch, head and first query row (m_blocks x h x b blocks). Blocks go head by head, so
// the blocks in flight read the K and V of a few heads, which stay in L2 (b4 h16 s4096 d128 with
// every head in flight: 128 MB of K and V, DRAM at 64% of its peak under ncu). Inside a head they
// go in pairs by causal length: the longest, the shortest, the second longest, the second
// shortest..., so every pair of consecutive blocks carries about the same work (a persistent
// block takes one pair per round) and a head's longest block starts first.
struct BlockCoords {
  int bi, hi, m0;
};
__device__ __forceinline__ BlockCoords sdpa_block(const SdpaParams& p, int bm, int x = (int)blockIdx.x) {
  const int hb = x / p.m_blocks, k = x - hb * p.m_blocks;
  const int rank = (k & 1) ? p.m_blocks - 1 - k / 2 : k / 2;  // 0: the longest (the last rows)
  return {hb / p.h, hb % p.h, (p.m_blocks - 1 - rank) * bm};
}

__device__ __forceinline__ float f_inf() { return __int_as_float(0x7f800000); }

__device__ __forceinline__ float exp2_approx(float x) {
  float y;
  asm("ex2.approx.ftz.f32 %0, %1;" : "=f"(y) : "f"(x));
  return y;
}

// Two floats as one register of two 16-bit values, `lo` in the low half.
template <int DT> __device__ __forceinline__ u32 pack2(float lo, float hi);
template <> __device__ __forceinline__ u32 pack2<DT_BFLOAT16>(float lo, float hi) {
  u32 r;
  asm("cvt.rn.bf16x2.f32 %0, %1, %2;" : "=r"(r) : "f"(hi), "f"(lo));
  return r;
}
template <> __device__ __forceinline__ u32 pack2<DT_HALF>(float lo, float hi) {
  u32 r;
  asm("cvt.rn.f16x2.f32 %0, %1, %2;" : "=r"(r) : "f"(hi), "f"(lo));
  return r;
}

__device__ __forceinline__ int clamp_int(int x, int lo, int hi) { return x < lo ? lo : (x > hi ? hi : x); }

// The keys query row i of one batch sees: [lo(i), hi(i)). Both ends are non-decreasing in i and
// lo(i) <= hi(i), so a block of rows sees a subset of [lo(first), hi(last)).
struct SdpaBand {
  int lq, lkv, off;  // valid query rows, valid keys, diagonal offset
  int left, right;
  bool has_left, has_right;
  __device__ __forceinline__ int lo(int i) const { return has_left ? clamp_int(i + off - left + 1, 0, lkv) : 0; }
  __device__ __forceinline__ int hi(int i) const { return has_right ? clamp_int(i + off + right + 1, 0, lkv) : lkv; }
};

__device__ __forceinline__ SdpaBand sdpa_band(const SdpaParams& p, int b) {
  SdpaBand bd;
  bd.lq = p.seq_q ? clamp_int(p.seq_q[b * p.seq_q_stride], 0, p.sq) : p.sq;
  bd.lkv = p.seq_kv ? clamp_int(p.seq_kv[b * p.seq_kv_stride], 0, p.skv) : p.skv;
  bd.off = p.bottom_right ? bd.lkv - bd.lq : 0;
  bd.left = p.left;
  bd.right = p.right;
  bd.has_left = p.has_left != 0;
  bd.has_right = p.has_right != 0;
  return bd;
}

// The key tiles [first, first + count) that query rows [m0, m0 + bm) can see; count 0 when none.
struct KeyTiles {
  int first, count, last_row;  // last_row: the block's last valid query row
};
__device__ __forceinline__ KeyTiles key_tiles(const SdpaBand& bd, int m0, int bm, int bn) {
  KeyTiles t{0, 0, min(m0 + bm, bd.lq) - 1};
  if (t.last_row < m0) return t;
  const int lo = bd.lo(m0), hi = bd.hi(t.last_row);
  if (lo >= hi) return t;
  t.first = lo / bn;
  t.count = (hi + bn - 1) / bn - t.first;
  return t;
}

// Whether some valid row of [m0, last_row] misses some key of [n0, n0 + bn): only such tiles pay
// for per-element masking.
__device__ __forceinline__ bool tile_needs_mask(const SdpaBand& bd, int m0, int last_row, int n0, int bn) {
  return bd.lo(last_row) > n0 || bd.hi(m0) < n0 + bn;
}

// Running max (scaled, log2 units) and partial sum of the thread's two rows.
struct RowState {
  float m[2], l[2];
};

__device__ __forceinline__ void row_state_init(RowState& st) {
  st.m[0] = st.m[1] = -f_inf();
  st.l[0] = st.l[1] = 0.0f;
}

template <bool NEG> __device__ __forceinline__ float extreme(float a, float b) { return NEG ? fminf(a, b) : fmaxf(a, b); }

// One tile of scores s (BN columns starting at key n0; the thread's rows row0 and row0 + 8) becomes
// probabilities in place: p = exp2(s * scale_log2 - m_new). corr[r] is what the row's earlier
// output must be multiplied by. MASK: apply the band per element (masked p = 0 exactly).
template <int BN, bool MASK, bool NEG>
__device__ __forceinline__ void softmax_tile(float (&s)[BN / 2], RowState& st, float (&corr)[2], const SdpaBand& bd,
                                             int row0, int n0, float scale_log2) {
  const int q = (int)threadIdx.x & 3;
  const float neutral = NEG ? f_inf() : -f_inf();
  if (MASK) {
#pragma unroll
    for (int r = 0; r < 2; ++r) {
      const int lo = bd.lo(row0 + 8 * r) - n0 - 2 * q, hi = bd.hi(row0 + 8 * r) - n0 - 2 * q;
#pragma unroll
      for (int j = 0; j < BN / 8; ++j)
#pragma unroll
        for (int e = 0; e < 2; ++e) {
          const int c = 8 * j + e;  // column relative to n0 + 2q
          if (c < lo || c >= hi) s[4 * j + 2 * r + e] = neutral;
        }
    }
  }
#pragma unroll
  for (int r = 0; r < 2; ++r) {
    float e = s[2 * r];
#pragma unroll
    for (int j = 0; j < BN / 8; ++j) e = extreme<NEG>(e, extreme<NEG>(s[4 * j + 2 * r], s[4 * j + 2 * r + 1]));
    e = extreme<NEG>(e, __shfl_xor_sync(0xffffffffu, e, 1));
    e = extreme<NEG>(e, __shfl_xor_sync(0xffffffffu, e, 2));
    const float tile_m = (MASK && e == neutral) ? -f_inf() : e * scale_log2;
    const float m_new = fmaxf(st.m[r], tile_m);
    const float use = m_new == -f_inf() ? 0.0f : m_new;  // a row that has seen no key yet
    corr[r] = exp2_approx(st.m[r] - use);
    st.m[r] = m_new;
    float sum = 0.0f;
#pragma unroll
    for (int j = 0; j < BN / 8; ++j)
#pragma unroll
      for (int x = 0; x < 2; ++x) {
        const int i = 4 * j + 2 * r + x;
        float pv = exp2_approx(fmaf(s[i], scale_log2, -use));
        if (MASK && s[i] == neutral) pv = 0.0f;
        s[i] = pv;
        sum += pv;
      }
    st.l[r] = st.l[r] * corr[r] + sum;
  }
}

template <int N>
__device__ __forceinline__ void rescale_rows(float (&acc)[N / 2], const float (&corr)[2]) {
#pragma unroll
  for (int j = 0; j < N / 8; ++j) {
    acc[4 * j + 0] *= corr[0];
    acc[4 * j + 1] *= corr[0];
    acc[4 * j + 2] *= corr[1];
    acc[4 * j + 3] *= corr[1];
  }
}

// Probabilities (accumulator layout, BN columns) as the A operand of P * V: for each 16 keys kk,
// the four registers of the m16n8k16 / m64nNk16 A fragment.
template <int DT, int BN>
__device__ __forceinline__ void pack_p(const float (&s)[BN / 2], u32 (&a)[BN / 16][4]) {
#pragma unroll
  for (int kk = 0; kk < BN / 16; ++kk) {
    a[kk][0] = pack2<DT>(s[8 * kk + 0], s[8 * kk + 1]);
    a[kk][1] = pack2<DT>(s[8 * kk + 2], s[8 * kk + 3]);
    a[kk][2] = pack2<DT>(s[8 * kk + 4], s[8 * kk + 5]);
    a[kk][3] = pack2<DT>(s[8 * kk + 6], s[8 * kk + 7]);
  }
}

template <int OT> __device__ __forceinline__ void store_pair(void* base, i64 off, float a, float b);
template <> __device__ __forceinline__ void store_pair<DT_FLOAT>(void* base, i64 off, float a, float b) {
  *reinterpret_cast<float2*>(static_cast<float*>(base) + off) = make_float2(a, b);
}
template <> __device__ __forceinline__ void store_pair<DT_BFLOAT16>(void* base, i64 off, float a, float b) {
  *reinterpret_cast<u32*>(static_cast<u16*>(base) + off) = pack2<DT_BFLOAT16>(a, b);
}
template <> __device__ __forceinline__ void store_pair<DT_HALF>(void* base, i64 off, float a, float b) {
  *reinterpret_cast<u32*>(static_cast<u16*>(base) + off) = pack2<DT_HALF>(a, b);
}

// O = acc / l and STATS = ln(sum exp) for the thread's two rows; rows past the valid length and
// rows that saw no key get 0. Every lane of the warp must call it (the row sums are reduced here).
template <int OT, int N>
__device__ __forceinline__ void store_rows(const SdpaParams& p, const float (&acc)[N / 2], const RowState& st,
                                           const SdpaBand& bd, int b, int h, int row0) {
  const int q = (int)threadIdx.x & 3;
#pragma unroll
  for (int r = 0; r < 2; ++r) {
    float l = st.l[r];
    l += __shfl_xor_sync(0xffffffffu, l, 1);
    l += __shfl_xor_sync(0xffffffffu, l, 2);
    const int i = row0 + 8 * r;
    if (i >= p.sq) continue;
    const bool seen = i < bd.lq && l > 0.0f;
    const float inv = seen ? 1.0f / l : 0.0f;
    const i64 base = b * p.o_stride[0] + h * p.o_stride[1] + i * p.o_stride[2];
#pragma unroll
    for (int j = 0; j < N / 8; ++j) {
      const int c = 8 * j + 2 * q;
      if (c >= p.d) continue;
      const float v0 = seen ? acc[4 * j + 2 * r] * inv : 0.0f;
      const float v1 = seen ? acc[4 * j + 2 * r + 1] * inv : 0.0f;
      store_pair<OT>(p.o, base + c, v0, v1);
    }
    if (p.stats && q == 0)
      p.stats[b * p.stats_stride[0] + h * p.stats_stride[1] + i * p.stats_stride[2]] =
          seen ? (st.m[r] + log2f(l)) * 0.69314718055994530942f : 0.0f;
  }
}

}  // namespace dg
