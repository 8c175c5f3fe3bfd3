// The register epilogue of the wgmma cores (sm_90a): the generated pointwise chain is applied to a
// consumer warpgroup's accumulators where they are (the wgmma fragment layout), the results are
// converted to the output type and written to shared memory in the layout of a 128-byte-swizzled
// TMA box, and one thread stores the warpgroup's 64 x BN tile with cp.async.bulk.tensor. The
// accumulators are free once the tile is in shared memory, so the consumers issue the next tile's
// first k step before the last box's barrier and store; the copy engine drains the stores during
// the next main loop, and a ring slot is rewritten only after cp.async.bulk.wait_group.read.
//
// Against the staged epilogue (gemm_common.cuh's epilogue_staged: fp32 through shared memory in
// 64 x 32 chunks, two named barriers each, then per-thread global stores) this needs two barriers
// per 64-column box and no global stores by the consumers. It serves epilogues with one stored output of 16
// bits, row-contiguous, loads that do not vary along the GEMM rows (per-channel vectors such as
// bias and scale, scalars) and full reductions (AMAX): the host checks that
// (common/register_epilogue.cpp).
#pragma once
#include "gemm_common.cuh"

namespace dg {

// The consumers' epilogue, chosen by the kernel's configuration (Config::kEpilogue): the staged
// one, the register one with TMA stores (its chain unrolled over every accumulator, or BOXED: one
// 64-column box at a time in a rolled loop, for chains too long to unroll), or (diagnostics, timing
// only: outputs are not written) the staged one without its reads and global stores, or none.
enum : int { EPI_STAGED = 0, EPI_TMA_STORE = 1, EPI_PROBE_STAGE_ONLY = 2, EPI_PROBE_NONE = 3, EPI_TMA_STORE_BOXED = 4 };

// Whether mode EPI is a register epilogue (TMA stores from the accumulators).
template <int EPI>
constexpr bool kRegisterEpilogue = EPI == EPI_TMA_STORE || EPI == EPI_TMA_STORE_BOXED;

// Config::kEpilogue where the configuration names it (the convolution engine), else EPI_STAGED.
template <class C, class = int>
struct EpilogueModeOf {
  enum : int { value = EPI_STAGED };
};
template <class C>
struct EpilogueModeOf<C, decltype((int)C::kEpilogue)> {
  enum : int { value = C::kEpilogue };
};

__device__ __forceinline__ void tma_store_3d(const void* map, u32 src, int c0, int c1, int c2) {
  asm volatile("cp.async.bulk.tensor.3d.global.shared::cta.bulk_group [%0, {%2, %3, %4}], [%1];\n" ::"l"(map),
               "r"(src), "r"(c0), "r"(c1), "r"(c2)
               : "memory");
}
__device__ __forceinline__ void bulk_commit() { asm volatile("cp.async.bulk.commit_group;\n" ::: "memory"); }
// The committed stores are complete (before the CTA exits).
__device__ __forceinline__ void bulk_wait_all() { asm volatile("cp.async.bulk.wait_group 0;\n" ::: "memory"); }

// One warpgroup's output tile: 64 rows x BN columns of the stored type, as BOXES boxes of 64 rows
// x one 128-byte row each, 128-byte swizzled (16-byte chunk c of row r at chunk c ^ (r % 8)). They
// pass through a ring of SLOTS 8 KB slots (two, or one for a one-box tile), so the warpgroup's
// buffer is 16 KB whatever the tile width and 128 x 256 tiles keep four stages.
template <class Ep, int BN>
struct TmaStoreTile {
  static constexpr int ES = (int)sizeof(typename Storage<Ep::kStoreType>::type);
  static constexpr int BOX_COLS = 128 / ES;
  static constexpr int BOXES = BN * ES / 128;
  static constexpr int SLOTS = BOXES < 2 ? BOXES : 2;
  static constexpr int BYTES = SLOTS * 8192;
  static_assert(BN * ES % 128 == 0, "a tile row is whole 128-byte boxes");
};

// Byte offset of columns col, col + 1 (col even, within one box) of row r in a box.
template <int ES>
__device__ __forceinline__ u32 tma_box_offset(int r, int col) {
  const int byte = col * ES;
  return (u32)(r * 128 + ((((byte % 128) / 16) ^ (r & 7)) * 16) + byte % 16);
}

// The epilogue's shared-memory accesses and barriers carry no "memory" clobber: nothing in it
// reads or writes memory the compiler sees (the tile goes out by st.shared and the copy engine),
// so the chain's global loads may all issue ahead of them; volatile keeps them in order.
__device__ __forceinline__ void st_shared_u32(u32 addr, u32 v) {
  asm volatile("st.shared.b32 [%0], %1;\n" ::"r"(addr), "r"(v));
}
__device__ __forceinline__ void epilogue_bar(int bar) { asm volatile("bar.sync %0, 128;\n" ::"r"(bar)); }
// At most N of the committed stores may still be reading their shared memory.
template <int N>
__device__ __forceinline__ void bulk_wait_read_below() {
  asm volatile("cp.async.bulk.wait_group.read %0;\n" ::"n"(N));
}

// The register epilogue of one m64 x BN accumulator block whose first element is (m0, n0), first
// half: the generated chain applied to the accumulators in place, where the wgmma left them
// (fragment j of a thread: rows r and r + 8, columns 8j + 2 (lane % 4) + {0, 1}). V 2: the pair of
// columns as one vector (the plan's operands allow vectors), 1: element by element. The loads are
// those of a column: read once and used for both rows. Columns past N (N is even:
// register_epilogue) compute with the last pair's inputs and are clipped by the store, so no
// column branches and the loads can all go first. Full reductions (Ep::kFull, AMAX) must not see
// those, nor rows past M: apply_regs folds an element into them only where it is `live` (a
// select, so that no branch splits the unrolled chain). INTERIOR: the block lies inside the output,
// so columns need no clamp and every element is live: the loads' addresses are one base plus
// constants (the clamped form cost ~10 integer instructions per column pair, a quarter of the
// tutorial conv's epilogue).
template <class Ep, int BN, int V, bool INTERIOR>
__device__ __forceinline__ void epilogue_regs_apply(const PointwiseParams& p, typename Ep::Index (&c)[Ep::kRank],
                                                    float* acc, i64 m0, i64 n0, i64 M, i64 N, float* red) {
  typedef typename Ep::Index Index;
  const int t = (int)threadIdx.x % 128, lane = t % 32, r = (t / 32) * 16 + lane / 4;
  const bool row_a = INTERIOR || m0 + r < M, row_b = INTERIOR || m0 + r + 8 < M;
#pragma unroll
  for (int j = 0; j < BN / 8; ++j) {
    const i64 col = n0 + 8 * j + 2 * (lane & 3), n = INTERIOR ? col : min(col, N - 2);
    const bool col_in = INTERIOR || col < N;  // (N even: a pair is in or out whole)
#pragma unroll
    for (int e = 0; e < 2; e += V) {
      float a[V], b[V];
      c[Ep::kRank - 1] = (Index)(n + e);
      typename Ep::template Loaded<V> l;
      Ep::template load<V>(p, c, l);
      c[Ep::kRank - 2] = (Index)(m0 + r);
      Ep::template apply_regs<V>(p, c, l, acc + 4 * j + e, red, a, row_a && col_in);
      c[Ep::kRank - 2] = (Index)(m0 + r + 8);
      Ep::template apply_regs<V>(p, c, l, acc + 4 * j + 2 + e, red, b, row_b && col_in);
#pragma unroll
      for (int v = 0; v < V; ++v) acc[4 * j + e + v] = a[v], acc[4 * j + 2 + e + v] = b[v];
    }
  }
}

// V by the plan's vector width at run time (gemm_common.cuh's epilogue_staged's rule), and the
// interior form for blocks inside the output (all but the last row or column of tiles).
template <class Ep, int BN>
__device__ __forceinline__ void epilogue_tma_apply(const PointwiseParams& p, typename Ep::Index (&c)[Ep::kRank],
                                                   float* acc, i64 m0, i64 n0, i64 M, i64 N, int vec, float* red) {
  const bool interior = m0 + 64 <= M && n0 + BN <= N;
  if (vec == 4) {
    if (interior) epilogue_regs_apply<Ep, BN, 2, true>(p, c, acc, m0, n0, M, N, red);
    else epilogue_regs_apply<Ep, BN, 2, false>(p, c, acc, m0, n0, M, N, red);
  } else {
    if (interior) epilogue_regs_apply<Ep, BN, 1, true>(p, c, acc, m0, n0, M, N, red);
    else epilogue_regs_apply<Ep, BN, 1, false>(p, c, acc, m0, n0, M, N, red);
  }
}

// One box's 32 accumulators of a thread (fragments 0..7 of the box: rows r and r + 8, columns
// 8j + 2 (lane % 4) + {0, 1}) converted and written to `slot`, once the store that used the slot
// before has read it (SLOTS: the ring's size).
template <class Ep, int SLOTS>
__device__ __forceinline__ void epilogue_tma_write_values(const float* v, u32 slot, int bar) {
  typedef typename Storage<Ep::kStoreType>::type Out;
  static_assert(sizeof(Out) == 2, "the register epilogue stores 16-bit outputs");
  const int t = (int)threadIdx.x % 128, lane = t % 32, r = (t / 32) * 16 + lane / 4;
  if (t == 0) bulk_wait_read_below<SLOTS - 1>();
  epilogue_bar(bar);
#pragma unroll
  for (int j = 0; j < 8; ++j) {
    const int col = 8 * j + 2 * (lane & 3);
    Packed<Out, 2> lo, hi;
#pragma unroll
    for (int e = 0; e < 2; ++e) {
      lo.v[e] = from_float<Ep::kStoreType>(v[4 * j + e]);
      hi.v[e] = from_float<Ep::kStoreType>(v[4 * j + 2 + e]);
    }
    st_shared_u32(slot + tma_box_offset<2>(r, col), lo.raw);
    st_shared_u32(slot + tma_box_offset<2>(r + 8, col), hi.raw);
  }
  // The copy engine reads the box through the async proxy.
  asm volatile("fence.proxy.async.shared::cta;\n");
}

// Second half, box by box: box B's columns converted to the output type and written to its ring
// slot in the warpgroup's buffer (shared address `buf`) once the store that used the slot before
// has read it (`bar`: the warpgroup's named barrier). Afterwards the box's accumulators are free.
// B is a template argument so that the accumulators' indices are constants (a run-time box loop
// that the compiler left rolled put the whole accumulator array in local memory).
template <class Ep, int BN, int B>
__device__ __forceinline__ void epilogue_tma_write_box(const float* acc, u32 buf, int bar) {
  typedef TmaStoreTile<Ep, BN> T;
  epilogue_tma_write_values<Ep, T::SLOTS>(acc + B * (T::BOX_COLS / 2), buf + (B % T::SLOTS) * 8192, bar);
}

// Then, once every thread of the warpgroup has written its part, thread 0 stores box b, (m0, n0)
// of matrix z (the linear batch index; 0 for a convolution) being the block's first element, as
// one bulk group.
template <class Ep, int BN>
__device__ __forceinline__ void epilogue_tma_store_box(u32 buf, const void* map, i64 m0, i64 n0, int z, int b,
                                                       int bar) {
  typedef TmaStoreTile<Ep, BN> T;
  epilogue_bar(bar);
  if (threadIdx.x % 128 == 0) {
    tma_store_3d(map, buf + (b % T::SLOTS) * 8192, (int)n0 + b * T::BOX_COLS, (int)m0, z);
    bulk_commit();
  }
}

// Boxes B .. LAST - 1 of a block, each written and stored (the caller handles box LAST itself).
template <class Ep, int BN, int B, int LAST>
struct TmaStoreBoxes {
  __device__ __forceinline__ static void run(const float* acc, u32 buf, const void* map, i64 m0, i64 n0, int z,
                                             int bar) {
    if constexpr (B < LAST) {
      epilogue_tma_write_box<Ep, BN, B>(acc, buf, bar);
      epilogue_tma_store_box<Ep, BN>(buf, map, m0, n0, z, B, bar);
      TmaStoreBoxes<Ep, BN, B + 1, LAST>::run(acc, buf, map, m0, n0, z, bar);
    }
  }
};

// Box b's 32 accumulators copied into v: a run-time b picks a case whose indices are constants,
// so that the accumulators stay in registers in a loop over the boxes that is not unrolled.
template <int BOXES, int B = 0>
__device__ __forceinline__ void copy_box(const float* acc, int b, float (&v)[32]) {
  if constexpr (B < BOXES) {
    if (b == B) {
#pragma unroll
      for (int i = 0; i < 32; ++i) v[i] = acc[32 * B + i];
    } else {
      copy_box<BOXES, B + 1>(acc, b, v);
    }
  }
}

// EPI_TMA_STORE_BOXED: one m64 x BN block, a 64-column box at a time in a rolled loop: the box's
// accumulators copied out (copy_box), the chain applied to them (one instance of its code, where
// the unrolled epilogue has one per accumulator: GELU's erf over 128 of them made 13.4k SASS
// instructions), written and stored; `next` (the next tile's first k step) runs once every box is
// out of the accumulators, before the last box's store. (sm, sz): the block's place in the map
// (m0 and the batch, or a transposed convolution phase's column and row).
template <class Ep, int BN, class Next>
__device__ __forceinline__ void epilogue_tma_boxed(const PointwiseParams& p, typename Ep::Index (&c)[Ep::kRank],
                                                   const float* acc, u32 buf, const void* map, i64 m0, i64 n0, i64 sm,
                                                   int sz, i64 M, i64 N, int vec, float* red, int bar, Next next) {
  typedef TmaStoreTile<Ep, BN> T;
  static_assert(T::BOX_COLS == 64, "a box is 64 columns of a 16-bit output");
#pragma unroll 1
  for (int b = 0; b < T::BOXES; ++b) {
    float v[32];
    copy_box<T::BOXES>(acc, b, v);
    epilogue_tma_apply<Ep, 64>(p, c, v, m0, n0 + 64 * b, M, N, vec, red);
    epilogue_tma_write_values<Ep, T::SLOTS>(v, buf + (b % T::SLOTS) * 8192, bar);
    if (b + 1 < T::BOXES) epilogue_tma_store_box<Ep, BN>(buf, map, sm, n0, sz, b, bar);
  }
  next();
  epilogue_tma_store_box<Ep, BN>(buf, map, sm, n0, sz, T::BOXES - 1, bar);
}

}  // namespace dg
