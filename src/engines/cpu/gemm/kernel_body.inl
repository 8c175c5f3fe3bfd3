// The microkernel body, written once over a vector type V of simd/ and instantiated per ISA:
// kernel_<isa>.cpp includes this file inside its ISA's target region (so every instantiation is
// compiled for exactly that ISA). V gives Reg, kIsa, kWidth, zero(), load(p), store(p, r),
// bcast(p), add(a, b) and fma(a, b, acc) = a * b + acc; the fp32 ones also sub, mul, set1 and
// relu_clip, for the epilogue chain in registers (microkernel_chain).
// No include guard: it is meant to be included once per ISA file.

#include "engines/cpu/epilogue/chain_registers.inl"

namespace dnngraph::cpu::gemm {
namespace {

// How far ahead of its reads the kernel prefetches B: 16 KB (measured against 1 and 4 KB and 32 KB
// on ResNet-50's layers, Intel AVX-512, docs/perf.md 2026-12-06).
constexpr int64_t kBPrefetchFloats = 4096;

// One k step of an MR x NV tile: B's NV vectors, then row i's element a_of(i) broadcast against
// them. B's panel is read once per tile row; the first tile's pass streams it from memory (a
// network's weights are cold): fetch 16 KB ahead into L2, a line per 64 bytes read.
template <class V, int MR, int NV, class RowElement>
inline __attribute__((always_inline)) void k_step(const float* b, typename V::Reg (&acc)[MR][NV], RowElement a_of) {
  constexpr int W = V::kWidth;
#pragma GCC unroll 4
  for (int o = 0; o < NV * W; o += 16) __builtin_prefetch(b + kBPrefetchFloats + o, 0, 2);
  typename V::Reg bv[NV];
#pragma GCC unroll 4
  for (int j = 0; j < NV; ++j) bv[j] = V::load(b + j * W);
#pragma GCC unroll 16
  for (int i = 0; i < MR; ++i) {
    const typename V::Reg a = V::bcast(a_of(i));
#pragma GCC unroll 4
    for (int j = 0; j < NV; ++j) acc[i][j] = V::fma(a, bv[j], acc[i][j]);
  }
}

// The byte distance between a segment's consecutive row pointers where all MR are evenly spaced
// (consecutive pixels of a 1x1 conv, the rows of a matrix), else 0; compared as addresses, since
// padding rows may point elsewhere.
template <int MR>
inline int64_t even_row_stride(const float* const* rows) {
  const auto a0 = reinterpret_cast<uintptr_t>(rows[0]), d = reinterpret_cast<uintptr_t>(rows[1]) - a0;
  bool even = true;
#pragma GCC unroll 16
  for (int i = 2; i < MR; ++i) even &= reinterpret_cast<uintptr_t>(rows[i]) - a0 == d * static_cast<uintptr_t>(i);
  return even ? static_cast<int64_t>(d) : 0;
}

// One segment's k loop over evenly spaced rows (`stride` bytes apart): row i read at base[i / 3] +
// (i % 3) x stride, the k step added to the MR / 3 bases. Fourteen row pointers, B, k and the loop
// need more than x86's 15 general registers (the 14-row tile reloaded four of them from the stack
// every k step); the bases, the stride, B and the loop need eight.
template <class V, int MR, int NV>
inline __attribute__((always_inline)) void strided_rows(const float* row0, int64_t stride, int64_t seg_len,
                                                         const float*& b, typename V::Reg (&acc)[MR][NV]) {
  constexpr int NB = (MR + 2) / 3;
  const char* base[NB];
#pragma GCC unroll 8
  for (int q = 0; q < NB; ++q) base[q] = reinterpret_cast<const char*>(row0) + 3 * q * stride;
#pragma GCC unroll 4
  for (int64_t k = 0; k < seg_len; ++k) {
    k_step<V, MR, NV>(b, acc, [&](int i) { return reinterpret_cast<const float*>(base[i / 3] + (i % 3) * stride); });
#pragma GCC unroll 8
    for (int q = 0; q < NB; ++q) base[q] += sizeof(float);
    b += NV * V::kWidth;
  }
}

// The tile's accumulators at zero.
template <class V, int MR, int NV>
inline __attribute__((always_inline)) void zero_tile(typename V::Reg (&acc)[MR][NV]) {
#pragma GCC unroll 16
  for (int i = 0; i < MR; ++i)
#pragma GCC unroll 4
    for (int j = 0; j < NV; ++j) acc[i][j] = V::zero();
}

// The finished tile into C (row stride ldc), added to what C holds when `accumulate`.
template <class V, int MR, int NV>
inline __attribute__((always_inline)) void store_tile(typename V::Reg (&acc)[MR][NV], float* c, int64_t ldc,
                                                       bool accumulate) {
#pragma GCC unroll 16
  for (int i = 0; i < MR; ++i)
#pragma GCC unroll 4
    for (int j = 0; j < NV; ++j) {
      float* p = c + i * ldc + j * V::kWidth;
      V::store(p, accumulate ? V::add(V::load(p), acc[i][j]) : acc[i][j]);
    }
}

// A finished tile into C: with kChain, first C's sums when `accumulate`, then the chain in
// registers (tile at row0, col0 of its block), and stored; else stored (added when `accumulate`).
template <class V, int MR, int NV, bool kChain>
inline __attribute__((always_inline)) void finish_tile(typename V::Reg (&acc)[MR][NV], float* c, int64_t ldc,
                                                        bool accumulate, const TileChain* chain, int64_t row0,
                                                        int64_t col0) {
  constexpr int W = V::kWidth;
  if constexpr (kChain) {
    if (accumulate)
#pragma GCC unroll 16
      for (int i = 0; i < MR; ++i)
#pragma GCC unroll 4
        for (int j = 0; j < NV; ++j) acc[i][j] = V::add(V::load(c + i * ldc + j * W), acc[i][j]);
    for (const ChainStep& st : chain->chain->steps) apply_step<V, MR, NV>(st, *chain, row0, col0, acc);
    accumulate = false;
  }
  store_tile<V, MR, NV>(acc, c, ldc, accumulate);
}

// kPacked: A of each segment is one k-major panel at rows[s * MR] (element (i, k) at [k * MR + i]),
// a single stream; otherwise row i of segment s is rows[s * MR + i], unit stride.
// kChain: `chain` runs on the finished tile before its store (V's sub, mul, set1 and relu_clip).
template <class V, int MR, int NV, bool kPacked, bool kChain>
inline __attribute__((always_inline)) void microkernel_body(int nseg, int64_t seg_len, const float* const* rows,
                                                            const float* b, float* c, int64_t ldc, bool accumulate,
                                                            const TileChain* chain, int64_t row0, int64_t col0) {
  constexpr int W = V::kWidth;
  typename V::Reg acc[MR][NV];
#pragma GCC unroll 16
  for (int i = 0; i < MR; ++i) {  // the C tile is read at the end: start fetching it now
    __builtin_prefetch(c + i * ldc);
    __builtin_prefetch(c + i * ldc + NV * W - 1);
  }
  zero_tile<V, MR, NV>(acc);
  for (int s = 0; s < nseg; ++s) {
    if constexpr (!kPacked && MR >= 12) {
      if (const int64_t stride = even_row_stride<MR>(rows + s * MR); stride != 0) {
        strided_rows<V, MR, NV>(rows[s * MR], stride, seg_len, b, acc);
        continue;
      }
    }
    const float* r[MR];
#pragma GCC unroll 16
    for (int i = 0; i < MR; ++i) r[i] = kPacked ? rows[s * MR] + i : rows[s * MR + i];
    constexpr int64_t kStep = kPacked ? MR : 1;
#pragma GCC unroll 4
    for (int64_t k = 0; k < seg_len; ++k) {
      k_step<V, MR, NV>(b, acc, [&](int i) { return r[i] + k * kStep; });
      b += NV * W;
    }
  }
  finish_tile<V, MR, NV, kChain>(acc, c, ldc, accumulate, chain, row0, col0);
}

template <class V, int MR, int NV, bool kPacked>
void microkernel(int nseg, int64_t seg_len, const float* const* rows, const float* b, float* c, int64_t ldc,
                 bool accumulate) {
  microkernel_body<V, MR, NV, kPacked, false>(nseg, seg_len, rows, b, c, ldc, accumulate, nullptr, 0, 0);
}

template <class V, int MR, int NV>
void microkernel_chain(int nseg, int64_t seg_len, const float* const* rows, const float* b, float* c, int64_t ldc,
                       bool accumulate, const TileChain& chain, int64_t row0, int64_t col0) {
  microkernel_body<V, MR, NV, false, true>(nseg, seg_len, rows, b, c, ldc, accumulate, &chain, row0, col0);
}

// StridedKernel: ntiles tiles down one column, row r of tile t at a + (t * MR + r) * lda, each
// summed over one segment of k and stored (chained) as microkernel_body does. One call for the
// column, not one a tile: a 1x1 conv over 16 channels has 448 FMAs a 14 x 32 tile, and the call,
// the row pointers and the checks around each tile took a third of its time (Zen 4).
template <class V, int MR, int NV, bool kChain>
inline __attribute__((always_inline)) void strided_tiles(int64_t ntiles, int64_t k, const float* a, int64_t lda,
                                                         const float* b, float* c, int64_t ldc, bool accumulate,
                                                         const TileChain* chain, int64_t row0, int64_t col0) {
  constexpr int W = V::kWidth;
  const int64_t stride = lda * static_cast<int64_t>(sizeof(float));
  for (int64_t t = 0; t < ntiles; ++t) {
    float* ct = c + t * MR * ldc;
#pragma GCC unroll 16
    for (int i = 0; i < MR; ++i) __builtin_prefetch(ct + i * ldc + NV * W - 1);
    typename V::Reg acc[MR][NV];
    zero_tile<V, MR, NV>(acc);
    const float* bt = b;
    strided_rows<V, MR, NV>(a + t * MR * lda, stride, k, bt, acc);
    finish_tile<V, MR, NV, kChain>(acc, ct, ldc, accumulate, chain, row0 + t * MR, col0);
  }
}

template <class V, int MR, int NV>
void microkernel_strided(int64_t ntiles, int64_t k, const float* a, int64_t lda, const float* b, float* c,
                         int64_t ldc, bool accumulate, const TileChain* chain, int64_t row0, int64_t col0) {
  if (chain) strided_tiles<V, MR, NV, true>(ntiles, k, a, lda, b, c, ldc, accumulate, chain, row0, col0);
  else strided_tiles<V, MR, NV, false>(ntiles, k, a, lda, b, c, ldc, accumulate, nullptr, row0, col0);
}

// A and B both k-major where they lie (KmajorKernel): a conv_wgrad's rows of DY and X, a pixel
// per k step.
template <class V, int MR, int NV>
void microkernel_kmajor(int nruns, const KmajorRun* runs, const float* a_base, int64_t lda, const float* b_base,
                        int64_t ldb, float* c, int64_t ldc, bool accumulate) {
  typename V::Reg acc[MR][NV];
  zero_tile<V, MR, NV>(acc);
  for (int r = 0; r < nruns; ++r) {
    const float* a = a_base + runs[r].a;
    const float* b = b_base + runs[r].b;
    for (int64_t k = 0; k < runs[r].len; ++k, a += lda, b += ldb) k_step<V, MR, NV>(b, acc, [&](int i) { return a + i; });
  }
  store_tile<V, MR, NV>(acc, c, ldc, accumulate);
}

// The fp32 kernels take a TileChain; the bf16-pair ones (whose V has no relu_clip) do not.
template <class V, int MR, int NV>
constexpr ChainKernel chain_kernel_of() {
  if constexpr (requires(typename V::Reg r) { V::relu_clip(r, r, r); })
    return microkernel_chain<V, MR, NV>;
  else
    return nullptr;
}

// The fp32 kernels read k-major operands in place; the bf16-pair ones would need pairs of
// consecutive k (pixels) in each slot, which rows of DY and X do not hold.
template <class V, int MR, int NV>
constexpr KmajorKernel kmajor_kernel_of() {
  if constexpr (requires(typename V::Reg r) { V::relu_clip(r, r, r); })
    return microkernel_kmajor<V, MR, NV>;
  else
    return nullptr;
}

// Strided columns of tiles for the fp32 kernels (they take chains); none for the bf16 pairs.
template <class V, int MR, int NV>
constexpr StridedKernel strided_kernel_of() {
  if constexpr (requires(typename V::Reg r) { V::relu_clip(r, r, r); })
    return microkernel_strided<V, MR, NV>;
  else
    return nullptr;
}

// The kernels of V with MR rows and two vectors of columns (NR = 2 * kWidth): with the MR x 2
// accumulators, 2 B vectors and one broadcast, MR = 6 fills AVX2's 16 registers and MR = 12
// AVX-512's 32.
template <class V, int MR, int NV = 2>
constexpr KernelSet kKernelSet{V::kIsa, MR, NV * V::kWidth, microkernel<V, MR, NV, false>, microkernel<V, MR, NV, true>,
                                nullptr, chain_kernel_of<V, MR, NV>(), nullptr, kmajor_kernel_of<V, MR, NV>(),
                                strided_kernel_of<V, MR, NV>()};

}  // namespace
}  // namespace dnngraph::cpu::gemm
