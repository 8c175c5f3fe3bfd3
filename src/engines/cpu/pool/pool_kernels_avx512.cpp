// The pooling kernels for AVX-512 F, compiled in a target region and dispatched at run time, so
// the library itself still runs on any x86-64.
#include "engines/cpu/pool/pool_kernels.hpp"

#include <cmath>

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#include <immintrin.h>

#if defined(__clang__)
#pragma clang attribute push(__attribute__((target("avx512f,avx2,fma"))), apply_to = function)
#else
#pragma GCC push_options
#pragma GCC target("avx512f,avx2,fma")
#endif

namespace dnngraph::cpu::pool {
namespace {

struct V {
  using Reg = __m512;
  static constexpr int kWidth = 16;
  static Reg load(const float* p) { return _mm512_loadu_ps(p); }
  static void store(float* p, Reg r) { _mm512_storeu_ps(p, r); }
  static Reg set1(float v) { return _mm512_set1_ps(v); }
  static Reg add(Reg a, Reg b) { return _mm512_add_ps(a, b); }
  static Reg mul(Reg a, Reg b) { return _mm512_mul_ps(a, b); }
  static Reg fma(Reg a, Reg b, Reg c) { return _mm512_fmadd_ps(a, b, c); }
  static Reg max_nan(Reg acc, Reg x) {
    const __mmask16 take = _mm512_cmp_ps_mask(x, acc, _CMP_GT_OQ) | _mm512_cmp_ps_mask(x, x, _CMP_UNORD_Q);
    return _mm512_mask_blend_ps(take, acc, x);
  }
  static void split(Reg a, Reg b, Reg& even, Reg& odd) {
    const __m512i ei = _mm512_set_epi32(30, 28, 26, 24, 22, 20, 18, 16, 14, 12, 10, 8, 6, 4, 2, 0);
    const __m512i oi = _mm512_set_epi32(31, 29, 27, 25, 23, 21, 19, 17, 15, 13, 11, 9, 7, 5, 3, 1);
    even = _mm512_permutex2var_ps(a, ei, b);
    odd = _mm512_permutex2var_ps(a, oi, b);
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
const PoolKernels* avx512_pool_kernels() {
  static const PoolKernels kSet{Isa::AVX512, max_rows_simd, sum_rows_simd, mul_row_simd,
                                deinterleave2_simd};
  return &kSet;
}
}  // namespace dnngraph::cpu::pool

#else
namespace dnngraph::cpu::pool {
const PoolKernels* avx512_pool_kernels() { return nullptr; }
}  // namespace dnngraph::cpu::pool
#endif
