// The AVX2 vector type the CPU kernel families instantiate: 8 fp32 lanes (4 doubles per DReg),
// compiled for AVX2 + FMA + F16C; use it only inside a DNNGRAPH_TARGET_AVX2 region.
#pragma once
#include <cstdint>

#include "engines/cpu/simd/target.hpp"

#if DNNGRAPH_SIMD_X86
#include <immintrin.h>

DNNGRAPH_TARGET_BEGIN(DNNGRAPH_TARGET_AVX2)

namespace dnngraph::cpu::simd {

struct VecAvx2 {
  using Reg = __m256;
  using DReg = __m256d;
  static constexpr Isa kIsa = Isa::AVX2;
  static constexpr int kWidth = 8;

  // ---- fp32
  static Reg zero() { return _mm256_setzero_ps(); }
  static Reg load(const float* p) { return _mm256_loadu_ps(p); }
  static void store(float* p, Reg r) { _mm256_storeu_ps(p, r); }
  static Reg set1(float v) { return _mm256_set1_ps(v); }
  static Reg bcast(const float* p) { return _mm256_broadcast_ss(p); }
  static Reg add(Reg a, Reg b) { return _mm256_add_ps(a, b); }
  static Reg sub(Reg a, Reg b) { return _mm256_sub_ps(a, b); }
  static Reg mul(Reg a, Reg b) { return _mm256_mul_ps(a, b); }
  static Reg fma(Reg a, Reg b, Reg c) { return _mm256_fmadd_ps(a, b, c); }  // a * b + c
  // v <= lo ? lo : v, then v > hi ? hi : v (ordered compares: NaN stays NaN, -0 becomes lo = +0).
  static Reg relu_clip(Reg v, Reg lo, Reg hi) {
    v = _mm256_blendv_ps(v, lo, _mm256_cmp_ps(v, lo, _CMP_LE_OQ));
    return _mm256_blendv_ps(v, hi, _mm256_cmp_ps(v, hi, _CMP_GT_OQ));
  }
  // x where x > acc or x is NaN, else acc: a max that propagates NaN.
  static Reg max_nan(Reg acc, Reg x) {
    const Reg take = _mm256_or_ps(_mm256_cmp_ps(x, acc, _CMP_GT_OQ), _mm256_cmp_ps(x, x, _CMP_UNORD_Q));
    return _mm256_blendv_ps(acc, x, take);
  }
  // The even and the odd lanes of the 16 values a, b.
  static void split(Reg a, Reg b, Reg& even, Reg& odd) {
    // Within 128-bit lanes: [a0 a2 b0 b2 | a4 a6 b4 b6]; then the 64-bit quarters in order.
    even = _mm256_castpd_ps(_mm256_permute4x64_pd(_mm256_castps_pd(_mm256_shuffle_ps(a, b, 0x88)), 0xd8));
    odd = _mm256_castpd_ps(_mm256_permute4x64_pd(_mm256_castps_pd(_mm256_shuffle_ps(a, b, 0xdd)), 0xd8));
  }

  // ---- double
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

  // ---- kWidth bf16 / fp16 values to and from fp32 (nearest even; NaN stays NaN)
  static Reg load_bf16(const uint16_t* p) {
    const __m256i w = _mm256_cvtepu16_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p)));
    return _mm256_castsi256_ps(_mm256_slli_epi32(w, 16));
  }
  static void store_bf16(uint16_t* p, Reg v) {
    const __m256i b = _mm256_castps_si256(v);
    const __m256i lsb = _mm256_and_si256(_mm256_srli_epi32(b, 16), _mm256_set1_epi32(1));
    const __m256i rounded = _mm256_srli_epi32(_mm256_add_epi32(_mm256_add_epi32(b, _mm256_set1_epi32(0x7fff)), lsb), 16);
    const __m256i quiet = _mm256_or_si256(_mm256_srli_epi32(b, 16), _mm256_set1_epi32(0x40));
    const __m256i is_nan =
        _mm256_cmpgt_epi32(_mm256_and_si256(b, _mm256_set1_epi32(0x7fffffff)), _mm256_set1_epi32(0x7f800000));
    const __m256i r = _mm256_blendv_epi8(rounded, quiet, is_nan);
    const __m256i packed = _mm256_permute4x64_epi64(_mm256_packus_epi32(r, r), 0x08);
    _mm_storeu_si128(reinterpret_cast<__m128i*>(p), _mm256_castsi256_si128(packed));
  }
  static Reg load_fp16(const uint16_t* p) { return _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p))); }
  static void store_fp16(uint16_t* p, Reg v) {
    _mm_storeu_si128(reinterpret_cast<__m128i*>(p), _mm256_cvtps_ph(v, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC));
  }
};

}  // namespace dnngraph::cpu::simd

DNNGRAPH_TARGET_END

#endif
