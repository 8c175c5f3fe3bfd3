// The pointwise kernel: a grid-stride loop over the (collapsed) domain in vectors of V elements
// along the innermost dim, running a generated epilogue functor on each vector.
//
// The generated source (src/engines/cuda/codegen/) defines `struct Epilogue` with:
//   kRank, kFull, Index               the collapsed rank, full reductions, index type
//   template <int V> struct Loaded    registers holding the loaded operands of one vector
//   coords<V>(p, v, c)                vector position -> coordinates (innermost in elements)
//   load<V>(p, c, l)                  every operand load of the vector
//   apply<V>(p, c, l, anchor, red)    the expression list: stores, reductions
//   init_full(red), finish_full(p, red)   per-thread accumulators of full reductions
// A GEMM or convolution kernel calls coords-free load/apply per output element with its
// accumulator as `anchor`; this kernel passes none.
#pragma once
#include "dg_reduce.cuh"

namespace dg {

#define DG_MAX_RANK 8
#define DG_MAX_OPERANDS 12
#define DG_MAX_SCALARS 8
#define DG_MAX_REDUCTIONS 4

// Kernel arguments. Mirrored field for field by the host (src/engines/cuda/codegen/params.hpp);
// every field is 8 bytes wide or an array of an even number of 4-byte ones, so the layouts agree.
struct PointwiseParams {
  i64 vectors;                                 // vector positions in the domain
  i64 size[DG_MAX_RANK];                       // collapsed domain sizes, innermost in elements
  i64 stride[DG_MAX_OPERANDS][DG_MAX_RANK];    // element strides per memory operand (0: broadcast)
  i64 div_by[DG_MAX_RANK];                     // divisors for coords (innermost: in vectors)
  u64 div_magic[DG_MAX_RANK];                  // their magic numbers: magic | shift << 32
  void* ptr[DG_MAX_OPERANDS];
  float* acc[DG_MAX_REDUCTIONS];               // fp32 accumulators of reductions
  void* out[DG_MAX_REDUCTIONS];                // reduction outputs (== acc when accumulated in place)
  float* partials;                             // deterministic full reductions: [reduction][block]
  i64 acc_volume[DG_MAX_REDUCTIONS];           // elements of each reduction's output
  float scalar[DG_MAX_SCALARS];                // pass-by-value operands
  float inv_count[DG_MAX_REDUCTIONS];          // 1 / elements folded into each output (AVG)
};

// Division by a run-time constant through a multiply (valid for dividends below 2^31).
__device__ __forceinline__ u32 fast_div(u32 n, u64 magic) {
  const u32 t = __umulhi(n, (u32)magic);
  return (t + n) >> (u32)(magic >> 32);
}

template <class Ep, int V, int U>
__device__ __forceinline__ void pointwise_main(const PointwiseParams& p) {
  typedef typename Ep::Index Index;
  float red[Ep::kFull > 0 ? Ep::kFull : 1];
  Ep::init_full(red);
  const i64 step = (i64)gridDim.x * blockDim.x;
  i64 v = (i64)blockIdx.x * blockDim.x + threadIdx.x;
  // U vectors per trip, all loads issued before the first use: more bytes in flight per thread.
  for (; v + (U - 1) * step < p.vectors; v += U * step) {
    Index c[U][Ep::kRank];
    typename Ep::template Loaded<V> l[U];
DG_UNROLL
    for (int u = 0; u < U; ++u) {
      Ep::template coords<V>(p, v + u * step, c[u]);
      Ep::template load<V>(p, c[u], l[u]);
    }
DG_UNROLL
    for (int u = 0; u < U; ++u) Ep::template apply<V>(p, c[u], l[u], (const float*)0, red);
  }
  for (; v < p.vectors; v += step) {
    Index c[Ep::kRank];
    typename Ep::template Loaded<V> l;
    Ep::template coords<V>(p, v, c);
    Ep::template load<V>(p, c, l);
    Ep::template apply<V>(p, c, l, (const float*)0, red);
  }
  Ep::finish_full(p, red);
}

// One full reduction's block result: an atomic into its accumulator, or (deterministic) a partial
// per block that the finalize kernel folds in a fixed order. Every thread of the block calls it.
template <int M, bool DETERMINISTIC>
__device__ __forceinline__ void commit_full(const PointwiseParams& p, float* acc, int f, float v, float* scratch) {
  v = block_reduce<M>(v, scratch);
  if (threadIdx.x != 0) return;
  if (DETERMINISTIC) p.partials[(i64)f * gridDim.x + blockIdx.x] = v;
  else atomic_combine<M>(acc, v);
}

// Finalize, full reduction: fold the per-block partials (deterministic) or read the accumulator,
// finish (AVG, NORM2) and store in the output's type. Every thread of one block calls it.
template <int M, int DT, bool DETERMINISTIC>
__device__ __forceinline__ void finalize_full(const PointwiseParams& p, const float* acc, int f, void* out, int blocks,
                                              float inv_count, float* scratch) {
  float v = reduce_identity<M>();
  if (DETERMINISTIC) {
    for (int b = threadIdx.x; b < blocks; b += blockDim.x) v = reduce_combine<M>(v, p.partials[(i64)f * blocks + b]);
    v = block_reduce<M>(v, scratch);
  } else {
    v = acc[0];
  }
  if (threadIdx.x == 0) store_one<DT>(out, 0, reduce_finish<M>(v, inv_count));
}

// Finalize, partial reduction: every output element from its accumulator (outputs are dense, and
// the accumulator has the output's layout).
template <int M, int DT>
__device__ __forceinline__ void finalize_partial(const PointwiseParams& p, int r, void* out) {
  for (i64 i = (i64)blockIdx.x * blockDim.x + threadIdx.x; i < p.acc_volume[r]; i += (i64)gridDim.x * blockDim.x)
    store_one<DT>(out, i, reduce_finish<M>(p.acc[r][i], p.inv_count[r]));
}

}  // namespace dg
