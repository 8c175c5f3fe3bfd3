// Convolution forward as an implicit GEMM on the mma.sync core (gemm_mma_sync.cuh):
//   M = output pixels (N x O x P x Q), N = output channels K, K = filter taps x channels (T R S C).
// Activations are NHWC (channels contiguous), filters KTRSC (each output channel's taps and
// channels packed), so a 16-byte chunk of the GEMM's k is 8 (fp32: 4) channels of one tap of one
// pixel; ES is the element size in bytes throughout. The A
// loader gathers those chunks straight from the activations (im2col addressing, zero-filled where
// the tap falls into the padding); B is a plain K-major matrix. 1D and 2D convolutions are 3D ones
// with unit dims in front.
#pragma once
#include "gemm_mma_sync.cuh"

namespace dg {

// Kernel arguments. Mirrored by src/engines/cuda/conv/conv_params.hpp.
struct ConvParams {
  i64 M, N, K;
  i64 x_stride[4];  // n, d, h, w (elements; the channel stride is 1)
  i64 w_stride_k;   // between output channels' filters
  const void* x;
  const void* w;
  int in[3];      // D, H, W
  int out[3];     // O, P, Q
  int filt[3];    // T, R, S
  int pad[3];     // leading padding
  int stride[3];
  int dil[3];
  int C;
  int epi_vec;
  int tiles_m, tiles_n;
  int splits;  // split-K factor of the wgmma core (1: none)
  int pad_;
  void* ws;    // split-K: partial sums [tile][split][128 x BN] fp32, then one counter per tile
};

template <int BM, int BK, int THREADS, int ES = 2>
struct ConvFpropLoaderA {
  typedef typename RawElem<ES>::type E;
  static constexpr int EPC = 16 / ES, CHUNKS = BK / EPC, ROWS = BM * CHUNKS / THREADS, ROW_STEP = THREADS / CHUNKS;
  const ConvParams* cp;
  const E* x;
  int jc;
  i64 base[ROWS];
  int d0[ROWS], h0[ROWS], w0[ROWS];  // the window's corner in the input (may be negative)

  __device__ __forceinline__ void init(const ConvParams& params, i64 m0) {
    cp = &params;
    x = static_cast<const E*>(params.x);
    jc = (int)threadIdx.x % CHUNKS;
#pragma unroll
    for (int u = 0; u < ROWS; ++u) {
      const i64 m = m0 + (int)threadIdx.x / CHUNKS + u * ROW_STEP;
      if (m < params.M) {
        const Pixel px = pixel_of(m, params.out);
        base[u] = px.n * params.x_stride[0];
        d0[u] = px.o * params.stride[0] - params.pad[0];
        h0[u] = px.p * params.stride[1] - params.pad[1];
        w0[u] = px.q * params.stride[2] - params.pad[2];
      } else {
        base[u] = 0;
        d0[u] = -(1 << 30);  // never inside the input
        h0[u] = w0[u] = 0;
      }
    }
  }

  __device__ __forceinline__ void load(u32 tile, int kt) const {
    const ConvParams& P = *cp;
    const i64 k = (i64)kt * BK + jc * EPC;
    const bool kval = k < P.K;
    const int c = (int)(k % P.C);
    int tap = (int)(k / P.C);
    const int s = tap % P.filt[2];
    tap /= P.filt[2];
    const int r = tap % P.filt[1];
    const int t = tap / P.filt[1];
#pragma unroll
    for (int u = 0; u < ROWS; ++u) {
      const int i = (int)threadIdx.x / CHUNKS + u * ROW_STEP;
      const int d = d0[u] + t * P.dil[0], h = h0[u] + r * P.dil[1], w = w0[u] + s * P.dil[2];
      const bool ok = kval && (unsigned)d < (unsigned)P.in[0] && (unsigned)h < (unsigned)P.in[1] &&
                      (unsigned)w < (unsigned)P.in[2];
      const E* src = x + base[u] + d * P.x_stride[1] + h * P.x_stride[2] + w * P.x_stride[3] + c;
      cp_async16(tile + tile_offset<BK, ES>(i, jc), ok ? (const void*)src : (const void*)x, ok ? 16 : 0);
    }
  }
};

// conv_dgrad (the transposed convolution): DX = sum over taps and output channels of DY x W.
//   M = DX pixels, N = DX channels, K = taps x DY channels (tap-major, so a chunk is 8 channels of
//   one DY pixel). ConvParams then describe the gathered tensor: x = DY, in = DY's spatial dims,
//   out = DX's, C = DY's channel count; filt/pad/stride/dil are the forward convolution's. A DX
//   pixel d meets tap t at the DY pixel (d + pad - t * dil) / stride when that divides exactly.
template <int BM, int BK, int THREADS, int ES = 2>
struct ConvDgradLoaderA {
  typedef typename RawElem<ES>::type E;
  static constexpr int EPC = 16 / ES, CHUNKS = BK / EPC, ROWS = BM * CHUNKS / THREADS, ROW_STEP = THREADS / CHUNKS;
  const ConvParams* cp;
  const E* x;
  int jc;
  i64 base[ROWS];
  int d0[ROWS], h0[ROWS], w0[ROWS];  // the DX pixel plus the leading padding

