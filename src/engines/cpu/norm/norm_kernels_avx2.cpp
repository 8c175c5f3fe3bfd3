// The norm kernels for AVX2 + FMA, compiled in a target region and dispatched at run time, so the
// library itself still runs on any x86-64.
#include "engines/cpu/norm/norm_kernels.hpp"

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#include <immintrin.h>

#if defined(__clang__)
#pragma clang attribute push(__attribute__((target("avx2,fma"))), apply_to = function)
#else
#pragma GCC push_options
#pragma GCC target("avx2,fma")
#endif

namespace dnngraph::cpu::norm {
namespace {

struct V {
  using Reg = __m256;
  using DReg = __m256d;
  static constexpr int kWidth = 8;
  static Reg load(const float* p) { return _mm256_loadu_ps(p); }
  static void store(float* p, Reg r) { _mm256_storeu_ps(p, r); }
  static Reg set1(float v) { return _mm256_set1_ps(v); }
  static Reg sub(Reg a, Reg b) { return _mm256_sub_ps(a, b); }
  static Reg mul(Reg a, Reg b) { return _mm256_mul_ps(a, b); }
  static Reg fma(Reg a, Reg b, Reg c) { return _mm256_fmadd_ps(a, b, c); }
  static void widen(Reg v, DReg& lo, DReg& hi) {
    lo = _mm256_cvtps_pd(_mm256_castps256_ps128(v));
    hi = _mm256_cvtps_pd(_mm256_extractf128_ps(v, 1));
  }
  static DReg dzero() { return _mm256_setzero_pd(); }
  static DReg dset1(double v) { return _mm256_set1_pd(v); }
  static DReg dadd(DReg a, DReg b) { return _mm256_add_pd(a, b); }
  static DReg dsub(DReg a, DReg b) { return _mm256_sub_pd(a, b); }
  static DReg dfma(DReg a, DReg b, DReg c) { return _mm256_fmadd_pd(a, b, c); }
  static double dsum(DReg v) {
    const __m128d s = _mm_add_pd(_mm256_castpd256_pd128(v), _mm256_extractf128_pd(v, 1));
    return _mm_cvtsd_f64(_mm_add_sd(s, _mm_unpackhi_pd(s, s)));
  }
};

#include "engines/cpu/norm/norm_kernels_body.inl"

}  // namespace
}  // namespace dnngraph::cpu::norm

#if defined(__clang__)
#pragma clang attribute pop
#else
#pragma GCC pop_options
#endif

// Outside the target region: this runs on any CPU.
namespace dnngraph::cpu::norm {
const NormKernels* avx2_norm_kernels() {
  static const NormKernels kSet{Isa::AVX2, moments_simd, affine_simd, channel_affine_simd};
  return &kSet;
}
}  // namespace dnngraph::cpu::norm

#else
namespace dnngraph::cpu::norm {
const NormKernels* avx2_norm_kernels() { return nullptr; }
}  // namespace dnngraph::cpu::norm
#endif
