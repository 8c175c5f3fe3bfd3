// Pieces every GEMM-shaped kernel shares (matmul and implicit-GEMM convolution, mma.sync and
// wgmma): kernel arguments, cp.async / ldmatrix / mma wrappers, the swizzled shared-memory tile
// addressing, and the call into the generated epilogue for a pair of accumulators.
//
// The epilogue (struct Epilogue from src/engines/cuda/codegen, emitted over the layout built by
// src/engines/cuda/common/epilogue_layout.cpp) sees coordinates [batch dims..., m, n]: the last two are
// the GEMM row and column, the others the output's batch dims.
#pragma once
#include "dg_pointwise.cuh"

namespace dg {

#define DG_GEMM_MAX_BATCH 6

// Kernel arguments of a (batched) matmul. Mirrored by src/engines/cuda/gemm/gemm_params.hpp.
struct GemmParams {
  i64 M, N, K;
  i64 a_stride_m, a_stride_k;              // elements
  i64 b_stride_k, b_stride_n;
  i64 batch_size[DG_GEMM_MAX_BATCH];       // output batch dims, outermost first (1 when unused)
  i64 a_batch_stride[DG_GEMM_MAX_BATCH];   // elements; 0 where A broadcasts
  i64 b_batch_stride[DG_GEMM_MAX_BATCH];
  i64 batch_count;                         // product of batch_size
  const void* a;
  const void* b;
  i64 a_batch_unit;                        // wgmma: A's batch offsets are multiples of this (TMA coordinate)
  i64 b_batch_unit;
  int batch_dims;                          // output batch dims used
  int epi_vec;                             // 4: operands allow 4-wide vectors in the epilogue; 1: elements
  int tiles_m, tiles_n;
  int splits, stream_k;                    // wgmma split-K factor (1: none); stream-K tail (work_units.cuh)
  void* ws;                                // split-K partial sums and per-tile counters (splitk_fixup.cuh)
};

// ---- PTX wrappers

__device__ __forceinline__ u32 smem_u32(const void* p) { return (u32)__cvta_generic_to_shared(p); }

// 16 bytes global -> shared; bytes past `src_bytes` (0..16) are zero-filled.
__device__ __forceinline__ void cp_async16(u32 dst, const void* src, int src_bytes) {
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n" ::"r"(dst), "l"(src), "r"(src_bytes) : "memory");
}
__device__ __forceinline__ void cp_async_commit() { asm volatile("cp.async.commit_group;\n" ::: "memory"); }
template <int N> __device__ __forceinline__ void cp_async_wait() {
  asm volatile("cp.async.wait_group %0;\n" ::"n"(N) : "memory");
}

__device__ __forceinline__ void ldmatrix_x4(u32 addr, u32 (&r)[4]) {
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0, %1, %2, %3}, [%4];\n"
               : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3]) : "r"(addr));
}
__device__ __forceinline__ void ldmatrix_x4_trans(u32 addr, u32 (&r)[4]) {
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16 {%0, %1, %2, %3}, [%4];\n"
               : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3]) : "r"(addr));
}

// The operands of the m16n8 mma.sync forms: D (= C, four fp32 registers) += A (four registers) x
// B (two), for the instruction INSTR.
#define DG_MMA_M16N8(INSTR)                                                                            \
  asm volatile(INSTR " {%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, {%0, %1, %2, %3};\n"              \
               : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])                                       \
               : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1))

// D += A * B for one m16n8k16 tile; DT picks bf16 or fp16 operands, accumulation is fp32.
template <int DT> __device__ __forceinline__ void mma_16816(float (&d)[4], const u32 (&a)[4], u32 b0, u32 b1);
template <> __device__ __forceinline__ void mma_16816<DT_BFLOAT16>(float (&d)[4], const u32 (&a)[4], u32 b0, u32 b1) {
  DG_MMA_M16N8("mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32");
}
template <> __device__ __forceinline__ void mma_16816<DT_HALF>(float (&d)[4], const u32 (&a)[4], u32 b0, u32 b1) {
  DG_MMA_M16N8("mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32");
}

