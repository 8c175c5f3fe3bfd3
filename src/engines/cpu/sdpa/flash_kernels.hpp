// The fp32 tile kernels of cpu_sdpa_flash: a register-blocked GEMM tile and the online-softmax
// step. Two builds of each: AVX2+FMA (chosen at run time when the CPU has them) and portable loops.
// The benchmark's unfused baseline uses the same kernels, so the comparison measures fusion alone.
#pragma once
#include <vector>
#include <cstdint>

#include "core/philox.hpp"

namespace dnngraph::cpu::sdpa {

// GEMM tiles are blocks of kMr rows by kNr columns: callers pad m and n to these multiples.
inline constexpr int64_t kMr = 6;
inline constexpr int64_t kNr = 16;

// What one block of kMr rows of a GEMM call computes: output columns [n_begin, n_end) (multiples
// of kNr) over the reduction range [k_begin, k_end). The rest of the block's C is left untouched.
// This is how masked parts of a tile (above a causal diagonal, outside a window) are skipped.
struct RowBlock {
  int64_t n_begin, n_end, k_begin, k_end;
};

struct Kernels {
  const char* isa;  // "avx512" (its GEMM tiles; the rest AVX2), "avx2" or "generic"
  // C[m x n] = A[m x k] * B[k x n] (or C += when accumulate); all row-major with leading dims.
  // m % kMr == 0 and n % kNr == 0. `blocks` (m / kMr entries) narrows each row block; null: all.
  void (*gemm)(int64_t m, int64_t n, int64_t k, const float* a, int64_t lda, const float* b, int64_t ldb, float* c,
               int64_t ldc, bool accumulate, const RowBlock* blocks);
  // One online-softmax step over a score tile s[rows x n_pad] in log2 units. Row r sees columns
  // [lo[r], hi[r]); the others become 0. Updates the running max m[r] and sum l[r], rescales the
  // row's accumulator acc[r][0 .. dv_pad) when the max grows, and leaves P = exp2(s - m) in s.
  void (*softmax)(float* s, int64_t lds, int64_t rows, int64_t n_pad, const int64_t* lo, const int64_t* hi,
                  float* m, float* l, float* acc, int64_t ldacc, int64_t dv_pad);
  // The backward's element step over score tiles s and dp [rows x n_pad] (n_pad % 16 == 0): row r
  // sees columns [lo[r], hi[r]); P = exp2(s * scale_log2 - lse_log2[r]) there and 0 elsewhere
  // replaces s, and dS = P * (dp - delta[r]) replaces dp.
  void (*probs_and_grads)(float* s, float* dp, int64_t ld, int64_t rows, int64_t n_pad, const int64_t* lo,
                          const int64_t* hi, const float* lse_log2, const float* delta, float scale_log2);
  // dst[n] = kept if the dropout mask keeps element first + n, else 0, for n < count: the bits of
  // philox::DropoutMask::row (the AVX2 build computes eight Philox blocks at once).
  void (*dropout_row)(const philox::DropoutMask& mask, uint64_t first, int64_t count, float* dst, float kept);
};

bool cpu_has_avx2_fma();
// The vector kernels when asked for and the CPU has them (AVX-512 GEMM tiles where it has AVX-512
// F, else AVX2), else the portable ones.
const Kernels& kernels(bool avx2);
// Every build this CPU runs, the portable one first (for tests of each against the others).
std::vector<const Kernels*> kernel_builds();

}  // namespace dnngraph::cpu::sdpa
