// The row loops of pooling and resizing, per ISA, over contiguous fp32 rows: window elements (or
// interpolation corners) folded into an accumulator row.
#pragma once
#include <cstdint>

#include "engines/cpu/cpu_features.hpp"

namespace dnngraph::cpu::pool {

// Window rows are folded several at a time, so the accumulator stays in registers.
struct PoolKernels {
  Isa isa;
  // acc[i] = max(acc[i], rows[0][i], ..., rows[count-1][i]); a NaN anywhere gives NaN (as ref).
  void (*max_rows)(float* acc, const float* const* rows, int count, int64_t n);
  // acc[i] += w[0] * rows[0][i] + ... + w[count-1] * rows[count-1][i]; w null: weights of 1.
  void (*sum_rows)(float* acc, const float* const* rows, const float* w, int count, int64_t n);
  // acc[i] *= f[i]
  void (*mul_row)(float* acc, const float* f, int64_t n);
  // even[j] = x[2j], odd[j] = x[2j + 1] for j < n: the phases of a stride-2 window row.
  void (*deinterleave2)(const float* x, int64_t n, float* even, float* odd);
};

// The kernels of one ISA level; the caller checks cpu_features().supports(isa) first.
const PoolKernels& pool_kernels(Isa isa);

// Per-ISA definitions (pool_kernels_<isa>.cpp); null where not compiled in.
const PoolKernels* avx2_pool_kernels();
const PoolKernels* avx512_pool_kernels();

}  // namespace dnngraph::cpu::pool
