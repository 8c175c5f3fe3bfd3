// The pooling kernels for AVX2 + FMA, compiled in a target region and dispatched at run time, so
// the library itself still runs on any x86-64.
#include "engines/cpu/pool/pool_kernels.hpp"

#include <cmath>

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#include <immintrin.h>

#if defined(__clang__)
#pragma clang attribute push(__attribute__((target("avx2,fma"))), apply_to = function)
#else
#pragma GCC push_options
#pragma GCC target("avx2,fma")
#endif

namespace dnngraph::cpu::pool {
namespace {

struct V {
  using Reg = __m256;
  static constexpr int kWidth = 8;
  static Reg load(const float* p) { return _mm256_loadu_ps(p); }
  static void store(float* p, Reg r) { _mm256_storeu_ps(p, r); }
  static Reg set1(float v) { return _mm256_set1_ps(v); }
  static Reg add(Reg a, Reg b) { return _mm256_add_ps(a, b); }
  static Reg mul(Reg a, Reg b) { return _mm256_mul_ps(a, b); }
  static Reg fma(Reg a, Reg b, Reg c) { return _mm256_fmadd_ps(a, b, c); }
  static Reg max_nan(Reg acc, Reg x) {
    const Reg take = _mm256_or_ps(_mm256_cmp_ps(x, acc, _CMP_GT_OQ), _mm256_cmp_ps(x, x, _CMP_UNORD_Q));
    return _mm256_blendv_ps(acc, x, take);
  }
  static void split(Reg a, Reg b, Reg& even, Reg& odd) {
    // Within 128-bit lanes: [a0 a2 b0 b2 | a4 a6 b4 b6]; then the 64-bit quarters in order.
    even = _mm256_castpd_ps(_mm256_permute4x64_pd(_mm256_castps_pd(_mm256_shuffle_ps(a, b, 0x88)), 0xd8));
    odd = _mm256_castpd_ps(_mm256_permute4x64_pd(_mm256_castps_pd(_mm256_shuffle_ps(a, b, 0xdd)), 0xd8));
  }
};

#include "engines/cpu/pool/pool_kernels_body.inl"

}  // namespace
}  // namespace dnngraph::cpu::pool

#if defined(__clang__)
#pragma clang attribute pop
#else
#pragma GCC pop_options
#endif

// Outside the target region: this runs on any CPU.
namespace dnngraph::cpu::pool {
const PoolKernels* avx2_pool_kernels() {
  static const PoolKernels kSet{Isa::AVX2, max_rows_simd, sum_rows_simd, mul_row_simd,
                                deinterleave2_simd};
  return &kSet;
}
}  // namespace dnngraph::cpu::pool

#else
namespace dnngraph::cpu::pool {
const PoolKernels* avx2_pool_kernels() { return nullptr; }
}  // namespace dnngraph::cpu::pool
#endif