  __device__ __forceinline__ void init(const ConvParams& params, i64 m0) {
    cp = &params;
    x = static_cast<const E*>(params.x);
    jc = (int)threadIdx.x % CHUNKS;
#pragma unroll
    for (int u = 0; u < ROWS; ++u) {
      const i64 m = m0 + (int)threadIdx.x / CHUNKS + u * ROW_STEP;
      const Pixel px = pixel_of(m, params.out);
      base[u] = px.n * params.x_stride[0];
      d0[u] = m < params.M ? px.o + params.pad[0] : -(1 << 30);
      h0[u] = px.p + params.pad[1];
      w0[u] = px.q + params.pad[2];
    }
  }

  __device__ __forceinline__ static bool tap_hits(int v, int stride, int extent, int& idx) {
    if (v < 0 || v % stride != 0) return false;
    idx = v / stride;
    return idx < extent;
  }

  __device__ __forceinline__ void load(u32 tile, int kt) const {
    const ConvParams& P = *cp;
    const i64 k = (i64)kt * BK + jc * EPC;
    const bool kval = k < P.K;
    const int c = (int)(k % P.C);
    int tap = (int)(k / P.C);
    const int s = tap % P.filt[2];
    tap /= P.filt[2];
    const int r = tap % P.filt[1];
    const int t = tap / P.filt[1];
#pragma unroll
    for (int u = 0; u < ROWS; ++u) {
      const int i = (int)threadIdx.x / CHUNKS + u * ROW_STEP;
      int od = 0, oh = 0, ow = 0;
      const bool ok = kval && tap_hits(d0[u] - t * P.dil[0], P.stride[0], P.in[0], od) &&
                      tap_hits(h0[u] - r * P.dil[1], P.stride[1], P.in[1], oh) &&
                      tap_hits(w0[u] - s * P.dil[2], P.stride[2], P.in[2], ow);
      const E* src = x + base[u] + od * P.x_stride[1] + oh * P.x_stride[2] + ow * P.x_stride[3] + c;
      cp_async16(tile + tile_offset<BK, ES>(i, jc), ok ? (const void*)src : (const void*)x, ok ? 16 : 0);
    }
  }
};

// dgrad's B: W[k][c][taps] read as rows (tap, k) of contiguous c, an MN-major tile (BK x BN).
template <int BN, int BK, int THREADS, int ES = 2>
struct ConvDgradLoaderB {
  typedef typename RawElem<ES>::type E;
  static constexpr int EPC = 16 / ES, CHUNKS = BN / EPC;
  const ConvParams* cp;
  const E* w;
  i64 n0;

