// Pieces both attention backward cores share (sdpa_backward_mma_sync.cuh on sm_80+,
// sdpa_backward_wgmma.cuh on sm_90a): the kernel arguments, the mask band of a batch, which
// (row, key) pairs are visible, and the store of a warp's gradient rows.
#pragma once
#include "sdpa_common.cuh"

namespace dg {

// Mirrored by src/engines/cuda/sdpa/sdpa_backward_params.hpp, field for field.
struct SdpaBwdParams {
  const void* q;
  const void* k;
  const void* v;
  const void* o;
  const void* d_o;
  const float* stats;
  void* dq;
  void* dk;
  void* dv;
  const int* seq_q;
  const int* seq_kv;
  float* delta;     // workspace: [b, h, sq] fp32, packed
  float* dq_accum;  // wgmma core: [b, h, sq, D] fp32 sums of dQ / scale (workspace after delta); else null
  i64 q_stride[3], k_stride[3], v_stride[3], o_stride[3], do_stride[3], stats_stride[3];
  i64 dq_stride[3], dk_stride[3], dv_stride[3];
  i64 seq_q_stride, seq_kv_stride;
  int b, h, hk, sq, skv, d;
  float scale, scale_log2;
  int left, right;
  int has_left, has_right, bottom_right;
  int phase;
};

__device__ __forceinline__ SdpaBand bwd_band(const SdpaBwdParams& p, int b) {
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

__device__ __forceinline__ bool bwd_visible(const SdpaBand& bd, int i, int j) {
  return i < bd.lq && j < bd.lkv && j >= bd.lo(i) && j < bd.hi(i);
}

constexpr float kBwdLog2e = 1.44269504088896340736f;

// Stores a warp's 16 rows x D accumulator (rows row0, row0 + 8 of the thread) times `scale`.
template <int OT, int D>
__device__ __forceinline__ void bwd_store(void* base, const i64 (&stride)[3], int b, int h, int row0, int rows, int d,
                                          const float (&acc)[D / 2], float scale) {
  if (!base) return;  // a gradient the graph does not read
  const int q = (int)threadIdx.x & 3;
#pragma unroll
  for (int r = 0; r < 2; ++r) {
    const int row = row0 + 8 * r;
    if (row >= rows) continue;
    const i64 off = b * stride[0] + h * stride[1] + row * stride[2];
#pragma unroll
    for (int j = 0; j < D / 8; ++j) {
      const int c = 8 * j + 2 * q;
      if (c < d) store_pair<OT>(base, off + c, acc[4 * j + 2 * r] * scale, acc[4 * j + 2 * r + 1] * scale);
    }
  }
}

}  // namespace dg
