// cuda_norm_rowwise's forward: Y and the per-row statistics of each row (see norm_rowwise.cuh).
#pragma once
#include "norm_common.cuh"

namespace dg {

template <class C>
__device__ __forceinline__ void load_affine(const NormParams& P, i64 col, float (&sc)[C::kVec], float (&b)[C::kVec]) {
  load_vec<C::kScaleType, C::kVec>(P.scale, col, sc);
  if (C::kHasBias) {
    load_vec<C::kBiasType, C::kVec>(P.bias, col, b);
  } else {
DG_UNROLL
    for (int j = 0; j < C::kVec; ++j) b[j] = 0.0f;
  }
}

// Y for one vector of X, given the row's mean (0 for rmsnorm) and inverse deviation.
template <class C>
__device__ __forceinline__ void store_normalized(const NormParams& P, i64 row, i64 col, const float (&x)[C::kVec],
                                                 float mean, float inv) {
  float sc[C::kVec], b[C::kVec], y[C::kVec];
  load_affine<C>(P, col, sc, b);
DG_UNROLL
  for (int j = 0; j < C::kVec; ++j) y[j] = (x[j] - mean) * inv * sc[j] + b[j];
  store_vec<C::kOutType, C::kVec>(P.out, row * P.out_pitch + col, y);
}

template <class C>
__device__ __forceinline__ void store_stats(const NormParams& P, i64 row, float mean, float inv) {
  if (C::kMeanOut) P.mean_out[row * P.mean_pitch] = mean;
  if (C::kInvOut) P.inv_out[row * P.inv_pitch] = inv;
}

// ---- forward

template <class C>
__device__ __forceinline__ void forward_row_resident(const NormParams& P, i64 row, int lane, float* scratch) {
  constexpr int V = C::kVec, T = C::kThreads, K = C::kItems > 0 ? C::kItems : 1;
  float x[K][V];
DG_UNROLL
  for (int k = 0; k < K; ++k) {
    const i64 col = (i64)(k * T + lane) * V;
    load_or_zero<C::kXType, V>(P.x, row * P.x_pitch + col, col < P.cols, x[k]);
  }
  float mean = 0.0f;
  if (C::kLayernorm) {
    float s[1] = {0.0f};
DG_UNROLL
    for (int k = 0; k < K; ++k)
DG_UNROLL
      for (int j = 0; j < V; ++j) s[0] += x[k][j];
    group_sum<T>(s, scratch);
    mean = s[0] * P.inv_cols;
  }
  float q[1] = {0.0f};
DG_UNROLL
  for (int k = 0; k < K; ++k) {
    if ((i64)(k * T + lane) * V >= P.cols) continue;  // padding lanes hold zeros, not x - mean
DG_UNROLL
    for (int j = 0; j < V; ++j) q[0] += (x[k][j] - mean) * (x[k][j] - mean);
  }
  group_sum<T>(q, scratch);
  const float inv = 1.0f / sqrtf(q[0] * P.inv_cols + P.eps);
DG_UNROLL
  for (int k = 0; k < K; ++k) {
    const i64 col = (i64)(k * T + lane) * V;
    if (col < P.cols) store_normalized<C>(P, row, col, x[k], mean, inv);
  }
  if (lane == 0) store_stats<C>(P, row, mean, inv);
}

template <class C>
__device__ __forceinline__ void forward_row_streamed(const NormParams& P, i64 row, int lane, float* scratch) {
  constexpr int V = C::kVec, T = C::kThreads;
  Moments m{0.0f, 0.0f, 0.0f};
  for (i64 col = (i64)lane * V; col < P.cols; col += (i64)T * V) {
    float x[V];
    load_vec<C::kXType, V>(P.x, row * P.x_pitch + col, x);
    Moments c{(float)V, 0.0f, 0.0f};
    if (C::kLayernorm) {
DG_UNROLL
      for (int j = 0; j < V; ++j) c.mean += x[j];
      c.mean *= 1.0f / V;
    }
DG_UNROLL
    for (int j = 0; j < V; ++j) c.m2 += (x[j] - c.mean) * (x[j] - c.mean);
    if (C::kLayernorm) merge(m, c);
    else m.m2 += c.m2;
  }
  if (C::kLayernorm) {
    group_moments<T>(m, scratch);
  } else {
    float q[1] = {m.m2};
    group_sum<T>(q, scratch);
    m.m2 = q[0];
  }
  const float inv = 1.0f / sqrtf(m.m2 * P.inv_cols + P.eps);
  for (i64 col = (i64)lane * V; col < P.cols; col += (i64)T * V) {
    float x[V];
    load_vec<C::kXType, V>(P.x, row * P.x_pitch + col, x);
    store_normalized<C>(P, row, col, x, m.mean, inv);
  }
  if (lane == 0) store_stats<C>(P, row, m.mean, inv);
}

// Rows by groups: group r of block b takes rows b * kRows + r, then a grid's worth further on.
// With kRows > 1 (warp groups) the groups run apart; with one group the loop is the block's.
template <class C>
__device__ __forceinline__ void norm_forward(const NormParams& P) {
  __shared__ float scratch[3 * (C::kThreads > 32 ? C::kThreads / 32 : 1)];
  const int lane = threadIdx.x % C::kThreads;
  const i64 step = (i64)gridDim.x * C::kRows;
  for (i64 row = (i64)blockIdx.x * C::kRows + threadIdx.x / C::kThreads; row < P.rows; row += step) {
    if (C::kItems > 0) forward_row_resident<C>(P, row, lane, scratch);
    else forward_row_streamed<C>(P, row, lane, scratch);
  }
}

}  // namespace dg
