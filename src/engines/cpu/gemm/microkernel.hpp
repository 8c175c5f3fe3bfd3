// GEMM microkernels: C[MR x NR] (+)= A[MR x k] * B[k x NR] with the tile in registers, fp32.
// A is read through row pointers (unit stride along k), so one kernel serves packed A blocks,
// row-major A read in place, and the indirect (pointer-per-tap) form of convolution. B is packed
// in NR-wide panels: k rows of NR contiguous floats.
#pragma once
#include <cstdint>
#include <vector>

#include "engines/cpu/cpu_features.hpp"
#include "engines/cpu/epilogue/epilogue_chain.hpp"

namespace dnngraph::cpu::gemm {

// Sums nseg segments: segment s reads rows[s * MR + i][0, seg_len) for row i, and seg_len rows
// of the B panel (which continues from segment to segment). Writes the full MR x NR tile at c
// (row stride ldc), adding to what is there when `accumulate`.
using MicroKernel = void (*)(int nseg, int64_t seg_len, const float* const* rows, const float* b, float* c,
                             int64_t ldc, bool accumulate);
// The same, then `chain` on the finished tile, at (row0, col0) of the chain's block, in registers
// before the store (a K block's last call): the fused epilogue without a second pass over C.
using ChainKernel = void (*)(int nseg, int64_t seg_len, const float* const* rows, const float* b, float* c,
                             int64_t ldc, bool accumulate, const TileChain& chain, int64_t row0, int64_t col0);

// ntiles MR x NR tiles down one column: row r of tile t at a + (t * MR + r) * lda (k floats, unit
// stride), B one panel of k rows, tile t at c + t * MR * ldc; with a chain (null: none), applied to
// tile t at (row0 + t * MR, col0) of its block before the store. For evenly spaced rows (a 1x1
// conv's pixels, a row-major A) and a small k, where a call per tile costs as much as its FMAs.
using StridedKernel = void (*)(int64_t ntiles, int64_t k, const float* a, int64_t lda, const float* b, float* c,
                               int64_t ldc, bool accumulate, const TileChain* chain, int64_t row0, int64_t col0);

// One run of a KmajorKernel: len k steps whose A rows start at a_base + a and B rows at b_base + b.
struct KmajorRun {
  int64_t a = 0, b = 0, len = 0;
};
// C[MR x NR] (+)= over the runs, sum over their k steps of A row k (MR values, rows lda apart)
// times B row k (NR values, rows ldb apart): both operands k-major where they lie (a conv_wgrad's
// DY and X), the tile in registers across the runs (a block of image lines' runs of pixels).
using KmajorKernel = void (*)(int nruns, const KmajorRun* runs, const float* a_base, int64_t lda,
                              const float* b_base, int64_t ldb, float* c, int64_t ldc, bool accumulate);

struct KernelSet {
  Isa isa;
  int mr, nr;
  MicroKernel kernel;         // A through MR row pointers per segment
  MicroKernel kernel_packed;  // A as one k-major panel per segment: rows[s * MR], (i, k) at [k * MR + i]
  // Called on each thread before its first tile of a run (gemm::run), where the kernels keep
  // per-thread state between tiles (AMX: the tile configuration, loaded once per run, not per tile).
  void (*begin_tiles)() = nullptr;
  ChainKernel kernel_chain = nullptr;  // `kernel` with a TileChain (fp32 kernels; null for bf16 pairs and AMX)
  // `kernel` over rows [0, MR / 2) only, for a tile of at most MR / 2 rows (AMX: a 16 x 32 block,
  // half the tile products of the 32 x 32 one); null where a short tile runs the whole kernel.
  MicroKernel kernel_half = nullptr;
  KmajorKernel kernel_kmajor = nullptr;  // fp32 kernels; null for bf16 pairs and AMX
  StridedKernel kernel_strided = nullptr;  // fp32 kernels; null for bf16 pairs and AMX
};

// The kernels of one ISA level; the caller checks cpu_features().supports(isa) first.
const KernelSet& kernel_set(Isa isa);
// Every tile shape of that level, kernel_set(isa) first: a problem whose M or N the first pads
// badly may take another (kernel_for_shape).
std::vector<const KernelSet*> kernel_shapes(Isa isa);
// The shape of kernel_shapes(isa) that pads an M x N problem the least (ties: the first), by
// the share of its tiles' FMAs that land inside M x N; only shapes at least min_nr wide.
const KernelSet& kernel_for_shape(Isa isa, int64_t m, int64_t n, int min_nr = 0);
// Share of the device's fp32 peak the kernels of this ISA reach on a large GEMM (the cost
// models' figure).
double kernel_efficiency(Isa isa);

// Per-ISA definitions (kernel_<isa>.cpp, each kernel_body.inl over its simd/ vector type); on
// non-x86 builds the x86 ones are null and kernel_set falls back to the portable kernels.
const KernelSet& portable_kernels();
const KernelSet* avx2_kernels();    // null when not compiled in
const KernelSet* avx512_kernels();  // null when not compiled in
const KernelSet* avx512_kernels_7x48();  // null when not compiled in
const KernelSet* avx512_kernels_14x32();  // null when not compiled in
const KernelSet* avx512_kernels_16x16();  // null when not compiled in
const KernelSet* avx512_kernels_8x32();  // null when not compiled in
// One row of A (a matrix-vector product, M = 1): 1 x 64 on AVX-512, 1 x 32 on AVX2, 1 x 8
// portable (four accumulators, B streamed); null when not compiled in.
const KernelSet* avx512_kernels_1x64();
const KernelSet* avx2_kernels_1x32();
// Those kernels for `isa` (whatever the CPU runs of it, as kernel_set).
const KernelSet& row_kernel_set(Isa isa);
// The bf16-pair kernels (kernel_bf16_avx512.cpp): A and B as pairs of bf16 per 32-bit slot, K
// counted in pairs; run them only where cpu_features().avx512bf16. Null when not compiled in.
const KernelSet* avx512_bf16_kernels();
// Every tile shape of the bf16-pair kernels, avx512_bf16_kernels() first; empty when not compiled in.
std::vector<const KernelSet*> bf16_pair_shapes();
bool is_bf16_pairs(const KernelSet& ks);
// The pair shape that pads an M x N problem the least (as kernel_for_shape); call it only where
// avx512_bf16_kernels() is not null.
const KernelSet& bf16_pair_kernel_for_shape(int64_t m, int64_t n);
// Whether this CPU has those kernels and they beat the fp32 ones: vdpbf16ps does two products per
// lane, but where it issues at a fraction of the FMA rate (Intel cores with AMX: 0.56x of the fp32
// kernel's FLOP rate, hot in L1) bf16 inputs are better converted while packing. Timed once per
// process on data in L1 (thread CPU time, ~1 ms).
bool bf16_pairs_faster();
// The AMX-BF16 kernel (kernel_amx.cpp), 32 x 32, A through row pointers whose two 16-row halves
// are each equally spaced (a tile load per half: rows[0] and rows[16] with the strides rows[1] -
// rows[0] and rows[17] - rows[16]), B as bf16-pair panels, every segment a multiple of 16 pairs; null unless
// this CPU has AMX-BF16 and the OS granted the tile state.
const KernelSet* amx_bf16_kernels();
// The same kernel stepping 8 pairs per tile product (A tiles of 32 bytes a row, B tiles of 8
// rows), for 16 bf16 channels a tap read in place: every segment a multiple of 8 pairs.
const KernelSet* amx_bf16_kernels_step8();

}  // namespace dnngraph::cpu::gemm