  __device__ __forceinline__ void load(u32 tile, int kt) const {
    const ConvParams& P = *cp;
    static_assert((BK * CHUNKS) % THREADS == 0, "tile chunks must split evenly over the threads");
#pragma unroll
    for (int u = 0; u < BK * CHUNKS / THREADS; ++u) {
      const int id = (int)threadIdx.x + u * THREADS;
      const int i = id / CHUNKS, jc = id % CHUNKS;
      const i64 kk = (i64)kt * BK + i, c = n0 + jc * EPC;
      const bool ok = kk < P.K && c < P.N;
      const i64 tap = kk / P.C, k = kk - tap * P.C;
      const E* src = w + k * P.w_stride_k + tap * P.N + c;
      cp_async16(tile + tile_offset<BN, ES>(i, jc), ok ? (const void*)src : (const void*)w, ok ? 16 : 0);
    }
  }
};

// The generated kernels call conv_fprop_mma_sync, conv_dgrad_mma_sync or conv_wgrad_mma_sync with
// their configuration: kDataType, the tile kTileM x kTileN x kTileK over kWarpsM x kWarpsN warps,
// kStages and the Epilogue.
template <class Config>
__device__ __forceinline__ void conv_dgrad_mma_sync(const ConvParams& cp, const PointwiseParams& p) {
  constexpr int DT = Config::kDataType, BM = Config::kTileM, BN = Config::kTileN, BK = Config::kTileK;
  constexpr int WARPS_M = Config::kWarpsM, WARPS_N = Config::kWarpsN, STAGES = Config::kStages;
  typedef typename Config::Epilogue Ep;
  extern __shared__ __align__(128) char smem[];
  constexpr int THREADS = WARPS_M * WARPS_N * 32;
  float red[Ep::kFull > 0 ? Ep::kFull : 1];
  i64 b;
  int tm, tn;
  typename Ep::Index c[Ep::kRank];
  mma_tile_start<Ep>(cp.tiles_m, cp.tiles_n, red, b, tm, tn, c);
  const i64 m0 = (i64)tm * BM, n0 = (i64)tn * BN;
  constexpr int ES = MmaOperand<DT>::ES;
  ConvDgradLoaderA<BM, BK, THREADS, ES> la;
  la.init(cp, m0);
  ConvDgradLoaderB<BN, BK, THREADS, ES> lb;
  lb.cp = &cp;
  lb.w = static_cast<const typename RawElem<ES>::type*>(cp.w);
  lb.n0 = n0;
  float acc[BM / WARPS_M / 16][BN / WARPS_N / 8][4];
  const int ktiles = (int)((cp.K + BK - 1) / BK);
  mma_mainloop<DT, BM, BN, BK, WARPS_M, WARPS_N, STAGES, true, false>(la, lb, ktiles, smem, acc);
  mma_epilogue<BM, BN, WARPS_M, WARPS_N, Ep>(p, c, m0, n0, cp.M, cp.N, cp.epi_vec, acc, red,
                                            reinterpret_cast<float*>(smem));
  Ep::finish_full(p, red);
}

// conv_wgrad: DW[k][tap, c] = sum over DY pixels of DY[pixel][k] x X[pixel shifted by the tap][c].
//   M = output channels K, N = taps x C, K = DY pixels. A is DY read as an MN-major strided matrix
//   (rows = pixels, K contiguous: w = DY, w_stride_k = its pixel stride); B gathers X: row = DY
//   pixel, 8 columns = 8 channels of one tap (x = X, in = X's spatial dims, out = DY's, C = X's
//   channel count).
template <int BN, int BK, int THREADS, int ES = 2>
struct ConvWgradLoaderB {
  typedef typename RawElem<ES>::type E;
  static constexpr int EPC = 16 / ES, CHUNKS = BN / EPC, ROWS = BK * CHUNKS / THREADS, ROW_STEP = THREADS / CHUNKS;
  const ConvParams* cp;
  const E* x;
  int jc;
  bool col_ok;
  int c, ft, fr, fs;  // this thread's column chunk: channel and tap

  __device__ __forceinline__ void init(const ConvParams& params, i64 n0) {
    cp = &params;
    x = static_cast<const E*>(params.x);
    jc = (int)threadIdx.x % CHUNKS;
    const i64 col = n0 + jc * EPC;
    col_ok = col < params.N;
    c = (int)(col % params.C);
    int tap = (int)(col / params.C);
    fs = tap % params.filt[2];
    tap /= params.filt[2];
    fr = tap % params.filt[1];
    ft = tap / params.filt[1];
  }

