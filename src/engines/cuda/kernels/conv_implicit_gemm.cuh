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
  SubgridRows rows;  // core 3's transposed-convolution phases: where the output pixels lie in DX
};

// A filter position k of the GEMM's k (tap-major: taps T x R x S, then C channels) as its channel
// and tap coordinates.
struct FilterTap {
  int c, t, r, s;
};
__device__ __forceinline__ FilterTap filter_tap(i64 k, const ConvParams& P) {
  FilterTap f;
  f.c = (int)(k % P.C);
  int tap = (int)(k / P.C);
  f.s = tap % P.filt[2];
  tap /= P.filt[2];
  f.r = tap % P.filt[1];
  f.t = tap / P.filt[1];
  return f;
}

// What the gathering loaders share: a tile of TILE_ROWS rows x COLS elements, each thread moving
// the 16-byte chunk column jc of ROWS rows, ROW_STEP apart; a chunk outside the tensor is zeroed.
// Enumerators, not static constexpr members (NVRTC would emit an unused device global for each).
template <int TILE_ROWS, int COLS, int THREADS, int ES>
struct ChunkGather {
  typedef typename RawElem<ES>::type E;
  enum : int { EPC = 16 / ES, CHUNKS = COLS / EPC, ROWS = TILE_ROWS * CHUNKS / THREADS, ROW_STEP = THREADS / CHUNKS };
  const ConvParams* cp;
  const E* x;
  int jc;

  __device__ __forceinline__ void bind(const ConvParams& params) {
    cp = &params;
    x = static_cast<const E*>(params.x);
    jc = (int)threadIdx.x % CHUNKS;
  }
  __device__ __forceinline__ static int row(int u) { return (int)threadIdx.x / CHUNKS + u * ROW_STEP; }
  // The filter tap and channel of this thread's chunk of k tile kt (COLS deep); whether it is in K.
  __device__ __forceinline__ bool chunk_tap(int kt, FilterTap& f) const {
    const i64 k = (i64)kt * COLS + jc * EPC;
    const bool in_k = k < cp->K;
    f = filter_tap(k, *cp);
    return in_k;
  }
  __device__ __forceinline__ void copy(u32 tile, int i, const E* src, bool ok) const {
    cp_async16(tile + tile_offset<COLS, ES>(i, jc), ok ? (const void*)src : (const void*)x, ok ? 16 : 0);
  }
};

template <int BM, int BK, int THREADS, int ES = 2>
struct ConvFpropLoaderA : ChunkGather<BM, BK, THREADS, ES> {
  typedef ChunkGather<BM, BK, THREADS, ES> G;
  i64 base[G::ROWS];
  int d0[G::ROWS], h0[G::ROWS], w0[G::ROWS];  // the window's corner in the input (may be negative)

  __device__ __forceinline__ void init(const ConvParams& params, i64 m0) {
    this->bind(params);
#pragma unroll
    for (int u = 0; u < G::ROWS; ++u) {
      const i64 m = m0 + (int)threadIdx.x / G::CHUNKS + u * G::ROW_STEP;  // as row(u), in 64 bits
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
    const ConvParams& P = *this->cp;
    FilterTap f;
    const bool kval = this->chunk_tap(kt, f);
#pragma unroll
    for (int u = 0; u < G::ROWS; ++u) {
      const int i = G::row(u);
      const int d = d0[u] + f.t * P.dil[0], h = h0[u] + f.r * P.dil[1], w = w0[u] + f.s * P.dil[2];
      const bool ok = kval && (unsigned)d < (unsigned)P.in[0] && (unsigned)h < (unsigned)P.in[1] &&
                      (unsigned)w < (unsigned)P.in[2];
      this->copy(tile, i, this->x + base[u] + d * P.x_stride[1] + h * P.x_stride[2] + w * P.x_stride[3] + f.c,
                 ok);
    }
  }
};

// conv_dgrad (the transposed convolution): DX = sum over taps and output channels of DY x W.
//   M = DX pixels, N = DX channels, K = taps x DY channels (tap-major, so a chunk is 8 channels of
//   one DY pixel). ConvParams then describe the gathered tensor: x = DY, in = DY's spatial dims,
//   out = DX's, C = DY's channel count; filt/pad/stride/dil are the forward convolution's. A DX
//   pixel d meets tap t at the DY pixel (d + pad - t * dil) / stride when that divides exactly.
template <int BM, int BK, int THREADS, int ES = 2>
struct ConvDgradLoaderA : ChunkGather<BM, BK, THREADS, ES> {
  typedef ChunkGather<BM, BK, THREADS, ES> G;
  i64 base[G::ROWS];
  int d0[G::ROWS], h0[G::ROWS], w0[G::ROWS];  // the DX pixel plus the leading padding

