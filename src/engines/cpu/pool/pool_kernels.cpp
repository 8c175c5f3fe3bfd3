// The portable pooling kernels (plain loops the compiler vectorizes for the baseline ISA) and the
// dispatch by ISA.
#include "engines/cpu/pool/pool_kernels.hpp"

#include <cmath>

namespace dnngraph::cpu::pool {
namespace {

void max_row_portable(float* acc, const float* x, int64_t n) {
  for (int64_t i = 0; i < n; ++i) acc[i] = (x[i] > acc[i] || std::isnan(x[i])) ? x[i] : acc[i];
}
void add_row_portable(float* acc, const float* x, int64_t n) {
  for (int64_t i = 0; i < n; ++i) acc[i] += x[i];
}
void axpy_row_portable(float* acc, float w, const float* x, int64_t n) {
  for (int64_t i = 0; i < n; ++i) acc[i] += w * x[i];
}
void mul_row_portable(float* acc, const float* f, int64_t n) {
  for (int64_t i = 0; i < n; ++i) acc[i] *= f[i];
}

const PoolKernels kPortable{Isa::PORTABLE, max_row_portable, add_row_portable, axpy_row_portable, mul_row_portable};

}  // namespace

const PoolKernels& pool_kernels(Isa isa) {
  const PoolKernels* k = nullptr;
  if (isa == Isa::AVX512) k = avx512_pool_kernels();
  if (isa == Isa::AVX2) k = avx2_pool_kernels();
  return k ? *k : kPortable;
}

}  // namespace dnngraph::cpu::pool