  __device__ __forceinline__ void load(u32 tile, int kt) const {
    const ConvParams& P = *cp;
#pragma unroll
    for (int u = 0; u < ROWS; ++u) {
      const int i = (int)threadIdx.x / CHUNKS + u * ROW_STEP;
      const i64 pix = (i64)kt * BK + i;
      const Pixel px = pixel_of(pix, P.out);
      const int d = px.o * P.stride[0] - P.pad[0] + ft * P.dil[0];
      const int h = px.p * P.stride[1] - P.pad[1] + fr * P.dil[1];
      const int w = px.q * P.stride[2] - P.pad[2] + fs * P.dil[2];
      const bool ok = col_ok && pix < P.K && (unsigned)d < (unsigned)P.in[0] && (unsigned)h < (unsigned)P.in[1] &&
                      (unsigned)w < (unsigned)P.in[2];
      const E* src = x + px.n * P.x_stride[0] + d * P.x_stride[1] + h * P.x_stride[2] + w * P.x_stride[3] + c;
      cp_async16(tile + tile_offset<BN, ES>(i, jc), ok ? (const void*)src : (const void*)x, ok ? 16 : 0);
    }
  }
};

template <class Config>
__device__ __forceinline__ void conv_wgrad_mma_sync(const ConvParams& cp, const PointwiseParams& p) {
  constexpr int DT = Config::kDataType, BM = Config::kTileM, BN = Config::kTileN, BK = Config::kTileK;
  constexpr int WARPS_M = Config::kWarpsM, WARPS_N = Config::kWarpsN, STAGES = Config::kStages;
  typedef typename Config::Epilogue Ep;
  extern __shared__ __align__(128) char smem[];
  constexpr int THREADS = WARPS_M * WARPS_N * 32;
  float red[Ep::kFull > 0 ? Ep::kFull : 1];
  i64 b;
  int tm, tn;
  typename Ep::Index c[Ep::kRank];
  mma_tile_start<Ep>(cp.tiles_m, cp.tiles_n, red, b, tm, tn, c);
  const i64 m0 = (i64)tm * BM, n0 = (i64)tn * BN;
  constexpr int ES = MmaOperand<DT>::ES;
  // DY: rows = pixels (k), columns = output channels (m)
  const auto la = strided_loader<BK, BM, THREADS, false, true, ES>(cp.w, cp.w_stride_k, 1, cp.K, cp.M, m0, BK);
  ConvWgradLoaderB<BN, BK, THREADS, ES> lb;
  lb.init(cp, n0);
  float acc[BM / WARPS_M / 16][BN / WARPS_N / 8][4];
  const int ktiles = (int)((cp.K + BK - 1) / BK);
  mma_mainloop<DT, BM, BN, BK, WARPS_M, WARPS_N, STAGES, false, false>(la, lb, ktiles, smem, acc);
  mma_epilogue<BM, BN, WARPS_M, WARPS_N, Ep>(p, c, m0, n0, cp.M, cp.N, cp.epi_vec, acc, red,
                                            reinterpret_cast<float*>(smem));
  Ep::finish_full(p, red);
}

template <class Config>
__device__ __forceinline__ void conv_fprop_mma_sync(const ConvParams& cp, const PointwiseParams& p) {
  constexpr int DT = Config::kDataType, BM = Config::kTileM, BN = Config::kTileN, BK = Config::kTileK;
  constexpr int WARPS_M = Config::kWarpsM, WARPS_N = Config::kWarpsN, STAGES = Config::kStages;
  typedef typename Config::Epilogue Ep;
  extern __shared__ __align__(128) char smem[];
  constexpr int THREADS = WARPS_M * WARPS_N * 32;
  float red[Ep::kFull > 0 ? Ep::kFull : 1];
  i64 b;
  int tm, tn;
  typename Ep::Index c[Ep::kRank];
  mma_tile_start<Ep>(cp.tiles_m, cp.tiles_n, red, b, tm, tn, c);
  const i64 m0 = (i64)tm * BM, n0 = (i64)tn * BN;
  constexpr int ES = MmaOperand<DT>::ES;
  ConvFpropLoaderA<BM, BK, THREADS, ES> la;
  la.init(cp, m0);
  const auto lb = strided_loader<BN, BK, THREADS, true, true, ES>(cp.w, cp.w_stride_k, 1, cp.N, cp.K, n0, BK);
  float acc[BM / WARPS_M / 16][BN / WARPS_N / 8][4];
  const int ktiles = (int)((cp.K + BK - 1) / BK);
  mma_mainloop<DT, BM, BN, BK, WARPS_M, WARPS_N, STAGES, true, true>(la, lb, ktiles, smem, acc);
  mma_epilogue<BM, BN, WARPS_M, WARPS_N, Ep>(p, c, m0, n0, cp.M, cp.N, cp.epi_vec, acc, red,
                                            reinterpret_cast<float*>(smem));
  Ep::finish_full(p, red);
}

}  // namespace dg