  __device__ __forceinline__ void init(const ConvParams& params, i64 m0) {
    this->bind(params);
#pragma unroll
    for (int u = 0; u < G::ROWS; ++u) {
      const i64 m = m0 + (int)threadIdx.x / G::CHUNKS + u * G::ROW_STEP;  // as row(u), in 64 bits
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
    const ConvParams& P = *this->cp;
    FilterTap f;
    const bool kval = this->chunk_tap(kt, f);
#pragma unroll
    for (int u = 0; u < G::ROWS; ++u) {
      int od = 0, oh = 0, ow = 0;
      const bool ok = kval && tap_hits(d0[u] - f.t * P.dil[0], P.stride[0], P.in[0], od) &&
                      tap_hits(h0[u] - f.r * P.dil[1], P.stride[1], P.in[1], oh) &&
                      tap_hits(w0[u] - f.s * P.dil[2], P.stride[2], P.in[2], ow);
      this->copy(tile, G::row(u),
                 this->x + base[u] + od * P.x_stride[1] + oh * P.x_stride[2] + ow * P.x_stride[3] + f.c, ok);
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
// MmaSyncCta's configuration (gemm_mma_sync.cuh); their Operands for mma_sync_cta say what A and B
// gather. No batch (one GEMM over every pixel): batch() sets nothing and the offsets go unused.
template <class Cta>
struct ConvDgradOperands {
  enum : bool { A_KM = true, B_KM = false };
  typedef ConvDgradLoaderA<Cta::BM, Cta::BK, Cta::THREADS, Cta::ES> A;
  typedef ConvDgradLoaderB<Cta::BN, Cta::BK, Cta::THREADS, Cta::ES> B;
  template <class Index>
  __device__ __forceinline__ static void batch(const ConvParams&, i64, i64&, i64&, Index&) {}
  __device__ __forceinline__ static void init_a(A& la, const ConvParams& cp, i64 m0, i64) { la.init(cp, m0); }
  __device__ __forceinline__ static void init_b(B& lb, const ConvParams& cp, i64 n0, i64) {
    lb.cp = &cp;
    lb.w = static_cast<const typename Cta::E*>(cp.w);
    lb.n0 = n0;
  }
};

template <class Config>
__device__ __forceinline__ void conv_dgrad_mma_sync(const ConvParams& cp, const PointwiseParams& p) {
  mma_sync_cta<ConvDgradOperands, Config>(cp, p);
}

// conv_wgrad: DW[k][tap, c] = sum over DY pixels of DY[pixel][k] x X[pixel shifted by the tap][c].
//   M = output channels K, N = taps x C, K = DY pixels. A is DY read as an MN-major strided matrix
//   (rows = pixels, K contiguous: w = DY, w_stride_k = its pixel stride); B gathers X: row = DY
//   pixel, 8 columns = 8 channels of one tap (x = X, in = X's spatial dims, out = DY's, C = X's
//   channel count).
template <int BN, int BK, int THREADS, int ES = 2>
struct ConvWgradLoaderB : ChunkGather<BK, BN, THREADS, ES> {
  typedef ChunkGather<BK, BN, THREADS, ES> G;
  bool col_ok;
  FilterTap f;  // this thread's column chunk: channel and tap

  __device__ __forceinline__ void init(const ConvParams& params, i64 n0) {
    this->bind(params);
    const i64 col = n0 + this->jc * G::EPC;
    col_ok = col < params.N;
    f = filter_tap(col, params);
  }

  __device__ __forceinline__ void load(u32 tile, int kt) const {
    const ConvParams& P = *this->cp;
#pragma unroll
    for (int u = 0; u < G::ROWS; ++u) {
      const int i = G::row(u);
      const i64 pix = (i64)kt * BK + i;
      const Pixel px = pixel_of(pix, P.out);
      const int d = px.o * P.stride[0] - P.pad[0] + f.t * P.dil[0];
      const int h = px.p * P.stride[1] - P.pad[1] + f.r * P.dil[1];
      const int w = px.q * P.stride[2] - P.pad[2] + f.s * P.dil[2];
      const bool ok = col_ok && pix < P.K && (unsigned)d < (unsigned)P.in[0] && (unsigned)h < (unsigned)P.in[1] &&
                      (unsigned)w < (unsigned)P.in[2];
      this->copy(tile, i,
                 this->x + px.n * P.x_stride[0] + d * P.x_stride[1] + h * P.x_stride[2] + w * P.x_stride[3] + f.c, ok);
    }
  }
};

template <class Cta>
struct ConvWgradOperands {
  enum : bool { A_KM = false, B_KM = false };
  typedef StridedLoader<Cta::BK, Cta::BM, Cta::THREADS, false, true, Cta::ES> A;
  typedef ConvWgradLoaderB<Cta::BN, Cta::BK, Cta::THREADS, Cta::ES> B;
  template <class Index>
  __device__ __forceinline__ static void batch(const ConvParams&, i64, i64&, i64&, Index&) {}
  // DY: rows = pixels (k), columns = output channels (m)
  __device__ __forceinline__ static void init_a(A& la, const ConvParams& cp, i64 m0, i64) {
    la.init(cp.w, cp.w_stride_k, 1, cp.K, cp.M, m0, Cta::BK);
  }
  __device__ __forceinline__ static void init_b(B& lb, const ConvParams& cp, i64 n0, i64) { lb.init(cp, n0); }
};

template <class Config>
__device__ __forceinline__ void conv_wgrad_mma_sync(const ConvParams& cp, const PointwiseParams& p) {
  mma_sync_cta<ConvWgradOperands, Config>(cp, p);
}

template <class Cta>
struct ConvFpropOperands {
  enum : bool { A_KM = true, B_KM = true };
  typedef ConvFpropLoaderA<Cta::BM, Cta::BK, Cta::THREADS, Cta::ES> A;
  typedef StridedLoader<Cta::BN, Cta::BK, Cta::THREADS, true, true, Cta::ES> B;
  template <class Index>
  __device__ __forceinline__ static void batch(const ConvParams&, i64, i64&, i64&, Index&) {}
  __device__ __forceinline__ static void init_a(A& la, const ConvParams& cp, i64 m0, i64) { la.init(cp, m0); }
  __device__ __forceinline__ static void init_b(B& lb, const ConvParams& cp, i64 n0, i64) {
    lb.init(cp.w, cp.w_stride_k, 1, cp.N, cp.K, n0, Cta::BK);
  }
};

template <class Config>
__device__ __forceinline__ void conv_fprop_mma_sync(const ConvParams& cp, const PointwiseParams& p) {
  mma_sync_cta<ConvFpropOperands, Config>(cp, p);
}

}  // namespace dg