// m16n8k8 TF32 (fp32 in memory, fp32 accumulation): the fragments have the m16n8k16 register
// layout with one 32-bit element where bf16 has two, so the same tile addressing in 16-byte chunks
// loads both. The inputs are rounded to TF32 (nearest, ties away) before the MMA, which otherwise
// drops their low 13 mantissa bits.
__device__ __forceinline__ u32 to_tf32(u32 x) {
  u32 r;
  asm("cvt.rna.tf32.f32 %0, %1;\n" : "=r"(r) : "f"(__uint_as_float(x)));
  return r;
}
__device__ __forceinline__ void mma_1688_tf32(float (&d)[4], const u32 (&a)[4], u32 b0, u32 b1) {
  DG_MMA_M16N8("mma.sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32");
}

// An mma.sync operand type: element bytes (ES), k per MMA step (one step = two 16-byte chunks of
// a K-major row), and the MMA itself on fragments already rounded (tf32) or as loaded. The wgmma
// core reads ES alone (FP8: 1; it has no mma.sync form here).
template <int DT> struct MmaOperand {
  static constexpr int ES = DT == DT_FLOAT ? 4 : IsFp8Operand<DT>::value ? 1 : 2;
  static constexpr int K_STEP = 32 / ES;
  __device__ __forceinline__ static u32 round(u32 x) { return DT == DT_FLOAT ? to_tf32(x) : x; }
  __device__ __forceinline__ static void mma(float (&d)[4], const u32 (&a)[4], u32 b0, u32 b1) {
    if constexpr (DT == DT_FLOAT) mma_1688_tf32(d, a, b0, b1);
    else mma_16816<DT>(d, a, b0, b1);
  }
};

// The raw bits of an ES-byte element (the loaders move bits, not values).
template <int ES> struct RawElem;
template <> struct RawElem<2> { typedef u16 type; };
template <> struct RawElem<4> { typedef u32 type; };

// ---- swizzled tiles: ROWS rows of COLS contiguous ES-byte elements, stored in 16-byte chunks whose
// index is XORed with the row so that 8 rows read at one chunk column hit 8 different bank groups.
template <int COLS, int ES = 2>
__device__ __forceinline__ u32 tile_offset(int row, int chunk) {
  constexpr int ROW_BYTES = COLS * ES;
  const int phys = ROW_BYTES >= 128  ? (chunk ^ (row & 7))
                   : ROW_BYTES == 64 ? (chunk ^ ((row >> 1) & 3))
                                     : (chunk ^ ((row >> 2) & 1));
  return (u32)(row * ROW_BYTES + phys * 16);
}

// ---- tile coordinates

// Output tile (tm, tn) of batch b for linear tile index t: consecutive tiles walk down GROUP rows
// of tiles before moving right, so that the tiles in flight share A and B panels in L2.
__device__ __forceinline__ void tile_coords(i64 t, int tiles_m, int tiles_n, i64& b, int& tm, int& tn) {
  const i64 per_batch = (i64)tiles_m * tiles_n;
  b = t / per_batch;
  const int idx = (int)(t - b * per_batch);
  const int GROUP = 8;
  const int group = idx / (GROUP * tiles_n);
  const int first_m = group * GROUP;
  const int gsize = min(tiles_m - first_m, GROUP);
  const int in_group = idx - group * GROUP * tiles_n;
  tm = first_m + in_group % gsize;
  tn = in_group / gsize;
}

// Output pixel m of an [N, O, P, Q] grid (out = {O, P, Q}) as its coordinates: what the
// convolution kernels' gathers start from.
struct Pixel {
  i64 n;
  int o, p, q;
};
__device__ __forceinline__ Pixel pixel_of(i64 m, const int (&out)[3]) {
  Pixel px;
  i64 t = m;
  px.q = (int)(t % out[2]);
  t /= out[2];
  px.p = (int)(t % out[1]);
  t /= out[1];
  px.o = (int)(t % out[0]);
  px.n = t / out[0];
  return px;
}

