// The portable pooling kernels (plain loops the compiler vectorizes for the baseline ISA) and the
// dispatch by ISA.
#include "engines/cpu/pool/pool_kernels.hpp"

#include <cmath>

#include "engines/cpu/simd/target.hpp"

namespace dnngraph::cpu::pool {
namespace {

void max_rows_portable(float* acc, const float* const* rows, int count, int64_t n) {
  for (int r = 0; r < count; ++r)
    for (int64_t i = 0; i < n; ++i) acc[i] = (rows[r][i] > acc[i] || std::isnan(rows[r][i])) ? rows[r][i] : acc[i];
}
void sum_rows_portable(float* acc, const float* const* rows, const float* w, int count, int64_t n) {
  for (int r = 0; r < count; ++r) {
    const float wr = w ? w[r] : 1.0f;
    for (int64_t i = 0; i < n; ++i) acc[i] += wr * rows[r][i];
  }
}
void mul_row_portable(float* acc, const float* f, int64_t n) {
  for (int64_t i = 0; i < n; ++i) acc[i] *= f[i];
}

void deinterleave2_portable(const float* x, int64_t n, float* even, float* odd) {
  for (int64_t j = 0; j < n; ++j) {
    even[j] = x[2 * j];
    odd[j] = x[2 * j + 1];
  }
}

const PoolKernels kPortable{Isa::PORTABLE, max_rows_portable, sum_rows_portable, mul_row_portable,
                            deinterleave2_portable};

}  // namespace

const PoolKernels& pool_kernels(Isa isa) {
  return simd::table_for(isa, kPortable, avx2_pool_kernels(), avx512_pool_kernels());
}

}  // namespace dnngraph::cpu::pool
