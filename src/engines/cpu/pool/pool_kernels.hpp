// The row loops of pooling and resizing, per ISA, over contiguous fp32 rows: a window element (or
// an interpolation corner) folded into an accumulator row.
#pragma once
#include <cstdint>

#include "engines/cpu/cpu_features.hpp"

namespace dnngraph::cpu::pool {

struct PoolKernels {
  Isa isa;
  // acc[i] = x[i] when x[i] > acc[i] or x[i] is NaN (NaN propagates, as in ref).
  void (*max_row)(float* acc, const float* x, int64_t n);
  // acc[i] += x[i]
  void (*add_row)(float* acc, const float* x, int64_t n);
  // acc[i] += w * x[i]
  void (*axpy_row)(float* acc, float w, const float* x, int64_t n);
  // acc[i] *= f[i]
  void (*mul_row)(float* acc, const float* f, int64_t n);
};

// The kernels of one ISA level; the caller checks cpu_features().supports(isa) first.
const PoolKernels& pool_kernels(Isa isa);

// Per-ISA definitions (pool_kernels_<isa>.cpp); null where not compiled in.
const PoolKernels* avx2_pool_kernels();
const PoolKernels* avx512_pool_kernels();

}  // namespace dnngraph::cpu::pool
