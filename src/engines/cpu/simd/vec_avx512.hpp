// The AVX-512 vector type the CPU kernel families instantiate: 16 fp32 lanes (8 doubles per
// DReg), compiled for AVX-512 F (+ the AVX2 level); use it only inside a DNNGRAPH_TARGET_AVX512
// region.
#pragma once
#include <cstdint>

#include "engines/cpu/simd/target.hpp"

#if DNNGRAPH_SIMD_X86
#include <immintrin.h>

// GCC 12's AVX-512 headers start conversions and reductions from _mm512_undefined_*(), which
// -Wuninitialized reports inside the headers; every lane is overwritten. (Only the files with
// AVX-512 code include this header.)
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic ignored "-Wuninitialized"
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#endif

DNNGRAPH_TARGET_BEGIN(DNNGRAPH_TARGET_AVX512)

namespace dnngraph::cpu::simd {

struct VecAvx512 {
  using Reg = __m512;
  using DReg = __m512d;
  static constexpr Isa kIsa = Isa::AVX512;
  static constexpr int kWidth = 16;

  // ---- fp32
  static Reg zero() { return _mm512_setzero_ps(); }
  static Reg load(const float* p) { return _mm512_loadu_ps(p); }
  static void store(float* p, Reg r) { _mm512_storeu_ps(p, r); }
  static Reg set1(float v) { return _mm512_set1_ps(v); }
  static Reg bcast(const float* p) { return _mm512_set1_ps(*p); }
  static Reg add(Reg a, Reg b) { return _mm512_add_ps(a, b); }
  static Reg sub(Reg a, Reg b) { return _mm512_sub_ps(a, b); }
  static Reg mul(Reg a, Reg b) { return _mm512_mul_ps(a, b); }
  static Reg fma(Reg a, Reg b, Reg c) { return _mm512_fmadd_ps(a, b, c); }  // a * b + c
  // v <= lo ? lo : v, then v > hi ? hi : v (ordered compares: NaN stays NaN, -0 becomes lo = +0).
  static Reg relu_clip(Reg v, Reg lo, Reg hi) {
    v = _mm512_mask_mov_ps(v, _mm512_cmp_ps_mask(v, lo, _CMP_LE_OQ), lo);
    return _mm512_mask_mov_ps(v, _mm512_cmp_ps_mask(v, hi, _CMP_GT_OQ), hi);
  }
  // x where x > acc or x is NaN, else acc: a max that propagates NaN.
  static Reg max_nan(Reg acc, Reg x) {
    const __mmask16 take = _mm512_cmp_ps_mask(x, acc, _CMP_GT_OQ) | _mm512_cmp_ps_mask(x, x, _CMP_UNORD_Q);
    return _mm512_mask_blend_ps(take, acc, x);
  }
  // The even and the odd lanes of the 32 values a, b.
  static void split(Reg a, Reg b, Reg& even, Reg& odd) {
    const __m512i ei = _mm512_set_epi32(30, 28, 26, 24, 22, 20, 18, 16, 14, 12, 10, 8, 6, 4, 2, 0);
    const __m512i oi = _mm512_set_epi32(31, 29, 27, 25, 23, 21, 19, 17, 15, 13, 11, 9, 7, 5, 3, 1);
    even = _mm512_permutex2var_ps(a, ei, b);
    odd = _mm512_permutex2var_ps(a, oi, b);
  }

  // ---- double
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

  // ---- kWidth bf16 / fp16 values to and from fp32 (nearest even; NaN stays NaN)
  static Reg load_bf16(const uint16_t* p) {
    const __m512i w = _mm512_cvtepu16_epi32(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(p)));
    return _mm512_castsi512_ps(_mm512_slli_epi32(w, 16));
  }
  static void store_bf16(uint16_t* p, Reg v) {
    const __m512i b = _mm512_castps_si512(v);
    const __m512i lsb = _mm512_and_si512(_mm512_srli_epi32(b, 16), _mm512_set1_epi32(1));
    const __m512i rounded = _mm512_srli_epi32(_mm512_add_epi32(_mm512_add_epi32(b, _mm512_set1_epi32(0x7fff)), lsb), 16);
    const __m512i quiet = _mm512_or_si512(_mm512_srli_epi32(b, 16), _mm512_set1_epi32(0x40));
    const __mmask16 is_nan =
        _mm512_cmpgt_epi32_mask(_mm512_and_si512(b, _mm512_set1_epi32(0x7fffffff)), _mm512_set1_epi32(0x7f800000));
    const __m512i r = _mm512_mask_blend_epi32(is_nan, rounded, quiet);
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(p), _mm512_cvtepi32_epi16(r));
  }
  static Reg load_fp16(const uint16_t* p) {
    return _mm512_cvtph_ps(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(p)));
  }
  static void store_fp16(uint16_t* p, Reg v) {
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(p), _mm512_cvtps_ph(v, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC));
  }
};

}  // namespace dnngraph::cpu::simd

DNNGRAPH_TARGET_END

#endif
