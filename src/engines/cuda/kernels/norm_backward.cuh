// cuda_norm_rowwise's backward: DX of each row, and DSCALE/DBIAS as column sums over the rows in
// slices of the workspace, added by norm_partials (see norm_rowwise.cuh).
#pragma once
#include "norm_common.cuh"

namespace dg {

// ---- backward
// With g = dy * scale and xhat = (x - mean) * inv over a row of n elements (ref_norm_training.cpp):
//   dx = inv * (g - sum(g) / n - xhat * sum(g * xhat) / n)   (rmsnorm: mean 0, no sum(g) term)

template <class C>
__device__ __forceinline__ void row_stats(const NormParams& P, i64 row, float& mean, float& inv) {
  mean = C::kLayernorm ? P.mean[row * P.mean_pitch] : 0.0f;
  inv = P.inv[row * P.inv_pitch];
}

// Turns this vector's x into xhat and dy into g in place, adding sum(g), sum(g * xhat) to s and
// dy * xhat, dy to the column sums: DX then needs neither the scale (a second load) nor x again.
template <class C>
__device__ __forceinline__ void backward_terms(const NormParams& P, i64 col, float (&x)[C::kVec], float (&dy)[C::kVec],
                                               float mean, float inv, float (&s)[2], float (&ds)[C::kVec],
                                               float (&db)[C::kVec]) {
  float sc[C::kVec];
  load_vec<C::kScaleType, C::kVec>(P.scale, col, sc);
DG_UNROLL
  for (int j = 0; j < C::kVec; ++j) {
    const float xhat = (x[j] - mean) * inv, g = dy[j] * sc[j];
    s[0] += g;
    s[1] += g * xhat;
    ds[j] += dy[j] * xhat;
    db[j] += dy[j];
    x[j] = xhat;
    dy[j] = g;
  }
}

// xhat and g of a vector whose sums were taken before (streamed rows, loaded again).
template <class C>
__device__ __forceinline__ void to_terms(const NormParams& P, i64 col, float (&x)[C::kVec], float (&dy)[C::kVec],
                                         float mean, float inv) {
  float sc[C::kVec];
  load_vec<C::kScaleType, C::kVec>(P.scale, col, sc);
DG_UNROLL
  for (int j = 0; j < C::kVec; ++j) x[j] = (x[j] - mean) * inv, dy[j] = dy[j] * sc[j];
}

template <class C>
__device__ __forceinline__ void store_dx(const NormParams& P, i64 row, i64 col, const float (&xhat)[C::kVec],
                                         const float (&g)[C::kVec], float inv, float a, float b) {
  float dx[C::kVec];
DG_UNROLL
  for (int j = 0; j < C::kVec; ++j) dx[j] = inv * (g[j] - a - xhat[j] * b);
  store_vec<C::kOutType, C::kVec>(P.out, row * P.out_pitch + col, dx);
}

// One row's X, DY and statistics as loaded: raw vectors, half the registers of floats for 16-bit
// types, so the next row can be in flight while this one is summed and stored.
template <class C>
struct RowBits {
  static constexpr int K = C::kItems > 0 ? C::kItems : 1;
  Packed<typename Storage<C::kXType>::type, C::kVec> x[K];
  Packed<typename Storage<C::kDyType>::type, C::kVec> dy[K];
  float mean, inv;
};

template <class C>
__device__ __forceinline__ void load_row_bits(const NormParams& P, i64 row, int lane, RowBits<C>& r) {
  typedef typename Storage<C::kXType>::type XT;
  typedef typename Storage<C::kDyType>::type DT;
  typedef decltype(r.x[0].raw) XRaw;
  typedef decltype(r.dy[0].raw) DRaw;
DG_UNROLL
  for (int k = 0; k < RowBits<C>::K; ++k) {
    const i64 col = (i64)(k * C::kThreads + lane) * C::kVec;
    const bool ok = col < P.cols;  // padding lanes hold zeros
    r.x[k].raw = ok ? *reinterpret_cast<const XRaw*>(static_cast<const XT*>(P.x) + row * P.x_pitch + col) : XRaw{};
    r.dy[k].raw = ok ? *reinterpret_cast<const DRaw*>(static_cast<const DT*>(P.dy) + row * P.dy_pitch + col) : DRaw{};
  }
  row_stats<C>(P, row, r.mean, r.inv);
}

template <class C>
__device__ __forceinline__ void backward_row_resident(const NormParams& P, i64 row, int lane, Sum2* scratch, int parity,
                                                      float (&x)[RowBits<C>::K][C::kVec],
                                                      float (&dy)[RowBits<C>::K][C::kVec], float mean, float inv,
                                                      float (&ds)[RowBits<C>::K][C::kVec],
                                                      float (&db)[RowBits<C>::K][C::kVec]) {
  constexpr int V = C::kVec, T = C::kThreads, K = RowBits<C>::K;
  float s[2] = {0.0f, 0.0f};
DG_UNROLL
  for (int k = 0; k < K; ++k) {
    const i64 col = (i64)(k * T + lane) * V;
    if (col < P.cols) backward_terms<C>(P, col, x[k], dy[k], mean, inv, s, ds[k], db[k]);
  }
  group_sum2<T>(s, scratch, parity);
  const float a = C::kLayernorm ? s[0] * P.inv_cols : 0.0f, b = s[1] * P.inv_cols;
  if (!C::kDx) return;
DG_UNROLL
  for (int k = 0; k < K; ++k) {
    const i64 col = (i64)(k * T + lane) * V;
    if (col < P.cols) store_dx<C>(P, row, col, x[k], dy[k], inv, a, b);
  }
}

// The group's rows with the row in registers: load a row, then its sums and DX; with kPrefetch the
// loaded row is unpacked and the next one's loads start before this row's sums.
template <class C>
__device__ __forceinline__ void backward_rows_resident(const NormParams& P, i64 row, i64 step, int lane,
                                                       Sum2* scratch, float (&ds)[RowBits<C>::K][C::kVec],
                                                       float (&db)[RowBits<C>::K][C::kVec]) {
  constexpr int V = C::kVec, T = C::kThreads, K = RowBits<C>::K;
  int parity = 0;
  if (!C::kPrefetch) {  // straight into floats: scalar rows staged as raw bits too spill (ptxas)
    for (; row < P.rows; row += step, parity ^= 1) {
      float x[K][V], dy[K][V], mean, inv;
DG_UNROLL
      for (int k = 0; k < K; ++k) {
        const i64 col = (i64)(k * T + lane) * V;
        load_or_zero<C::kXType, V>(P.x, row * P.x_pitch + col, col < P.cols, x[k]);
        load_or_zero<C::kDyType, V>(P.dy, row * P.dy_pitch + col, col < P.cols, dy[k]);
      }
      row_stats<C>(P, row, mean, inv);
      backward_row_resident<C>(P, row, lane, scratch, parity, x, dy, mean, inv, ds, db);
    }
    return;
  }
  RowBits<C> bits;
  if (row < P.rows) load_row_bits<C>(P, row, lane, bits);
  for (; row < P.rows; row += step, parity ^= 1) {
    float x[K][V], dy[K][V];
DG_UNROLL
    for (int k = 0; k < K; ++k)
DG_UNROLL
      for (int j = 0; j < V; ++j) x[k][j] = to_float<C::kXType>(bits.x[k].v[j]), dy[k][j] = to_float<C::kDyType>(bits.dy[k].v[j]);
    const float mean = bits.mean, inv = bits.inv;
    if (row + step < P.rows) load_row_bits<C>(P, row + step, lane, bits);
    backward_row_resident<C>(P, row, lane, scratch, parity, x, dy, mean, inv, ds, db);
  }
}

// Streaming: the column sums go straight to the block's workspace slice (one group per block, so
// each column has one owner thread; its first row writes, the later ones add).
template <class C>
__device__ __forceinline__ void backward_row_streamed(const NormParams& P, i64 row, int lane, Sum2* scratch,
                                                      int parity) {
  constexpr int V = C::kVec, T = C::kThreads;
  float mean, inv;
  row_stats<C>(P, row, mean, inv);
  const bool first = row == (i64)blockIdx.x;
  float* ps = P.partials + (i64)blockIdx.x * P.cols;
  float* pb = P.partials + ((i64)gridDim.x + blockIdx.x) * P.cols;
  float s[2] = {0.0f, 0.0f};
  for (i64 col = (i64)lane * V; col < P.cols; col += (i64)T * V) {
    float x[V], dy[V], ds[V], db[V];
    load_vec<C::kXType, V>(P.x, row * P.x_pitch + col, x);
    load_vec<C::kDyType, V>(P.dy, row * P.dy_pitch + col, dy);
DG_UNROLL
    for (int j = 0; j < V; ++j) ds[j] = db[j] = 0.0f;
    backward_terms<C>(P, col, x, dy, mean, inv, s, ds, db);
    if (C::kPartials)
DG_UNROLL
      for (int j = 0; j < V; ++j) {
        ps[col + j] = first ? ds[j] : ps[col + j] + ds[j];
        pb[col + j] = first ? db[j] : pb[col + j] + db[j];
      }
  }
  group_sum2<T>(s, scratch, parity);
  const float a = C::kLayernorm ? s[0] * P.inv_cols : 0.0f, b = s[1] * P.inv_cols;
  if (!C::kDx) return;
  for (i64 col = (i64)lane * V; col < P.cols; col += (i64)T * V) {
    float x[V], dy[V];
    load_vec<C::kXType, V>(P.x, row * P.x_pitch + col, x);
    load_vec<C::kDyType, V>(P.dy, row * P.dy_pitch + col, dy);
    to_terms<C>(P, col, x, dy, mean, inv);
    store_dx<C>(P, row, col, x, dy, inv, a, b);
  }
}

// The resident form's column sums: the block's groups folded in shared memory (group order), then
// one slice per block. part holds 2 * kRows * kItems * kThreads * kVec floats when kRows > 1.
template <class C>
__device__ __forceinline__ void store_partials(const NormParams& P, int lane, float* part,
                                               const float (&ds)[C::kItems > 0 ? C::kItems : 1][C::kVec],
                                               const float (&db)[C::kItems > 0 ? C::kItems : 1][C::kVec]) {
  constexpr int V = C::kVec, T = C::kThreads, K = C::kItems > 0 ? C::kItems : 1, span = K * T * V;
  float* ps = P.partials + (i64)blockIdx.x * P.cols;
  float* pb = P.partials + ((i64)gridDim.x + blockIdx.x) * P.cols;
  if (C::kRows == 1) {
DG_UNROLL
    for (int k = 0; k < K; ++k) {
      const i64 col = (i64)(k * T + lane) * V;
      if (col >= P.cols) continue;
DG_UNROLL
      for (int j = 0; j < V; ++j) ps[col + j] = ds[k][j], pb[col + j] = db[k][j];
    }
    return;
  }
  const int r = threadIdx.x / T;
DG_UNROLL
  for (int k = 0; k < K; ++k)
DG_UNROLL
    for (int j = 0; j < V; ++j) {
      part[r * span + (k * T + lane) * V + j] = ds[k][j];
      part[(C::kRows + r) * span + (k * T + lane) * V + j] = db[k][j];
    }
  __syncthreads();
  for (int c = threadIdx.x; c < span && c < P.cols; c += blockDim.x) {
    float a = 0.0f, b = 0.0f;
    for (int g = 0; g < C::kRows; ++g) a += part[g * span + c], b += part[(C::kRows + g) * span + c];
    ps[c] = a;
    pb[c] = b;
  }
}

template <class C>
__device__ __forceinline__ void norm_backward(const NormParams& P) {
  constexpr int K = C::kItems > 0 ? C::kItems : 1;
  constexpr int part_floats = C::kPartials && C::kItems > 0 && C::kRows > 1 ? 2 * C::kRows * K * C::kThreads * C::kVec : 1;
  __shared__ Sum2 scratch[2 * (C::kThreads > 32 ? C::kThreads / 32 : 1)];
  __shared__ float part[part_floats];
  norm_pdl_wait();
  const int lane = threadIdx.x % C::kThreads;
  const i64 step = (i64)gridDim.x * C::kRows;
  float ds[K][C::kVec], db[K][C::kVec];
DG_UNROLL
  for (int k = 0; k < K; ++k)
DG_UNROLL
    for (int j = 0; j < C::kVec; ++j) ds[k][j] = db[k][j] = 0.0f;
  const i64 first = (i64)blockIdx.x * C::kRows + threadIdx.x / C::kThreads;
  if (C::kItems > 0) {
    backward_rows_resident<C>(P, first, step, lane, scratch, ds, db);
    norm_pdl_trigger();
    if (C::kPartials) store_partials<C>(P, lane, part, ds, db);
  } else {
    int parity = 0;
    for (i64 row = first; row < P.rows; row += step, parity ^= 1) backward_row_streamed<C>(P, row, lane, scratch, parity);
    norm_pdl_trigger();
  }
}

// ---- the column sums' second pass: blocks of L x 32 threads for 32 columns (a warp reads 128
// consecutive bytes of a slice); slice lane s of column c adds slices s, s + L, ... in order, with
// up to 8 of its loads in flight (the pass is L2 round trips, ceil(slices / L / 8) of them, more
// than bytes), then warp w adds the L lane sums of columns w, w + L, ... by a fixed xor butterfly:
// the same bits on every run.
template <class C, int L>
__device__ __forceinline__ void norm_partials(const NormFinalizeParams& F) {
  __shared__ float sums[2][L][33];
  norm_pdl_wait();
  const int c = threadIdx.x & 31, s = threadIdx.x >> 5;
  const i64 col = (i64)blockIdx.x * 32 + c;
  float a = 0.0f, b = 0.0f;
  if (col < F.cols) {
#if defined(__CUDACC__)
#pragma unroll 8
#endif
    for (i64 i = s; i < F.slices; i += L) {
      a += F.partials[i * F.cols + col];
      b += F.partials[(F.slices + i) * F.cols + col];
    }
  }
  norm_pdl_trigger();
  sums[0][s][c] = a;
  sums[1][s][c] = b;
  __syncthreads();
  for (int cc = s; cc < 32; cc += L) {
    const i64 out = (i64)blockIdx.x * 32 + cc;
    float v[2] = {c < L ? sums[0][c][cc] : 0.0f, c < L ? sums[1][c][cc] : 0.0f};
DG_UNROLL
    for (int o = 16; o > 0; o >>= 1) {
      v[0] += __shfl_xor_sync(0xffffffffu, v[0], o);
      v[1] += __shfl_xor_sync(0xffffffffu, v[1], o);
    }
    if (c != 0 || out >= F.cols) continue;
    if (C::kDscale) store_one<C::kDscaleType>(F.dscale, out, v[0]);
    if (C::kDbias) store_one<C::kDbiasType>(F.dbias, out, v[1]);
  }
}

}  // namespace dg
