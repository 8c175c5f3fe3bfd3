// Host mirror of the attention backward's argument struct (kernels/sdpa_backward_common.cuh), field
// for field.
#pragma once
#include <cstdint>

namespace dnngraph::cuda::sdpa {

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
  const int32_t* seq_q;
  const int32_t* seq_kv;
  float* delta;
  float* dq_accum;
  int64_t q_stride[3], k_stride[3], v_stride[3], o_stride[3], do_stride[3], stats_stride[3];
  int64_t dq_stride[3], dk_stride[3], dv_stride[3];
  int64_t seq_q_stride, seq_kv_stride;
  int32_t b, h, hk, sq, skv, d;
  float scale, scale_log2;
  int32_t left, right;
  int32_t has_left, has_right, bottom_right;
  int32_t phase;
};
static_assert(sizeof(SdpaBwdParams) == 13 * 8 + 29 * 8 + 6 * 4 + 2 * 4 + 2 * 4 + 4 * 4, "must match dg::SdpaBwdParams");

}  // namespace dnngraph::cuda::sdpa
