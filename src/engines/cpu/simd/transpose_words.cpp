#include "engines/cpu/simd/transpose_words.hpp"

#include "engines/cpu/cpu_features.hpp"
#include "engines/cpu/simd/target.hpp"

#if DNNGRAPH_SIMD_X86
#include <immintrin.h>
#endif

namespace dnngraph::cpu::simd {

bool words_transpose_available() {
#if DNNGRAPH_SIMD_X86
  static const bool kAvx2 = cpu_features().supports(Isa::AVX2);
  return kAvx2;
#else
  return false;
#endif
}

#if DNNGRAPH_SIMD_X86
DNNGRAPH_TARGET_BEGIN(DNNGRAPH_TARGET_AVX2)
void transpose_8x8_words(const uint32_t* s, int64_t sld, uint32_t* d, int64_t dld) {
  __m256 r[8];
  for (int j = 0; j < 8; ++j) r[j] = _mm256_loadu_ps(reinterpret_cast<const float*>(s + j * sld));
  __m256 t[8], u[8];
  for (int q = 0; q < 4; ++q) {
    t[2 * q] = _mm256_unpacklo_ps(r[2 * q], r[2 * q + 1]);      // words 0, 1, 4, 5 of rows 2q, 2q + 1
    t[2 * q + 1] = _mm256_unpackhi_ps(r[2 * q], r[2 * q + 1]);  // words 2, 3, 6, 7
  }
  for (int h = 0; h < 2; ++h) {  // rows 0-3, then 4-7: words (0, 4), (1, 5), (2, 6), (3, 7) of four rows
    const __m256 *lo = t + 4 * h, *hi = t + 4 * h + 2;
    u[4 * h + 0] = _mm256_shuffle_ps(lo[0], hi[0], _MM_SHUFFLE(1, 0, 1, 0));
    u[4 * h + 1] = _mm256_shuffle_ps(lo[0], hi[0], _MM_SHUFFLE(3, 2, 3, 2));
    u[4 * h + 2] = _mm256_shuffle_ps(lo[1], hi[1], _MM_SHUFFLE(1, 0, 1, 0));
    u[4 * h + 3] = _mm256_shuffle_ps(lo[1], hi[1], _MM_SHUFFLE(3, 2, 3, 2));
  }
  for (int i = 0; i < 4; ++i) {
    _mm256_storeu_ps(reinterpret_cast<float*>(d + i * dld), _mm256_permute2f128_ps(u[i], u[i + 4], 0x20));
    _mm256_storeu_ps(reinterpret_cast<float*>(d + (i + 4) * dld), _mm256_permute2f128_ps(u[i], u[i + 4], 0x31));
  }
}
DNNGRAPH_TARGET_END
#else
void transpose_8x8_words(const uint32_t* s, int64_t sld, uint32_t* d, int64_t dld) {
  for (int i = 0; i < 8; ++i)
    for (int j = 0; j < 8; ++j) d[i * dld + j] = s[j * sld + i];
}
#endif

}  // namespace dnngraph::cpu::simd
