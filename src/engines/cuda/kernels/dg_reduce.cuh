// Reductions for generated kernels: per-element folding, warp shuffle and block trees, and the
// atomics that combine blocks. MIN/MAX/AMAX propagate NaN (as the reference engine and PyTorch do).
#pragma once
#include "dg_types.cuh"

namespace dg {

// dnngraph::ReductionMode values.
enum RMode : int { RM_ADD = 1, RM_MUL = 2, RM_MIN = 3, RM_MAX = 4, RM_AMAX = 5, RM_AVG = 6, RM_NORM1 = 7, RM_NORM2 = 8 };

template <int M> __device__ __forceinline__ float reduce_identity() {
  if (M == RM_MUL) return 1.0f;
  if (M == RM_MIN) return u2f(0x7f800000u);
  if (M == RM_MAX) return u2f(0xff800000u);
  return 0.0f;
}

// What one element contributes: |x| for AMAX and NORM1, x*x for NORM2, x otherwise.
template <int M> __device__ __forceinline__ float reduce_input(float x) {
  if (M == RM_AMAX || M == RM_NORM1) return fabsf(x);
  if (M == RM_NORM2) return x * x;
  return x;
}

// Combines two partial results.
template <int M> __device__ __forceinline__ float reduce_combine(float a, float b) {
  if (M == RM_MUL) return a * b;
  if (M == RM_MIN) return (is_nan(b) || b < a) ? b : a;
  if (M == RM_MAX || M == RM_AMAX) return (is_nan(b) || b > a) ? b : a;
  return a + b;
}

// The final value from the accumulated one: AVG divides by the count, NORM2 takes the root.
template <int M> __device__ __forceinline__ float reduce_finish(float acc, float inv_count) {
  if (M == RM_AVG) return acc * inv_count;
  if (M == RM_NORM2) return sqrtf(acc);
  return acc;
}

template <int M> __device__ __forceinline__ float warp_reduce(float v) {
DG_UNROLL
  for (int o = 16; o > 0; o >>= 1) v = reduce_combine<M>(v, __shfl_xor_sync(0xffffffffu, v, o));
  return v;
}

// Every thread of the block must call it; the result is valid in thread 0. `scratch` holds 32 floats.
// The tree is fixed by thread indices, so the result does not depend on timing.
template <int M> __device__ __forceinline__ float block_reduce(float v, float* scratch) {
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
  v = warp_reduce<M>(v);
  __syncthreads();  // scratch may still be read by a previous call
  if (lane == 0) scratch[warp] = v;
  __syncthreads();
  const int warps = (blockDim.x + 31) >> 5;
  v = (threadIdx.x < warps) ? scratch[threadIdx.x] : reduce_identity<M>();
  if (warp == 0) v = warp_reduce<M>(v);
  return v;
}

// Folds v into *addr atomically. The float order trick for MIN/MAX: for non-negative floats the
// int order is the float order, for negative ones the reversed unsigned order is.
template <int M> __device__ __forceinline__ void atomic_combine(float* addr, float v) {
  if (M == RM_ADD || M == RM_AVG || M == RM_NORM1 || M == RM_NORM2) {
    atomicAdd(addr, v);
  } else if (M == RM_MAX || M == RM_AMAX) {
    if (is_nan(v)) atomicMax(reinterpret_cast<int*>(addr), 0x7fffffff);  // the largest int: NaN wins
    else if (!(f2u(v) >> 31)) atomicMax(reinterpret_cast<int*>(addr), __float_as_int(v));
    else atomicMin(reinterpret_cast<u32*>(addr), f2u(v));
  } else if (M == RM_MIN) {
    if (is_nan(v)) atomicMax(reinterpret_cast<u32*>(addr), 0xffffffffu);  // a negative NaN wins
    else if (!(f2u(v) >> 31)) atomicMin(reinterpret_cast<int*>(addr), __float_as_int(v));
    else atomicMax(reinterpret_cast<u32*>(addr), f2u(v));
  } else {  // MUL: compare-and-swap loop
    u32* a = reinterpret_cast<u32*>(addr);
    u32 old = *a, assumed;
    do {
      assumed = old;
      old = atomicCAS(a, assumed, f2u(u2f(assumed) * v));
    } while (old != assumed);
  }
}

// A partial reduction from inside a grid-stride loop: lanes of a warp that target the same
// element combine first, so a reduction over the innermost dim costs one atomic per warp.
template <int M> __device__ __forceinline__ void reduce_partial(float* acc, i64 off, float v) {
  const u32 active = __activemask();
  const int lane = threadIdx.x & 31;
  const int leader = __ffs(active) - 1;
  const i64 leader_off = __shfl_sync(active, off, leader);
  if (active == 0xffffffffu && __all_sync(active, off == leader_off)) {
    v = warp_reduce<M>(v);
    if (lane == 0) atomic_combine<M>(acc + off, v);
  } else {
    atomic_combine<M>(acc + off, v);
  }
}

}  // namespace dg
