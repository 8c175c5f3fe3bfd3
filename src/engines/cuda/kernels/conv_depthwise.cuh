// Depthwise convolution forward (groups == C == K), direct. conv_depthwise_strip (2D/1D filters of
// at most DG_DW_MAX_TAPS taps, the usual case) is described there; conv_depthwise (any filter) has
// each thread compute 8 channels of one output pixel in fp32, reading the activations as 16-byte vectors (NHWC) where VEC, and
// keeps its channels' filter taps in registers while its channel group stays the same (the
// launch makes the grid stride a multiple of the channel groups). The fused epilogue runs on the
// 8 results through the same generated functor as the GEMM kernels (coordinates [pixel, channel]).
#pragma once
#include "gemm_common.cuh"

namespace dg {

// Kernel arguments. Mirrored by src/engines/cuda/conv/conv_depthwise_direct.cpp.
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

// The epilogue of one output pixel's 8 channels c0.. (c holds the pixel): two 4-wide vectors where
// the operands allow them and all 8 channels exist, else channel by channel.
template <class Ep>
__device__ __forceinline__ void dw_epilogue8(const DwParams& P, const PointwiseParams& p,
                                             typename Ep::Index (&c)[Ep::kRank], int c0, const float* acc,
                                             float* red) {
  typedef typename Ep::Index Index;
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

// The generated per-pixel kernel's configuration: kDataType, kVecLoads (16-byte activation loads)
// and the Epilogue.
template <class Config>
__device__ __forceinline__ void conv_depthwise(const DwParams& P, const PointwiseParams& p) {
  constexpr int DT = Config::kDataType;
  constexpr bool VEC = Config::kVecLoads;
  typedef typename Config::Epilogue Ep;
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
    const Pixel px = pixel_of(m, P.out);
    const int o = px.o, pp = px.p, q = px.q;
    const i64 xb = px.n * P.x_stride[0] + c0;
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
    dw_epilogue8<Ep>(P, p, c, c0, acc, red);
  }
  Ep::finish_full(p, red);
}

// 8 channels at element offset `off` (VEC: one 16-byte or 32-byte load), zero past C.
template <int DT, bool VEC>
__device__ __forceinline__ void dw_load8(const void* base, i64 off, int c0, int C, float (&v)[8]) {
  if (VEC) {
    load_vec<DT, 8>(base, off, v);
  } else {
#pragma unroll
    for (int j = 0; j < 8; ++j) v[j] = c0 + j < C ? load_one<DT>(base, off + j) : 0.0f;
  }
}

// Output column j of a strip reads input column i (relative to the strip's first) with filter
// column s when i == j * SW + s * DL; -1 when it does not.
template <int SW, int DL, int FS>
__device__ __forceinline__ constexpr int dw_filter_col(int i, int j) {
  return (i - j * SW) >= 0 && (i - j * SW) % DL == 0 && (i - j * SW) / DL < FS ? (i - j * SW) / DL : -1;
}

// 2D (or 1D) depthwise, filter FR x FS with FR * FS <= DG_DW_MAX_TAPS, W stride SW and dilation DL
// fixed at compile time. A thread keeps one channel group (8 channels) for its whole life, their
// filters in registers (WVEC: the filters are packed [C][R][S], read as 16-byte vectors), and per
// item computes QS consecutive output pixels along W: each input column of the window is loaded
// once for all QS outputs ((QS - 1) * SW + (FS - 1) * DL + 1 loads per filter row instead of
// QS * FS). Index math is 32-bit (the host checks the item count fits); the launch makes the total
// thread count a multiple of the channel groups.
template <class Config>
__device__ __forceinline__ void conv_depthwise_strip(const DwParams& P, const PointwiseParams& p) {
  constexpr int DT = Config::kDataType, FR = Config::kFilterH, FS = Config::kFilterW, SW = Config::kStrideW;
  constexpr int DL = Config::kDilationW, QS = Config::kStrip;
  constexpr bool VEC = Config::kVecLoads, WVEC = Config::kVecFilters;
  typedef typename Config::Epilogue Ep;
  typedef typename Ep::Index Index;
  constexpr int TAPS = FR * FS, IW = (QS - 1) * SW + (FS - 1) * DL + 1;
  float red[Ep::kFull > 0 ? Ep::kFull : 1];
  Ep::init_full(red);
  const int groups = (P.C + 7) >> 3;
  const int strips = (P.out[2] + QS - 1) / QS;
  const int rows = (int)(P.M / P.out[2]);  // N x O x P
  const int tid = (int)(blockIdx.x * blockDim.x + threadIdx.x);
  const int cg = tid % groups, c0 = cg * 8;
  const int step = (int)(gridDim.x * blockDim.x) / groups;
  float wr[TAPS][8];
  if (WVEC) {
#pragma unroll
    for (int e = 0; e < TAPS; ++e) {  // element e * 8 .. of this group's [8][TAPS] block
      float v[8];
      load_vec<DT, 8>(P.w, (i64)c0 * TAPS + e * 8, v);
#pragma unroll
      for (int u = 0; u < 8; ++u) wr[(e * 8 + u) % TAPS][(e * 8 + u) / TAPS] = v[u];
    }
  } else {
#pragma unroll
    for (int r = 0; r < FR; ++r)
#pragma unroll
      for (int s = 0; s < FS; ++s)
#pragma unroll
        for (int j = 0; j < 8; ++j)
          wr[r * FS + s][j] = c0 + j < P.C ? load_one<DT>(P.w, (i64)(c0 + j) * P.w_stride_c + r * P.w_stride_tap[1] +
                                                                   s * P.w_stride_tap[2])
                                           : 0.0f;
  }
  Index c[Ep::kRank];
#pragma unroll
  for (int d = 0; d < Ep::kRank; ++d) c[d] = 0;
  for (int it = tid / groups; it < rows * strips; it += step) {
    const int row = it / strips, q0 = (it - row * strips) * QS;
    const int pp = row % P.out[1], no = row / P.out[1];
    const int o = no % P.out[0], n = no / P.out[0];
    float acc[QS][8];
#pragma unroll
    for (int j = 0; j < QS; ++j)
#pragma unroll
      for (int u = 0; u < 8; ++u) acc[j][u] = 0.0f;
    const int d = o * P.stride[0] - P.pad[0];
    if ((unsigned)d < (unsigned)P.in[0]) {
      const i64 nb = (i64)n * P.x_stride[0] + (i64)d * P.x_stride[1] + c0;
      const int w0 = q0 * SW - P.pad[2];
#pragma unroll
      for (int r = 0; r < FR; ++r) {
        const int h = pp * P.stride[1] - P.pad[1] + r * P.dil[1];
        if ((unsigned)h >= (unsigned)P.in[1]) continue;
        const i64 rb = nb + (i64)h * P.x_stride[2];
#pragma unroll
        for (int i = 0; i < IW; ++i) {
          const int w = w0 + i;
          if ((unsigned)w >= (unsigned)P.in[2]) continue;
          float xv[8];
          dw_load8<DT, VEC>(P.x, rb + (i64)w * P.x_stride[3], c0, P.C, xv);
#pragma unroll
          for (int j = 0; j < QS; ++j) {
            const int s = dw_filter_col<SW, DL, FS>(i, j);
            if (s < 0) continue;
#pragma unroll
            for (int u = 0; u < 8; ++u) acc[j][u] += xv[u] * wr[r * FS + s][u];
          }
        }
      }
    }
#pragma unroll
    for (int j = 0; j < QS; ++j) {
      if (q0 + j >= P.out[2]) break;
      c[Ep::kRank - 2] = (Index)((i64)row * P.out[2] + q0 + j);
      dw_epilogue8<Ep>(P, p, c, c0, acc[j], red);
    }
  }
  Ep::finish_full(p, red);
}

}  // namespace dg
