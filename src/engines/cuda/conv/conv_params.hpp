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
  // dg::SubgridRows: a transposed convolution's phase (core 3) writes output pixel (n, o, p, q) of
  // its `sub_out` grid at (n, o * step + first, ...) of DX's `sub_full` one.
  int32_t sub_out[3], sub_full[3], sub_step[3], sub_first[3];
  uint64_t sub_div_out[3];  // codegen::fast_div_magic of sub_out[d]
};
static_assert(sizeof(ConvParams) == 8 * 11 + 4 * 24 + 4 * 12 + 8 * 3, "must match dg::ConvParams");

}  // namespace dnngraph::cuda::conv
