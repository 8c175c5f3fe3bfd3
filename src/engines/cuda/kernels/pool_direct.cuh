// cuda_pool_direct's kernels: resample (src/engines/ref/ref_resample.cpp's semantics), one output
// element per thread and step of a grid-stride loop. The loop walks Y in `order` (outermost first,
// Y's smallest stride innermost), so neighbouring threads write neighbouring elements and, in
// NHWC, read neighbouring channels. Pooling folds the window positions inside X (max pads with
// -inf and propagates NaN; average divides by the window's volume or by the positions inside);
// resizing reads the nearest source or the 2^S linear corners (half-pixel centers). Accumulates
// in fp32. Dims and strides are kernel arguments: one module serves every shape. I is the index
// type of the walk: 32-bit division where the output's count fits.
#pragma once
#include "dg_types.cuh"

namespace dg {

constexpr int kPoolMaxRank = 8;  // N, C and up to 6 spatial dims
constexpr int kPoolMaxSpatial = kPoolMaxRank - 2;

enum PoolMode : int { POOL_MAX = 0, POOL_AVG_INCLUDE = 1, POOL_AVG_EXCLUDE = 2, RESIZE_NEAREST = 3, RESIZE_LINEAR = 4 };

struct PoolParams {
  const char* x;
  char* y;
  long long count;  // output elements
  int rank, mode;
  int order[kPoolMaxRank];  // Y's dims, outermost first
  long long x_dims[kPoolMaxRank], x_strides[kPoolMaxRank];
  long long y_dims[kPoolMaxRank], y_strides[kPoolMaxRank];
  long long window[kPoolMaxSpatial], stride[kPoolMaxSpatial], pre[kPoolMaxSpatial];
  float inv_volume;  // 1 / the window's volume (average including the padding)
};

template <int DX>
__device__ __forceinline__ float pool_load(const PoolParams& P, long long off) {
  typedef typename Storage<DX>::type T;
  return to_float<DX>(reinterpret_cast<const T*>(P.x)[off]);
}

// One window position's value folded into a pooling sum: max keeps a NaN (nothing compares above
// it), averages add.
__device__ __forceinline__ void pool_fold(float& acc, float v, bool is_max) {
  if (!is_max) acc += v;
  else if (is_nan(v) || v > acc) acc = v;
}

// The average's division: by the window's volume, or by the `inside` positions (none: 0 / 0, as ref).
__device__ __forceinline__ float pool_finish(const PoolParams& P, float acc, long long inside) {
  if (P.mode == POOL_AVG_INCLUDE) return acc * P.inv_volume;
  if (P.mode == POOL_AVG_EXCLUDE) return acc / (float)inside;
  return acc;
}

// Pooling over the window positions inside X: per spatial dim the valid offsets [lo, hi), walked
// as an odometer (no division per position).
template <int DX>
__device__ __forceinline__ float pool_window(const PoolParams& P, long long base, const long long* o) {
  const int S = P.rank - 2;
  long long start[kPoolMaxSpatial], lo[kPoolMaxSpatial], hi[kPoolMaxSpatial], k[kPoolMaxSpatial];
  long long inside = 1;
  for (int i = 0; i < S; ++i) {
    start[i] = o[i + 2] * P.stride[i] - P.pre[i];
    lo[i] = start[i] < 0 ? -start[i] : 0;
    const long long room = P.x_dims[i + 2] - start[i];
    hi[i] = P.window[i] < room ? P.window[i] : room;
    if (hi[i] <= lo[i]) inside = 0;
    else inside *= hi[i] - lo[i];
    k[i] = lo[i];
  }
  const bool is_max = P.mode == POOL_MAX;
  float acc = is_max ? u2f(0xff800000u) : 0.0f;  // -inf
  if (inside > 0) {
    for (;;) {
      long long off = base;
      for (int i = 0; i < S; ++i) off += (start[i] + k[i]) * P.x_strides[i + 2];
      pool_fold(acc, pool_load<DX>(P, off), is_max);
      int i = S - 1;
      for (; i >= 0; --i) {
        if (++k[i] < hi[i]) break;
        k[i] = lo[i];
      }
      if (i < 0) break;
    }
  }
  return pool_finish(P, acc, inside);
}

// One spatial dim of a resize at output position o (in source positions `in`, output `out`): the
// nearest source (floor(o * in / out) in integers), or the lower and upper linear rows and the
// upper one's weight (half-pixel centers in double, as ref: the weights of the fp32 sum are its,
// rounded once).
__device__ __forceinline__ long long nearest_src(long long o, long long in, long long out) {
  const long long src = o * in / out;
  return src < in - 1 ? src : in - 1;
}
__device__ __forceinline__ void linear_taps(long long o, long long in, long long out, long long& lo, long long& hi,
                                            float& frac) {
  double src = ((double)o + 0.5) * (double)in / (double)out - 0.5;
  if (src < 0.0) src = 0.0;
  lo = (long long)src;
  if (lo > in - 1) lo = in - 1;
  hi = lo + 1 < in ? lo + 1 : in - 1;
  frac = (float)(src - (double)lo);
}

// Resizing: the nearest source (floor(o * in / out) in integers), or the 2^S linear corners.
template <int DX>
__device__ __forceinline__ float resize_point(const PoolParams& P, long long base, const long long* o) {
  const int S = P.rank - 2;
  if (P.mode == RESIZE_NEAREST) {
    long long off = base;
    for (int i = 0; i < S; ++i) off += nearest_src(o[i + 2], P.x_dims[i + 2], P.y_dims[i + 2]) * P.x_strides[i + 2];
    return pool_load<DX>(P, off);
  }
  long long lo_off[kPoolMaxSpatial], hi_off[kPoolMaxSpatial];
  float frac[kPoolMaxSpatial];
  for (int i = 0; i < S; ++i) {
    long long l, h;
    linear_taps(o[i + 2], P.x_dims[i + 2], P.y_dims[i + 2], l, h, frac[i]);
    lo_off[i] = l * P.x_strides[i + 2];
    hi_off[i] = h * P.x_strides[i + 2];
  }
  float acc = 0.0f;
  for (int c = 0; c < (1 << S); ++c) {
    long long off = base;
    float w = 1.0f;
    for (int i = 0; i < S; ++i) {
      const bool up = (c >> (S - 1 - i)) & 1;
      off += up ? hi_off[i] : lo_off[i];
      w *= up ? frac[i] : 1.0f - frac[i];
    }
    acc += w * pool_load<DX>(P, off);
  }
  return acc;
}

template <int DX, int DY, class I>
__device__ __forceinline__ void pool_direct(const PoolParams& P) {
  typedef typename Storage<DY>::type TY;
  const I count = (I)P.count, step = (I)gridDim.x * (I)blockDim.x;
  for (I l = (I)blockIdx.x * (I)blockDim.x + (I)threadIdx.x; l < count; l += step) {
    long long o[kPoolMaxRank];
    I rest = l;
    for (int j = P.rank - 1; j > 0; --j) {
      const int d = P.order[j];
      const I n = (I)P.y_dims[d];
      o[d] = (long long)(rest % n);
      rest /= n;
    }
    o[P.order[0]] = (long long)rest;
    long long y_off = 0;
    for (int d = 0; d < P.rank; ++d) y_off += o[d] * P.y_strides[d];
    const long long base = o[0] * P.x_strides[0] + o[1] * P.x_strides[1];
    const float v = P.mode <= POOL_AVG_EXCLUDE ? pool_window<DX>(P, base, o) : resize_point<DX>(P, base, o);
    reinterpret_cast<TY*>(P.y)[y_off] = from_float<DY>(v);
  }
}

// 2-D resizing of a vector of VEC channels at (n, oh, ow): the nearest source, or the four linear
// corners summed in resize_point's order and weights.
template <int DX, int VEC>
__device__ __forceinline__ void resize2d_vector(const PoolParams& P, long long base, unsigned oh, unsigned ow,
                                                float (&acc)[VEC]) {
  if (P.mode == RESIZE_NEAREST) {
    const long long h = nearest_src(oh, P.x_dims[2], P.y_dims[2]), w = nearest_src(ow, P.x_dims[3], P.y_dims[3]);
    load_vec<DX, VEC>(P.x, base + h * P.x_strides[2] + w * P.x_strides[3], acc);
    return;
  }
  long long h[2], w[2];
  float fh, fw;
  linear_taps(oh, P.x_dims[2], P.y_dims[2], h[0], h[1], fh);
  linear_taps(ow, P.x_dims[3], P.y_dims[3], w[0], w[1], fw);
DG_UNROLL
  for (int j = 0; j < VEC; ++j) acc[j] = 0.0f;
DG_UNROLL
  for (int c = 0; c < 4; ++c) {
    const int up_h = c >> 1, up_w = c & 1;
    const float wt = (up_h ? fh : 1.0f - fh) * (up_w ? fw : 1.0f - fw);
    float v[VEC];
    load_vec<DX, VEC>(P.x, base + h[up_h] * P.x_strides[2] + w[up_w] * P.x_strides[3], v);
DG_UNROLL
    for (int j = 0; j < VEC; ++j) acc[j] += wt * v[j];
  }
}

// 2-D pooling and resizing over channels-last X and Y, a vector of VEC channels per thread (one
// 16-byte load of X per window position or corner): the walk is (n, oh, ow, channel group), groups
// innermost, so a warp reads 512 contiguous bytes per position, and the window's bounds are scalars
// in registers (the generic walk above keeps per-dim arrays that live in local memory). The plan
// takes it where X and Y have unit channel strides, C and their other strides are multiples of VEC,
// the groups count fits 32 bits, and (checked per call) both pointers are 16-byte aligned. Same
// sums in the same order as pool_window (rows, then columns) and resize_point.
template <int DX, int DY>
__device__ __forceinline__ void pool2d_channels(const PoolParams& P) {
  constexpr int VEC = 16 / (int)sizeof(typename Storage<DX>::type);
  const unsigned groups = (unsigned)(P.y_dims[1] / VEC), ow_n = (unsigned)P.y_dims[3], oh_n = (unsigned)P.y_dims[2];
  const unsigned count = (unsigned)(P.count / VEC), step = gridDim.x * blockDim.x;
  const bool is_max = P.mode == POOL_MAX;
  for (unsigned l = blockIdx.x * blockDim.x + threadIdx.x; l < count; l += step) {
    unsigned rest = l;
    const unsigned g = rest % groups;
    rest /= groups;
    const unsigned ow = rest % ow_n;
    rest /= ow_n;
    const unsigned oh = rest % oh_n, n = rest / oh_n;
    const long long base = (long long)n * P.x_strides[0] + (long long)g * VEC;
    const long long y_off = (long long)n * P.y_strides[0] + (long long)oh * P.y_strides[2] +
                            (long long)ow * P.y_strides[3] + (long long)g * VEC;
    float acc[VEC];
    if (P.mode > POOL_AVG_EXCLUDE) {
      resize2d_vector<DX, VEC>(P, base, oh, ow, acc);
      store_vec<DY, VEC>(P.y, y_off, acc);
      continue;
    }
    const long long h0 = (long long)oh * P.stride[0] - P.pre[0], w0 = (long long)ow * P.stride[1] - P.pre[1];
    const long long hlo = h0 < 0 ? 0 : h0, wlo = w0 < 0 ? 0 : w0;
    const long long hhi = h0 + P.window[0] < P.x_dims[2] ? h0 + P.window[0] : P.x_dims[2];
    const long long whi = w0 + P.window[1] < P.x_dims[3] ? w0 + P.window[1] : P.x_dims[3];
DG_UNROLL
    for (int j = 0; j < VEC; ++j) acc[j] = is_max ? u2f(0xff800000u) : 0.0f;  // -inf
    for (long long h = hlo; h < hhi; ++h)
      for (long long w = wlo; w < whi; ++w) {
        float v[VEC];
        load_vec<DX, VEC>(P.x, base + h * P.x_strides[2] + w * P.x_strides[3], v);
DG_UNROLL
        for (int j = 0; j < VEC; ++j) pool_fold(acc[j], v[j], is_max);
      }
    const long long inside = hhi > hlo && whi > wlo ? (hhi - hlo) * (whi - wlo) : 0;
DG_UNROLL
    for (int j = 0; j < VEC; ++j) acc[j] = pool_finish(P, acc[j], inside);
    store_vec<DY, VEC>(P.y, y_off, acc);
  }
}

}  // namespace dg

#define DG_POOL_CHANNELS_KERNEL(DX, DY, NAME) \
  extern "C" __global__ void __launch_bounds__(256) NAME(const dg::PoolParams P) { dg::pool2d_channels<DX, DY>(P); }
#define DG_POOL_DIRECT_KERNEL(DX, DY, I, NAME) \
  extern "C" __global__ void __launch_bounds__(256) NAME(const dg::PoolParams P) { dg::pool_direct<DX, DY, I>(P); }
