// The AVX2 dot-product tile, 4 pixels x 3 output channels: 12 accumulators, 3 weight vectors and
// one input vector fill the 16 ymm registers; 7 loads per 12 FMAs.
#include "engines/cpu/conv/conv_dot_kernels.hpp"
#include "engines/cpu/simd/vec_avx2.hpp"

DNNGRAPH_TARGET_BEGIN(DNNGRAPH_TARGET_AVX2)
namespace dnngraph::cpu::conv_dot {
namespace {
inline float hsum(__m256 v) {
  const __m128 s = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
  const __m128 h = _mm_add_ps(s, _mm_movehl_ps(s, s));
  return _mm_cvtss_f32(_mm_add_ss(h, _mm_movehdup_ps(h)));
}
template <int N>
inline void lane_sums(const __m256* acc, int n, float* out) {
  for (int i = 0; i < n; ++i) out[i] = hsum(acc[i]);
}
}  // namespace
}  // namespace dnngraph::cpu::conv_dot
#include "engines/cpu/conv/conv_dot_kernel_body.inl"
DNNGRAPH_TARGET_END

namespace dnngraph::cpu::conv_dot {
namespace {
#if DNNGRAPH_SIMD_X86
// With 256-bit loads the tile is not load-bound (hot, it runs as fast as the packed kernel).
constexpr DotKernelSet kAvx2{Isa::AVX2, 4, 3, 8, dot_tile<simd::VecAvx2, 4, 3>, {0.985, 90.0, 13.0}};
#endif
}  // namespace
const DotKernelSet* avx2_dot_kernels() { return DNNGRAPH_X86_TABLE(kAvx2); }
}  // namespace dnngraph::cpu::conv_dot
