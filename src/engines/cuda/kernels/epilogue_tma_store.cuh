// The register epilogue of the wgmma cores (sm_90a): the generated pointwise chain is applied to a
// consumer warpgroup's accumulators where they are (the wgmma fragment layout), the results are
// converted to the output type and written to shared memory in the layout of a 128-byte-swizzled
// TMA box, and one thread stores the warpgroup's 64 x BN tile with cp.async.bulk.tensor. The
// accumulators are free once the tile is in shared memory (epilogue_tma_write), so the consumers
// issue the next tile's first k step before the barrier and the store (epilogue_tma_issue); the
// copy engine drains the store during the next main loop, and the buffer is reused only after
// cp.async.bulk.wait_group.read.
//
// Against the staged epilogue (gemm_common.cuh's epilogue_staged: fp32 through shared memory in
// 64 x 32 chunks, two named barriers each, then per-thread global stores) this needs two barriers
// per tile and no global stores by the consumers. It serves epilogues with one stored output of 16
// bits, row-contiguous, and loads that do not vary along the GEMM rows (per-channel vectors such as
// bias and scale, scalars): the host checks that (conv_implicit_gemm.cpp's register_epilogue).
#pragma once
#include "gemm_common.cuh"

namespace dg {

// The consumers' epilogue, chosen by the kernel's configuration (Config::kEpilogue): the staged
// one, the register one with TMA stores, or (diagnostics, timing only: outputs are not written)
// the staged one without its reads and global stores, or no epilogue at all.
enum : int { EPI_STAGED = 0, EPI_TMA_STORE = 1, EPI_PROBE_STAGE_ONLY = 2, EPI_PROBE_NONE = 3 };

// Config::kEpilogue where the configuration names it (the convolution engine), else EPI_STAGED.
template <class C, class = int>
struct EpilogueModeOf {
  enum : int { value = EPI_STAGED };
};
template <class C>
struct EpilogueModeOf<C, decltype((int)C::kEpilogue)> {
  enum : int { value = C::kEpilogue };
};

__device__ __forceinline__ void tma_store_2d(const void* map, u32 src, int c0, int c1) {
  asm volatile("cp.async.bulk.tensor.2d.global.shared::cta.bulk_group [%0, {%2, %3}], [%1];\n" ::"l"(map), "r"(src),
               "r"(c0), "r"(c1)
               : "memory");
}
__device__ __forceinline__ void bulk_commit() { asm volatile("cp.async.bulk.commit_group;\n" ::: "memory"); }
// The committed stores have read their shared memory (the buffer may be rewritten).
__device__ __forceinline__ void bulk_wait_read() { asm volatile("cp.async.bulk.wait_group.read 0;\n" ::: "memory"); }
// The committed stores are complete (before the CTA exits).
__device__ __forceinline__ void bulk_wait_all() { asm volatile("cp.async.bulk.wait_group 0;\n" ::: "memory"); }

// One warpgroup's output tile: 64 rows x BN columns of the stored type, as BOXES boxes of 64 rows
// x one 128-byte row each, 8 KB apart, 128-byte swizzled (16-byte chunk c of row r at chunk c ^ (r % 8)).
template <class Ep, int BN>
struct TmaStoreTile {
  static constexpr int ES = (int)sizeof(typename Storage<Ep::kStoreType>::type);
  static constexpr int BOX_COLS = 128 / ES;
  static constexpr int BOXES = BN * ES / 128;
  static constexpr int BYTES = BOXES * 8192;
  static_assert(BN * ES % 128 == 0, "a tile row is whole 128-byte boxes");
};

// Byte offset of columns col, col + 1 (col even) of row r in a TmaStoreTile.
template <int ES>
__device__ __forceinline__ u32 tma_store_offset(int r, int col) {
  const int byte = col * ES;
  return (u32)((byte / 128) * 8192 + r * 128 + ((((byte % 128) / 16) ^ (r & 7)) * 16) + byte % 16);
}

// A 32-bit store to shared memory at a shared-window address. No "memory" clobber: the compiler
// may issue the epilogue's global loads of later columns ahead of it (a store through a generic
// pointer could alias them, which kept one dependent round trip per column); volatile keeps it
// in order with the barriers and fences around it.
__device__ __forceinline__ void st_shared_u32(u32 addr, u32 v) {
  asm volatile("st.shared.b32 [%0], %1;\n" ::"r"(addr), "r"(v));
}

// The register epilogue of one m64 x BN accumulator block whose first element is (m0, n0), first
// half: the generated chain applied to the accumulators where the wgmma left them (fragment j of
// a thread: rows r and r + 8, columns 8j + 2 (lane % 4) + {0, 1}), converted to the output type
// and written to the warpgroup's TmaStoreTile at shared address `buf` in the layout of the
// 128-byte-swizzled boxes. V 2: the pair of columns as one vector (the plan's operands allow
// vectors), 1: element by element. The loads are those of a column: read once and used for both
// rows. `bar`: the warpgroup's named barrier. Afterwards the accumulators are free.
template <class Ep, int BN, int V>
__device__ __forceinline__ void epilogue_regs_write(const PointwiseParams& p, typename Ep::Index (&c)[Ep::kRank],
                                                    const float* acc, u32 buf, i64 m0, i64 n0, i64 N, float* red,
                                                    int bar) {
  typedef TmaStoreTile<Ep, BN> T;
  typedef typename Storage<Ep::kStoreType>::type Out;
  typedef typename Ep::Index Index;
  static_assert(T::ES == 2, "the register epilogue stores 16-bit outputs");
  const int t = (int)threadIdx.x % 128, lane = t % 32, r = (t / 32) * 16 + lane / 4;
  if (t == 0) bulk_wait_read();  // the previous tile's store has left the buffer
  asm volatile("bar.sync %0, 128;\n" ::"r"(bar) : "memory");
#pragma unroll
  for (int j = 0; j < BN / 8; ++j) {
    const int col = 8 * j + 2 * (lane & 3);
    // Columns past N (N is even: register_epilogue) are clipped by the store; they compute with
    // the last pair's inputs, so no column needs a branch and the loads can all go first.
    const i64 n = min(n0 + col, N - 2);
    Packed<Out, 2> lo, hi;
#pragma unroll
    for (int e = 0; e < 2; e += V) {
      float a[V], b[V];
      c[Ep::kRank - 1] = (Index)(n + e);
      typename Ep::template Loaded<V> l;
      Ep::template load<V>(p, c, l);
      c[Ep::kRank - 2] = (Index)(m0 + r);
      Ep::template apply_regs<V>(p, c, l, acc + 4 * j + e, red, a);
      c[Ep::kRank - 2] = (Index)(m0 + r + 8);
      Ep::template apply_regs<V>(p, c, l, acc + 4 * j + 2 + e, red, b);
#pragma unroll
      for (int v = 0; v < V; ++v) {
        lo.v[e + v] = from_float<Ep::kStoreType>(a[v]);
        hi.v[e + v] = from_float<Ep::kStoreType>(b[v]);
      }
    }
    st_shared_u32(buf + tma_store_offset<T::ES>(r, col), lo.raw);
    st_shared_u32(buf + tma_store_offset<T::ES>(r + 8, col), hi.raw);
  }
  // The copy engine reads the tile through the async proxy.
  asm volatile("fence.proxy.async.shared::cta;\n" ::: "memory");
}

// V by the plan's vector width at run time (gemm_common.cuh's epilogue_staged's rule).
template <class Ep, int BN>
__device__ __forceinline__ void epilogue_tma_write(const PointwiseParams& p, typename Ep::Index (&c)[Ep::kRank],
                                                   const float* acc, u32 buf, i64 m0, i64 n0, i64 N, int vec, float* red,
                                                   int bar) {
  if (vec == 4) epilogue_regs_write<Ep, BN, 2>(p, c, acc, buf, m0, n0, N, red, bar);
  else epilogue_regs_write<Ep, BN, 1>(p, c, acc, buf, m0, n0, N, red, bar);
}

// Second half: once every thread of the warpgroup has written its part, thread 0 issues the
// tile's TMA stores from `buf`.
template <class Ep, int BN>
__device__ __forceinline__ void epilogue_tma_issue(u32 buf, const void* map, i64 m0, i64 n0, int bar) {
  typedef TmaStoreTile<Ep, BN> T;
  asm volatile("bar.sync %0, 128;\n" ::"r"(bar) : "memory");
  if (threadIdx.x % 128 == 0) {
#pragma unroll
    for (int b = 0; b < T::BOXES; ++b) tma_store_2d(map, buf + b * 8192, (int)n0 + b * T::BOX_COLS, (int)m0);
    bulk_commit();
  }
}

}  // namespace dg
