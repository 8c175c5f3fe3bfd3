// The AVX-512 dot-product tile, 6 pixels x 4 output channels: 24 accumulators, 4 weight vectors
// and one input vector of the 32 zmm registers; 10 loads per 24 FMAs.
#include "engines/cpu/conv/conv_dot_kernels.hpp"
#include "engines/cpu/simd/vec_avx512.hpp"

DNNGRAPH_TARGET_BEGIN(DNNGRAPH_TARGET_AVX512)
namespace dnngraph::cpu::conv_dot {
namespace {
// Four registers' lane sums at once, as a transpose: 13 shuffles and adds instead of 4 x 8.
template <int N>
inline void lane_sums(const __m512* acc, int n, float* out) {
  if constexpr (N == 4) {
    if (n == 4) {
      const __m512 ab = _mm512_add_ps(_mm512_unpacklo_ps(acc[0], acc[1]), _mm512_unpackhi_ps(acc[0], acc[1]));
      const __m512 cd = _mm512_add_ps(_mm512_unpacklo_ps(acc[2], acc[3]), _mm512_unpackhi_ps(acc[2], acc[3]));
      // Each 128-bit lane: the partial sums of a, b, c, d.
      const __m512 abcd = _mm512_add_ps(_mm512_shuffle_ps(ab, cd, 0x44), _mm512_shuffle_ps(ab, cd, 0xEE));
      const __m256 h = _mm256_add_ps(_mm512_castps512_ps256(abcd),
                                     _mm256_castpd_ps(_mm512_extractf64x4_pd(_mm512_castps_pd(abcd), 1)));
      _mm_storeu_ps(out, _mm_add_ps(_mm256_castps256_ps128(h), _mm256_extractf128_ps(h, 1)));
      return;
    }
  }
  for (int i = 0; i < n; ++i) out[i] = _mm512_reduce_add_ps(acc[i]);
}
}  // namespace
}  // namespace dnngraph::cpu::conv_dot
#include "engines/cpu/conv/conv_dot_kernel_body.inl"
DNNGRAPH_TARGET_END

namespace dnngraph::cpu::conv_dot {
namespace {
#if DNNGRAPH_SIMD_X86
// On Zen 5 the tile is bound by its loads (hot in L1: 216 against the packed kernel's 240 GFLOP/s
// per core), so it wins only where packing costs more: few pixels per weight.
constexpr DotKernelSet kAvx512{Isa::AVX512, 6, 4, 16, dot_tile<simd::VecAvx512, 6, 4>, {1.11, 340.0, 26.0}};
#endif
}  // namespace
const DotKernelSet* avx512_dot_kernels() { return DNNGRAPH_X86_TABLE(kAvx512); }
}  // namespace dnngraph::cpu::conv_dot
