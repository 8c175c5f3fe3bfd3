// cuda_norm_rowwise's kernel parameters, row-group reductions and element access, shared by the
// forward (norm_forward.cuh) and the backward (norm_backward.cuh); see norm_rowwise.cuh.
#pragma once
#include "dg_types.cuh"

namespace dg {

// Mirrored by cuda/norm/norm_params.hpp.
struct NormParams {
  const void* x;
  const void* dy;       // backward
  const void* scale;
  const void* bias;     // forward; null without bias
  const float* mean;    // backward input (layernorm)
  const float* inv;     // backward input: INV_VARIANCE or INV_RMS
  void* out;            // Y or DX
  float* mean_out;      // forward statistics, when produced
  float* inv_out;
  float* partials;      // backward: [2][gridDim.x][cols] (dscale sums, then dbias sums)
  i64 rows, cols;
  i64 x_pitch, dy_pitch, out_pitch, mean_pitch, inv_pitch;  // dim-0 strides, in elements
  float eps, inv_cols;
};

struct NormFinalizeParams {
  const float* partials;
  void* dscale;  // null when not produced
  void* dbias;
  i64 cols;
  i64 slices;
};

// ---- reductions over a row group

// Sums each v[i] over the group; every thread gets the sums (adds are commutative, so the xor
// butterfly leaves the same bits in every lane; the warps' sums are added in warp order).
template <int T, int N>
__device__ __forceinline__ void group_sum(float (&v)[N], float* scratch) {
DG_UNROLL
  for (int i = 0; i < N; ++i)
DG_UNROLL
    for (int o = 16; o > 0; o >>= 1) v[i] += __shfl_xor_sync(0xffffffffu, v[i], o);
  if (T > 32) {
    constexpr int W = T > 32 ? T / 32 : 1;
    const int warp = threadIdx.x >> 5;
    __syncthreads();  // the previous call's reads of scratch are done
    if ((threadIdx.x & 31) == 0)
DG_UNROLL
      for (int i = 0; i < N; ++i) scratch[i * W + warp] = v[i];
    __syncthreads();
DG_UNROLL
    for (int i = 0; i < N; ++i) {
      float s = 0.0f;
      for (int w = 0; w < W; ++w) s += scratch[i * W + w];
      v[i] = s;
    }
  }
}

// The backward's two row sums over the group with one block barrier a row: the warps' pairs go to
// scratch half `parity` (a Sum2 per warp, W of them), and the next row writes the other half, so
// no barrier is needed before the writes (a thread writing half p again has passed the barrier of
// the row between, which every thread reaches only after reading half p). The row loop must give
// parity 0, 1, 0, ... on every thread of the block alike. Every thread gets the sums, added in
// warp order (the same bits in every lane).
struct Sum2 {
  float a, b;
};

template <int T>
__device__ __forceinline__ void group_sum2(float (&v)[2], Sum2* scratch, int parity) {
DG_UNROLL
  for (int o = 16; o > 0; o >>= 1) {
    v[0] += __shfl_xor_sync(0xffffffffu, v[0], o);
    v[1] += __shfl_xor_sync(0xffffffffu, v[1], o);
  }
  if (T > 32) {
    constexpr int W = T > 32 ? T / 32 : 1;
    Sum2* half = scratch + parity * W;
    if ((threadIdx.x & 31) == 0) half[threadIdx.x >> 5] = Sum2{v[0], v[1]};
    __syncthreads();
    v[0] = v[1] = 0.0f;
DG_UNROLL
    for (int w = 0; w < W; ++w) {
      const Sum2 p = half[w];
      v[0] += p.a;
      v[1] += p.b;
    }
  }
}

// Count, mean and sum of squared deviations of some elements (Chan et al.'s parallel form).
struct Moments {
  float n, mean, m2;
};

__device__ __forceinline__ void merge(Moments& a, const Moments& b) {
  if (b.n == 0.0f) return;
  const float n = a.n + b.n, d = b.mean - a.mean, w = b.n / n;
  a.mean += d * w;
  a.m2 += b.m2 + d * d * a.n * w;
  a.n = n;
}

// Merges the group's moments; every thread gets the result of the same merge order (lane 0's
// tree, then the warps in order).
template <int T>
__device__ __forceinline__ void group_moments(Moments& m, float* scratch) {
DG_UNROLL
  for (int o = 16; o > 0; o >>= 1) {
    Moments b;
    b.n = __shfl_down_sync(0xffffffffu, m.n, o);
    b.mean = __shfl_down_sync(0xffffffffu, m.mean, o);
    b.m2 = __shfl_down_sync(0xffffffffu, m.m2, o);
    if ((threadIdx.x & 31) + o < 32) merge(m, b);
  }
  m.n = __shfl_sync(0xffffffffu, m.n, 0);
  m.mean = __shfl_sync(0xffffffffu, m.mean, 0);
  m.m2 = __shfl_sync(0xffffffffu, m.m2, 0);
  if (T > 32) {
    constexpr int W = T > 32 ? T / 32 : 1;
    const int warp = threadIdx.x >> 5;
    __syncthreads();
    if ((threadIdx.x & 31) == 0) {
      scratch[warp] = m.n;
      scratch[W + warp] = m.mean;
      scratch[2 * W + warp] = m.m2;
    }
    __syncthreads();
    m = Moments{0.0f, 0.0f, 0.0f};
    for (int w = 0; w < W; ++w) merge(m, Moments{scratch[w], scratch[W + w], scratch[2 * W + w]});
  }
}

// ---- launch order (sm_90; nothing on the host emulation and older GPUs)

// Programmatic dependent launch. pdl_wait: this grid waits for the one before it to finish and its
// writes to be visible (before any global memory access; a no-op after a launch in stream order).
// pdl_trigger: the grid after this one may be scheduled once every block of this one has called it
// (it waits for this one's end itself). Called near a block's end, not at its start, so that a
// dependent's blocks do not wait on this grid's SMs early. The streamed backward (256-thread blocks
// of 47 registers, room for the finalize's blocks beside them) ran 2.5x slower launched this way
// with the trigger at either place (H100), so the engine launches streamed plans in stream order.
__device__ __forceinline__ void norm_pdl_wait() {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  asm volatile("griddepcontrol.wait;\n" ::: "memory");
#endif
}
__device__ __forceinline__ void norm_pdl_trigger() {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  asm volatile("griddepcontrol.launch_dependents;\n" ::: "memory");
#endif
}

// ---- element access

template <int DT, int V>
__device__ __forceinline__ void load_or_zero(const void* base, i64 off, bool ok, float (&v)[V]) {
  if (ok) {
    load_vec<DT, V>(base, off, v);
  } else {
DG_UNROLL
    for (int j = 0; j < V; ++j) v[j] = 0.0f;
  }
}

}  // namespace dg
