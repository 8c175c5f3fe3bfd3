// Row-wise normalizations for cuda_norm_rowwise: layernorm and rmsnorm forward (Y and the
// per-row statistics) and backward (DX, and DSCALE/DBIAS as column sums over the rows).
//
// A row (X's elements at one index of dim 0, packed) is handled by a row group of kThreads
// threads: one warp (kRows rows per block) for short rows, the whole block (kRows 1) for long ones.
// Lane l of a group owns the vectors of kVec elements at columns (k * kThreads + l) * kVec:
//  - kItems > 0: k < kItems, and the row stays in registers between the statistics and the output,
//    so X (and DY) are read from memory once;
//  - kItems 0 (rows too long for registers): the lane walks the row in steps of kThreads * kVec,
//    twice; the second read of a row mostly hits L2.
// Arithmetic is fp32. Layernorm's variance: two passes over the registers, or (streaming) Chan's
// merge of per-vector moments, so a mean far from zero does not cancel the variance away.
// Backward column sums: each lane keeps its columns' partial sums of dy * xhat and dy over the rows
// its group handles, the groups of a block are folded in shared memory, and each block writes one
// slice [2][slices][cols] of the workspace; norm_partials then adds the slices in a fixed order
// (32 slice lanes a column, then a fixed butterfly), launched programmatically on sm_90 so its
// launch hides under the main kernel's tail. No atomics: the same inputs give the same bits on
// every run. A backward block walks its rows one after another, so with kPrefetch the next row's X
// and DY (raw vectors) load during this row's sums and stores: one block per SM (the column-sum
// slices) otherwise waits a row's latency each. A row's xhat and g = dy * scale are formed once
// (the sums, then DX from them) and its two sums take one block barrier (group_sum2).
// The parts: norm_common.cuh (parameters, reductions, element access), norm_forward.cuh and
// norm_backward.cuh; this file is the entry the generated kernels call.
#pragma once
#include "norm_backward.cuh"
#include "norm_forward.cuh"

namespace dg {

template <class C>
__device__ __forceinline__ void norm_rowwise(const NormParams& P) {
  if (C::kBackward) norm_backward<C>(P);
  else norm_forward<C>(P);
}

}  // namespace dg
