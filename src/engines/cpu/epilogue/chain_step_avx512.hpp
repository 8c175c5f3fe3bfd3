// One epilogue chain step on 16 floats in an AVX-512 register, shared by the chain's loops
// (epilogue_chain_avx512.cpp) and the kernels that apply the chain to their accumulators before
// the store (the depthwise conv's 3-tap blocks), so every path rounds and clips alike: ordered
// compares keep NaN through ReLU's clips, and -0 at a lower bound of 0 becomes +0.
#pragma once
#include "engines/cpu/epilogue/epilogue_chain.hpp"
#include "engines/cpu/simd/target.hpp"

#if DNNGRAPH_SIMD_X86
#include <immintrin.h>

namespace dnngraph::cpu {

// v op x for step kind K (x unused by RELU).
template <ChainStep::Kind K>
__attribute__((target("avx512f"), always_inline)) inline __m512 chain_step_avx512(const ChainStep& s, __m512 v,
                                                                                  __m512 x) {
  if constexpr (K == ChainStep::ADD) return _mm512_add_ps(v, x);
  if constexpr (K == ChainStep::MUL) return _mm512_mul_ps(v, x);
  if constexpr (K == ChainStep::SUB) return _mm512_sub_ps(v, x);
  if constexpr (K == ChainStep::SUB_FROM) return _mm512_sub_ps(x, v);
  if constexpr (K == ChainStep::RELU) {
    const __m512 lo = _mm512_set1_ps(s.lo), hi = _mm512_set1_ps(s.hi);
    v = _mm512_mask_mov_ps(v, _mm512_cmp_ps_mask(v, lo, _CMP_LE_OQ), lo);
    return _mm512_mask_mov_ps(v, _mm512_cmp_ps_mask(v, hi, _CMP_GT_OQ), hi);
  }
  return v;
}

}  // namespace dnngraph::cpu
#endif
