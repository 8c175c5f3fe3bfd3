// Host mirror of the attention kernels' argument struct (kernels/sdpa_common.cuh), field for field.
#pragma once
#include <cstdint>

namespace dnngraph::cuda::sdpa {

struct SdpaParams {
  const void* q;
  const void* k;
  const void* v;
  void* o;
  float* stats;
  const int32_t* seq_q;
  const int32_t* seq_kv;
  int64_t q_stride[3];
  int64_t k_stride[3];
  int64_t v_stride[3];
  int64_t o_stride[3];
  int64_t stats_stride[3];
  int64_t seq_q_stride, seq_kv_stride;
  int32_t b, h, hk, sq, skv, d;
  float scale_log2;
  int32_t left, right;
  int32_t has_left, has_right, bottom_right;
  int32_t m_blocks;
};
static_assert(sizeof(SdpaParams) == 7 * 8 + 17 * 8 + 6 * 4 + 4 + 6 * 4 + 4, "must match dg::SdpaParams");

}  // namespace dnngraph::cuda::sdpa
