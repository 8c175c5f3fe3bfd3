// The norm kernels for AVX-512 F, compiled in a target region and dispatched at run time, so the
// library itself still runs on any x86-64.
#include "engines/cpu/norm/norm_kernels.hpp"

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#include <immintrin.h>

// GCC 12's AVX-512 headers start conversions and reductions from _mm512_undefined_*(), which
// -Wuninitialized reports inside the headers; every lane is overwritten.
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic ignored "-Wuninitialized"
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#endif

#if defined(__clang__)
#pragma clang attribute push(__attribute__((target("avx512f,avx2,fma"))), apply_to = function)
#else
#pragma GCC push_options
#pragma GCC target("avx512f,avx2,fma")
#endif

namespace dnngraph::cpu::norm {
namespace {

struct V {
  using Reg = __m512;
  using DReg = __m512d;
  static constexpr int kWidth = 16;
  static Reg load(const float* p) { return _mm512_loadu_ps(p); }
  static void store(float* p, Reg r) { _mm512_storeu_ps(p, r); }
  static Reg set1(float v) { return _mm512_set1_ps(v); }
  static Reg sub(Reg a, Reg b) { return _mm512_sub_ps(a, b); }
  static Reg mul(Reg a, Reg b) { return _mm512_mul_ps(a, b); }
  static Reg fma(Reg a, Reg b, Reg c) { return _mm512_fmadd_ps(a, b, c); }
  static void widen(Reg v, DReg& lo, DReg& hi) {
    lo = _mm512_cvtps_pd(_mm512_castps512_ps256(v));
    hi = _mm512_cvtps_pd(_mm256_castpd_ps(_mm512_extractf64x4_pd(_mm512_castps_pd(v), 1)));
  }
  static DReg dzero() { return _mm512_setzero_pd(); }
  static DReg dset1(double v) { return _mm512_set1_pd(v); }
  static DReg dadd(DReg a, DReg b) { return _mm512_add_pd(a, b); }
  static DReg dsub(DReg a, DReg b) { return _mm512_sub_pd(a, b); }
  static DReg dfma(DReg a, DReg b, DReg c) { return _mm512_fmadd_pd(a, b, c); }
  static double dsum(DReg v) { return _mm512_reduce_add_pd(v); }
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
const NormKernels* avx512_norm_kernels() {
  static const NormKernels kSet{Isa::AVX512, moments_simd, affine_simd, channel_affine_simd};
  return &kSet;
}
}  // namespace dnngraph::cpu::norm

#else
namespace dnngraph::cpu::norm {
const NormKernels* avx512_norm_kernels() { return nullptr; }
}  // namespace dnngraph::cpu::norm
#endif
