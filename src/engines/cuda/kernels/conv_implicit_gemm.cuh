// Convolution forward as an implicit GEMM on the mma.sync core (gemm_mma_sync.cuh):
//   M = output pixels (N x O x P x Q), N = output channels K, K = filter taps x channels (T R S C).
// Activations are NHWC (channels contiguous), filters KTRSC (each output channel's taps and
// channels packed), so a 16-byte chunk of the GEMM's k is 8 channels of one tap of one pixel. The A
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
};

template <int BM, int BK, int THREADS>
struct ConvFpropLoaderA {
  static constexpr int CHUNKS = BK / 8, ROWS = BM * CHUNKS / THREADS, ROW_STEP = THREADS / CHUNKS;
  const ConvParams* cp;
  const u16* x;
  int jc;
  i64 base[ROWS];
  int d0[ROWS], h0[ROWS], w0[ROWS];  // the window's corner in the input (may be negative)

  __device__ __forceinline__ void init(const ConvParams& params, i64 m0) {
    cp = &params;
    x = static_cast<const u16*>(params.x);
    jc = (int)threadIdx.x % CHUNKS;
#pragma unroll
    for (int u = 0; u < ROWS; ++u) {
      const i64 m = m0 + (int)threadIdx.x / CHUNKS + u * ROW_STEP;
      if (m < params.M) {
        i64 t = m;
        const int q = (int)(t % params.out[2]);
        t /= params.out[2];
        const int p = (int)(t % params.out[1]);
        t /= params.out[1];
        const int o = (int)(t % params.out[0]);
        const i64 n = t / params.out[0];
        base[u] = n * params.x_stride[0];
        d0[u] = o * params.stride[0] - params.pad[0];
        h0[u] = p * params.stride[1] - params.pad[1];
        w0[u] = q * params.stride[2] - params.pad[2];
      } else {
        base[u] = 0;
        d0[u] = -(1 << 30);  // never inside the input
        h0[u] = w0[u] = 0;
      }
    }
  }

  __device__ __forceinline__ void load(u32 tile, int kt) const {
    const ConvParams& P = *cp;
    const i64 k = (i64)kt * BK + jc * 8;
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
      const u16* src = x + base[u] + d * P.x_stride[1] + h * P.x_stride[2] + w * P.x_stride[3] + c;
      cp_async16(tile + tile_offset<BK>(i, jc), ok ? (const void*)src : (const void*)x, ok ? 16 : 0);
    }
  }
};

template <int DT, int BM, int BN, int BK, int WARPS_M, int WARPS_N, int STAGES, class Ep>
__device__ __forceinline__ void conv_fprop_mma_sync(const ConvParams& cp, const PointwiseParams& p) {
  extern __shared__ __align__(128) char smem[];
  constexpr int THREADS = WARPS_M * WARPS_N * 32;
  float red[Ep::kFull > 0 ? Ep::kFull : 1];
  Ep::init_full(red);
  i64 b;
  int tm, tn;
  tile_coords(blockIdx.x, cp.tiles_m, cp.tiles_n, b, tm, tn);
  typename Ep::Index c[Ep::kRank];
#pragma unroll
  for (int d = 0; d < Ep::kRank; ++d) c[d] = 0;
  const i64 m0 = (i64)tm * BM, n0 = (i64)tn * BN;
  ConvFpropLoaderA<BM, BK, THREADS> la;
  la.init(cp, m0);
  StridedLoader<BN, BK, THREADS, true, true> lb;
  lb.base = static_cast<const u16*>(cp.w);
  lb.rs = cp.w_stride_k;
  lb.cs = 1;
  lb.rows = cp.N;
  lb.cols = cp.K;
  lb.fixed = n0;
  lb.bk = BK;
  float acc[BM / WARPS_M / 16][BN / WARPS_N / 8][4];
  const int ktiles = (int)((cp.K + BK - 1) / BK);
  mma_mainloop<DT, BM, BN, BK, WARPS_M, WARPS_N, STAGES, true, true>(la, lb, ktiles, smem, acc);
  mma_epilogue<BM, BN, WARPS_M, WARPS_N, Ep>(p, c, m0, n0, cp.M, cp.N, cp.epi_vec, acc, red,
                                            reinterpret_cast<float*>(smem));
  Ep::finish_full(p, red);
}

}  // namespace dg
