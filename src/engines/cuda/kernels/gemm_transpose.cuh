// The copy that lets MN-major FLOAT operands run on the tf32 wgmma core (which reads K-major shared
// memory only): dst[bb][mn][k] (rows of ldk floats) = src[bb * unit + k * s_k + mn * s_mn], one
// 32 x 32 block per CTA (256 threads) through shared memory, so that both the reads (along mn,
// the source's contiguous dim) and the writes (along k) are coalesced. Grid: (mn / 32, k / 32,
// batch slots).
#pragma once
#include "dg_types.cuh"

namespace dg {

__device__ __forceinline__ void transpose_to_k_major(const float* src, float* dst, i64 K, i64 MN, i64 s_k, i64 s_mn,
                                                     i64 unit, i64 ldk) {
  __shared__ float tile[32][33];  // +1: the column reads hit 32 banks
  const int tx = (int)threadIdx.x % 32, ty = (int)threadIdx.x / 32;
  const i64 mn0 = (i64)blockIdx.x * 32, k0 = (i64)blockIdx.y * 32, bb = blockIdx.z;
  const float* s = src + bb * unit;
#pragma unroll
  for (int j = ty; j < 32; j += 8) {
    const i64 k = k0 + j, mn = mn0 + tx;
    if (k < K && mn < MN) tile[j][tx] = s[k * s_k + mn * s_mn];
  }
  __syncthreads();
  float* d = dst + bb * MN * ldk;
#pragma unroll
  for (int j = ty; j < 32; j += 8) {
    const i64 mn = mn0 + j, k = k0 + tx;
    if (mn < MN && k < K) d[mn * ldk + k] = tile[tx][j];
  }
}

}  // namespace dg
