// AVX2 + F16C and AVX-512 conversion runs. Each function carries its own target attribute, so the
// library still builds for baseline x86-64 and these run only after the run-time check.
#include "engines/cpu/pointwise/convert_kernels.hpp"

#include <cstring>

#include "engines/cpu/epilogue/convert.hpp"

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#include <immintrin.h>

// GCC 12's AVX-512 headers start some conversions from _mm512_undefined_*(), which
// -Wuninitialized reports inside the headers; every lane is overwritten.
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic ignored "-Wuninitialized"
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#endif

#define DG_CVT_AVX2 __attribute__((target("avx2,fma,f16c")))
#define DG_CVT_AVX512 __attribute__((target("avx512f,avx2,fma,f16c")))

namespace dnngraph::cpu {
namespace {

// fp32 bits -> bf16 bits in the low half of each lane: nearest even, NaN quieted.
DG_CVT_AVX2 __m256i bf16_bits_avx2(__m256 v) {
  const __m256i b = _mm256_castps_si256(v);
  const __m256i lsb = _mm256_and_si256(_mm256_srli_epi32(b, 16), _mm256_set1_epi32(1));
  const __m256i rounded = _mm256_srli_epi32(_mm256_add_epi32(_mm256_add_epi32(b, _mm256_set1_epi32(0x7fff)), lsb), 16);
  const __m256i quiet = _mm256_or_si256(_mm256_srli_epi32(b, 16), _mm256_set1_epi32(0x40));
  const __m256i is_nan = _mm256_cmpgt_epi32(_mm256_and_si256(b, _mm256_set1_epi32(0x7fffffff)), _mm256_set1_epi32(0x7f800000));
  return _mm256_blendv_epi8(rounded, quiet, is_nan);
}

DG_CVT_AVX2 void to_fp32_avx2(const void* src, DataType t, int64_t n, float* dst) {
  const uint16_t* s = static_cast<const uint16_t*>(src);
  int64_t i = 0;
  if (t == DataType::FLOAT) {
    std::memcpy(dst, src, static_cast<size_t>(n) * sizeof(float));
    return;
  }
  if (t == DataType::BFLOAT16) {
    for (; i + 8 <= n; i += 8) {
      const __m256i w = _mm256_cvtepu16_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i*>(s + i)));
      _mm256_storeu_ps(dst + i, _mm256_castsi256_ps(_mm256_slli_epi32(w, 16)));
    }
    for (; i < n; ++i) dst[i] = bf16_to_fp32(s[i]);
    return;
  }
  for (; i + 8 <= n; i += 8) _mm256_storeu_ps(dst + i, _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(s + i))));
  for (; i < n; ++i) dst[i] = fp16_to_fp32(s[i]);
}

DG_CVT_AVX2 void from_fp32_avx2(const float* src, int64_t n, DataType t, void* dst) {
  uint16_t* d = static_cast<uint16_t*>(dst);
  int64_t i = 0;
  if (t == DataType::FLOAT) {
    std::memcpy(dst, src, static_cast<size_t>(n) * sizeof(float));
    return;
  }
  if (t == DataType::BFLOAT16) {
    for (; i + 8 <= n; i += 8) {
      const __m256i r = bf16_bits_avx2(_mm256_loadu_ps(src + i));
      const __m256i packed = _mm256_permute4x64_epi64(_mm256_packus_epi32(r, r), 0x08);
      _mm_storeu_si128(reinterpret_cast<__m128i*>(d + i), _mm256_castsi256_si128(packed));
    }
    for (; i < n; ++i) d[i] = fp32_to_bf16(src[i]);
    return;
  }
  for (; i + 8 <= n; i += 8)
    _mm_storeu_si128(reinterpret_cast<__m128i*>(d + i),
                     _mm256_cvtps_ph(_mm256_loadu_ps(src + i), _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC));
  for (; i < n; ++i) d[i] = fp32_to_fp16(src[i]);
}

DG_CVT_AVX512 void to_fp32_avx512(const void* src, DataType t, int64_t n, float* dst) {
  const uint16_t* s = static_cast<const uint16_t*>(src);
  int64_t i = 0;
  if (t == DataType::FLOAT) {
    std::memcpy(dst, src, static_cast<size_t>(n) * sizeof(float));
    return;
  }
  if (t == DataType::BFLOAT16) {
    for (; i + 16 <= n; i += 16) {
      const __m512i w = _mm512_cvtepu16_epi32(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(s + i)));
      _mm512_storeu_ps(dst + i, _mm512_castsi512_ps(_mm512_slli_epi32(w, 16)));
    }
    for (; i < n; ++i) dst[i] = bf16_to_fp32(s[i]);
    return;
  }
  for (; i + 16 <= n; i += 16) _mm512_storeu_ps(dst + i, _mm512_cvtph_ps(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(s + i))));
  for (; i < n; ++i) dst[i] = fp16_to_fp32(s[i]);
}

DG_CVT_AVX512 void from_fp32_avx512(const float* src, int64_t n, DataType t, void* dst) {
  uint16_t* d = static_cast<uint16_t*>(dst);
  int64_t i = 0;
  if (t == DataType::FLOAT) {
    std::memcpy(dst, src, static_cast<size_t>(n) * sizeof(float));
    return;
  }
  if (t == DataType::BFLOAT16) {
    for (; i + 16 <= n; i += 16) {
      const __m512i b = _mm512_castps_si512(_mm512_loadu_ps(src + i));
      const __m512i lsb = _mm512_and_si512(_mm512_srli_epi32(b, 16), _mm512_set1_epi32(1));
      const __m512i rounded = _mm512_srli_epi32(_mm512_add_epi32(_mm512_add_epi32(b, _mm512_set1_epi32(0x7fff)), lsb), 16);
      const __m512i quiet = _mm512_or_si512(_mm512_srli_epi32(b, 16), _mm512_set1_epi32(0x40));
      const __mmask16 is_nan =
          _mm512_cmpgt_epi32_mask(_mm512_and_si512(b, _mm512_set1_epi32(0x7fffffff)), _mm512_set1_epi32(0x7f800000));
      const __m512i r = _mm512_mask_blend_epi32(is_nan, rounded, quiet);
      _mm256_storeu_si256(reinterpret_cast<__m256i*>(d + i), _mm512_cvtepi32_epi16(r));
    }
    for (; i < n; ++i) d[i] = fp32_to_bf16(src[i]);
    return;
  }
  for (; i + 16 <= n; i += 16)
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(d + i),
                        _mm512_cvtps_ph(_mm512_loadu_ps(src + i), _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC));
  for (; i < n; ++i) d[i] = fp32_to_fp16(src[i]);
}

}  // namespace

const ConvertKernels* avx2_convert_kernels() {
  static const ConvertKernels kSet{Isa::AVX2, to_fp32_avx2, from_fp32_avx2};
  return &kSet;
}
const ConvertKernels* avx512_convert_kernels() {
  static const ConvertKernels kSet{Isa::AVX512, to_fp32_avx512, from_fp32_avx512};
  return &kSet;
}

}  // namespace dnngraph::cpu

#else
namespace dnngraph::cpu {
const ConvertKernels* avx2_convert_kernels() { return nullptr; }
const ConvertKernels* avx512_convert_kernels() { return nullptr; }
}  // namespace dnngraph::cpu
#endif
