// Host mirror of dg::ConvParams (kernels/conv_implicit_gemm.cuh), field for field.
#pragma once
#include <cstdint>

namespace dnngraph::cuda::conv {

struct ConvParams {
  int64_t M, N, K;
  int64_t x_stride[4];
  int64_t w_stride_k;
  const void* x;
  const void* w;
  int32_t in[3], out[3], filt[3], pad[3], stride[3], dil[3];
  int32_t C, epi_vec, tiles_m, tiles_n;
  int32_t splits, pad_;  // split-K factor of the wgmma core (1: none)
  void* ws;              // split-K partial sums and per-tile counters
};
static_assert(sizeof(ConvParams) == 8 * 11 + 4 * 24, "must match dg::ConvParams");

}  // namespace dnngraph::cuda::conv