// The output rows of a transposed convolution's phase (conv_im2col_tma.cuh's DGRAD): GEMM row m,
// pixel (n, o, p, q) of the phase's [N, out] grid, is pixel (n, o * step + first, ...) of the
// output's [N, full] grid, whose row the epilogue's coordinates take. Rows are below 2^31 (the
// engine's rule), so m splits by multiplies (fast_div's magic numbers of out[d]): the epilogue
// maps every element's row, and 64-bit divisions there cost more than the tile's k steps.
struct SubgridRows {
  int out[3], full[3], step[3], first[3];
  u64 div_out[3];
};
__device__ __forceinline__ i64 subgrid_row(const SubgridRows& g, i64 m) {
  const u32 wq = fast_div((u32)m, g.div_out[2]), q = (u32)m - wq * (u32)g.out[2];
  const u32 np = fast_div(wq, g.div_out[1]), p = wq - np * (u32)g.out[1];
  const u32 n = fast_div(np, g.div_out[0]), o = np - n * (u32)g.out[0];
  const i64 d = (i64)n * g.full[0] + o * g.step[0] + g.first[0];
  return (d * g.full[1] + p * g.step[1] + g.first[1]) * g.full[2] + q * g.step[2] + g.first[2];
}
// epilogue_tile's row maps: GEMM row m -> the output's row, or -1 for a row no output pixel is
// (conv_halo_tma.cuh's HaloTiles has one too).
__device__ __forceinline__ i64 output_row(const SubgridRows& g, i64 m) { return subgrid_row(g, m); }

// Batch index b -> element offsets of A and B, and the epilogue's batch coordinates.
template <class Ep>
__device__ __forceinline__ void batch_coords(const GemmParams& g, i64 b, i64& a_off, i64& b_off,
                                             typename Ep::Index (&c)[Ep::kRank]) {
  a_off = 0;
  b_off = 0;
  i64 rest = b;
#pragma unroll
  for (int d = DG_GEMM_MAX_BATCH - 1; d >= 0; --d) {
    if (d >= g.batch_dims) continue;
    const i64 x = rest % g.batch_size[d];
    rest /= g.batch_size[d];
    a_off += x * g.a_batch_stride[d];
    b_off += x * g.b_batch_stride[d];
    if (d < Ep::kRank - 2) c[d] = (typename Ep::Index)x;
  }
}

// ---- epilogue. Accumulators are staged in shared memory first (fp32, `ld` floats per row), then
// read back V consecutive columns at a time in a loop that is not unrolled: the generated functor
// is instantiated a few times per kernel, not once per accumulator register, and its loads and
// stores are coalesced along n.
template <class Ep, int V, class Rows>
__device__ __forceinline__ void epilogue_tile(const PointwiseParams& p, typename Ep::Index (&c)[Ep::kRank],
                                              const float* tile, int ld, int rows, int cols, i64 m0, i64 n0, i64 M,
                                              i64 N, float* red, int tid, int nthreads, const Rows* sub) {
  typedef typename Ep::Index Index;
  const int per_row = cols / V;
#pragma unroll 1
  for (int i = tid; i < rows * per_row; i += nthreads) {
    const int r = i / per_row, cv = (i - r * per_row) * V;
    const i64 m = m0 + r, n = n0 + cv;
    if (m >= M || n >= N) continue;
    const i64 row = sub ? output_row(*sub, m) : m;
    if (row < 0) continue;
    c[Ep::kRank - 2] = (Index)row;
    c[Ep::kRank - 1] = (Index)n;
    const float* a = tile + r * ld + cv;
    if (V == 1 || n + V <= N) {
      typename Ep::template Loaded<V> l;
      Ep::template load<V>(p, c, l);
      Ep::template apply<V>(p, c, l, a, red);
    } else {
#pragma unroll 1
      for (int e = 0; e < V && n + e < N; ++e) {
        c[Ep::kRank - 1] = (Index)(n + e);
        typename Ep::template Loaded<1> l;
        Ep::template load<1>(p, c, l);
        Ep::template apply<1>(p, c, l, a + e, red);
      }
    }
  }
}

// Vector width 4 where the plan's operands allow it (g.epi_vec), else element by element.
// `sub`: the rows' map (output_row: a strided sub-grid's, a halo tile's virtual grid; null: the
// output's own rows).
template <class Ep, class Rows = SubgridRows>
__device__ __forceinline__ void epilogue_staged(const PointwiseParams& p, typename Ep::Index (&c)[Ep::kRank],
                                                const float* tile, int ld, int rows, int cols, i64 m0, i64 n0, i64 M,
                                                i64 N, int vec, float* red, int tid, int nthreads,
                                                const Rows* sub = 0) {
  if (vec == 4) epilogue_tile<Ep, 4>(p, c, tile, ld, rows, cols, m0, n0, M, N, red, tid, nthreads, sub);
  else epilogue_tile<Ep, 1>(p, c, tile, ld, rows, cols, m0, n0, M, N, red, tid, nthreads, sub);
}

}  // namespace dg
