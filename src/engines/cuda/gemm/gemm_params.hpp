// Host mirrors of the GEMM kernels' argument structs (kernels/gemm_common.cuh), field for field.
#pragma once
#include <cstdint>

namespace dnngraph::cuda::gemm {

inline constexpr int kMaxBatchDims = 6;  // DG_GEMM_MAX_BATCH

struct GemmParams {
  int64_t M, N, K;
  int64_t a_stride_m, a_stride_k;
  int64_t b_stride_k, b_stride_n;
  int64_t batch_size[kMaxBatchDims];
  int64_t a_batch_stride[kMaxBatchDims];
  int64_t b_batch_stride[kMaxBatchDims];
  int64_t batch_count;
  const void* a;
  const void* b;
  int64_t a_batch_unit;
  int64_t b_batch_unit;
  int32_t batch_dims;
  int32_t epi_vec;
  int32_t tiles_m, tiles_n;
  int32_t splits, stream_k;  // wgmma split-K factor (1: none); stream-K tail (work_units.cuh)
  void* ws;              // split-K partial sums and per-tile counters
};
static_assert(sizeof(GemmParams) == 8 * (7 + 3 * kMaxBatchDims + 1 + 2 + 2) + 32, "must match dg::GemmParams");

}  // namespace dnngraph::cuda::gemm
