// Depthwise convolution forward (groups == C == K), direct: each thread computes 8 channels of
// one output pixel in fp32, reading the activations as 16-byte vectors (NHWC) where VEC, and
// keeps its channels' filter taps in registers while its channel group stays the same (the
// launch makes the grid stride a multiple of the channel groups). The fused epilogue runs on the
// 8 results through the same generated functor as the GEMM kernels (coordinates [pixel, channel]).
#pragma once
#include "gemm_common.cuh"

namespace dg {

// Kernel arguments. Mirrored by src/engines/cuda/conv/depthwise_params.hpp.
struct DwParams {
  i64 M;            // output pixels (N x O x P x Q)
  i64 x_stride[4];  // n, d, h, w (the channel stride is 1)
  i64 w_stride_c;   // between channels' filters
  i64 w_stride_tap[3];
  const void* x;
  const void* w;
  int in[3], out[3], filt[3], pad[3], stride[3], dil[3];
  int C;
  int epi_vec;
};

#define DG_DW_MAX_TAPS 9

// The 8 input channels tap `tap` of output pixel (o, pp, q) reads; false outside the input.
template <int DT, bool VEC>
__device__ __forceinline__ bool dw_tap_input(const DwParams& P, int o, int pp, int q, i64 xb, int c0, int tap,
                                             float (&xv)[8]) {
  const int fs = tap % P.filt[2], fr = (tap / P.filt[2]) % P.filt[1], ft = tap / (P.filt[2] * P.filt[1]);
  const int d = o * P.stride[0] - P.pad[0] + ft * P.dil[0];
  const int h = pp * P.stride[1] - P.pad[1] + fr * P.dil[1];
  const int w = q * P.stride[2] - P.pad[2] + fs * P.dil[2];
  if ((unsigned)d >= (unsigned)P.in[0] || (unsigned)h >= (unsigned)P.in[1] || (unsigned)w >= (unsigned)P.in[2])
    return false;
  const i64 off = xb + d * P.x_stride[1] + h * P.x_stride[2] + w * P.x_stride[3];
  if (VEC) {
    load_vec<DT, 8>(P.x, off, xv);
  } else {
#pragma unroll
    for (int j = 0; j < 8; ++j) xv[j] = c0 + j < P.C ? load_one<DT>(P.x, off + j) : 0.0f;
  }
  return true;
}

template <int DT, bool VEC, class Ep>
__device__ __forceinline__ void conv_depthwise(const DwParams& P, const PointwiseParams& p) {
  typedef typename Ep::Index Index;
  float red[Ep::kFull > 0 ? Ep::kFull : 1];
  Ep::init_full(red);
  const int groups = (P.C + 7) / 8;
  const int taps = P.filt[0] * P.filt[1] * P.filt[2];
  const bool taps_in_regs = taps <= DG_DW_MAX_TAPS;
  const i64 total = P.M * groups;
  const i64 step = (i64)gridDim.x * blockDim.x;
  float wreg[DG_DW_MAX_TAPS][8];
  int cached = -1;
  Index c[Ep::kRank];
#pragma unroll
  for (int d = 0; d < Ep::kRank; ++d) c[d] = 0;
  for (i64 item = (i64)blockIdx.x * blockDim.x + threadIdx.x; item < total; item += step) {
    const int cg = (int)(item % groups);
    const i64 m = item / groups;
    const int c0 = cg * 8;
    if (taps_in_regs && cg != cached) {
      cached = cg;
#pragma unroll
      for (int tap = 0; tap < DG_DW_MAX_TAPS; ++tap)
#pragma unroll
        for (int j = 0; j < 8; ++j) {
          const int fs = tap % P.filt[2], fr = (tap / P.filt[2]) % P.filt[1], ft = tap / (P.filt[2] * P.filt[1]);
          wreg[tap][j] = (tap < taps && c0 + j < P.C)
                             ? load_one<DT>(P.w, (c0 + j) * P.w_stride_c + ft * P.w_stride_tap[0] +
                                                     fr * P.w_stride_tap[1] + fs * P.w_stride_tap[2])
                             : 0.0f;
        }
    }
    i64 t = m;
    const int q = (int)(t % P.out[2]);
    t /= P.out[2];
    const int pp = (int)(t % P.out[1]);
    t /= P.out[1];
    const int o = (int)(t % P.out[0]);
    const i64 xb = (t / P.out[0]) * P.x_stride[0] + c0;
    float acc[8];
#pragma unroll
    for (int j = 0; j < 8; ++j) acc[j] = 0.0f;
    if (taps_in_regs) {
#pragma unroll
      for (int tap = 0; tap < DG_DW_MAX_TAPS; ++tap) {
        float xv[8];
        if (tap < taps && dw_tap_input<DT, VEC>(P, o, pp, q, xb, c0, tap, xv))
#pragma unroll
          for (int j = 0; j < 8; ++j) acc[j] += xv[j] * wreg[tap][j];
      }
    } else {
      for (int tap = 0; tap < taps; ++tap) {
        float xv[8];
        if (!dw_tap_input<DT, VEC>(P, o, pp, q, xb, c0, tap, xv)) continue;
        const int fs = tap % P.filt[2], fr = (tap / P.filt[2]) % P.filt[1], ft = tap / (P.filt[2] * P.filt[1]);
#pragma unroll
        for (int j = 0; j < 8; ++j)
          if (c0 + j < P.C)
            acc[j] += xv[j] * load_one<DT>(P.w, (c0 + j) * P.w_stride_c + ft * P.w_stride_tap[0] +
                                                    fr * P.w_stride_tap[1] + fs * P.w_stride_tap[2]);
      }
    }
    c[Ep::kRank - 2] = (Index)m;
    if (P.epi_vec == 4 && c0 + 8 <= P.C) {
#pragma unroll
      for (int h = 0; h < 2; ++h) {
        c[Ep::kRank - 1] = (Index)(c0 + 4 * h);
        typename Ep::template Loaded<4> l;
        Ep::template load<4>(p, c, l);
        Ep::template apply<4>(p, c, l, acc + 4 * h, red);
      }
    } else {
#pragma unroll
      for (int j = 0; j < 8; ++j) {
        if (c0 + j >= P.C) break;
        c[Ep::kRank - 1] = (Index)(c0 + j);
        typename Ep::template Loaded<1> l;
        Ep::template load<1>(p, c, l);
        Ep::template apply<1>(p, c, l, acc + j, red);
      }
    }
  }
  Ep::finish_full(p, red);
}

}  // namespace dg
