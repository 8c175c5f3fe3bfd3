// The chain's loops in AVX-512: 16 floats per vector and masked tails, so a GEMM task's rows of
// 32 or 48 channels run as two or three whole vectors instead of AVX2 vectors that decode every
// step per 8 floats (that decoding made the chain 18% of a MobileNetV2 run). The block form goes
// step by step over a finished block of C (in L2): each step decoded once per block.
#include "engines/cpu/epilogue/epilogue_chain_avx512.hpp"

#include "engines/cpu/simd/target.hpp"

#if DNNGRAPH_SIMD_X86
#include <immintrin.h>

DNNGRAPH_TARGET_BEGIN(DNNGRAPH_TARGET_AVX512)
namespace dnngraph::cpu {
namespace {

// v op x for one step, as epilogue_chain.cpp's step_scalar: ordered compares keep NaN through
// ReLU's clips, and -0 at a lower bound of 0 becomes +0.
template <ChainStep::Kind K>
__attribute__((always_inline)) inline __m512 apply(const ChainStep& s, __m512 v, __m512 x) {
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

__attribute__((always_inline)) inline __mmask16 lanes(int64_t left) {
  return left >= 16 ? static_cast<__mmask16>(0xFFFF) : static_cast<__mmask16>((1u << left) - 1);
}

// One step over rows x cols in place: the operand per column (`column`), shaped as the block
// (`same`, row stride ld), or a scalar. Whole vectors use plain loads and only the tail a masked
// one (a masked load does not take data forwarded from the stores just before it).
template <ChainStep::Kind K>
void tile_step(const ChainStep& s, int64_t rows, int64_t cols, float* data, int64_t ld, const float* column,
               const float* same, float scalar) {
  const __m512 sc = _mm512_set1_ps(scalar);
  const int64_t whole = cols / 16 * 16;
  const __mmask16 m = lanes(cols - whole);
  for (int64_t i = 0; i < rows; ++i) {
    float* row = data + i * ld;
    const float* src = column ? column : same ? same + i * ld : nullptr;
    for (int64_t k = 0; k < whole; k += 16) {
      const __m512 x = src ? _mm512_loadu_ps(src + k) : sc;
      _mm512_storeu_ps(row + k, apply<K>(s, _mm512_loadu_ps(row + k), x));
    }
    if (whole < cols) {
      const __m512 x = src ? _mm512_maskz_loadu_ps(m, src + whole) : sc;
      _mm512_mask_storeu_ps(row + whole, m, apply<K>(s, _mm512_maskz_loadu_ps(m, row + whole), x));
    }
  }
}

// Loads 16 floats, or the lanes of `m` (a partial vector; plain loads forward from recent stores).
__attribute__((always_inline)) inline __m512 load(const float* p, __mmask16 m) {
  return m == 0xFFFF ? _mm512_loadu_ps(p) : _mm512_maskz_loadu_ps(m, p);
}

// kV vectors (the last one masked by `tail`) from anchor through every step into out.
template <int kV>
__attribute__((always_inline)) inline void vectors(const Chain& c, const float* anchor, const float* const* ptrs,
                                                   const float* scalars, float* out, int64_t i, __mmask16 tail) {
  __m512 v[kV];
  for (int j = 0; j < kV; ++j) v[j] = load(anchor + i + 16 * j, j + 1 == kV ? tail : 0xFFFF);
  for (const ChainStep& s : c.steps) {
    const bool has = s.operand >= 0;
    const float* p = has && ptrs[s.operand] ? ptrs[s.operand] + i : nullptr;
    __m512 x[kV];
    for (int j = 0; j < kV; ++j)
      x[j] = p ? load(p + 16 * j, j + 1 == kV ? tail : 0xFFFF) : _mm512_set1_ps(has ? scalars[s.operand] : 0.0f);
    switch (s.kind) {
      case ChainStep::ADD: for (int j = 0; j < kV; ++j) v[j] = apply<ChainStep::ADD>(s, v[j], x[j]); break;
      case ChainStep::MUL: for (int j = 0; j < kV; ++j) v[j] = apply<ChainStep::MUL>(s, v[j], x[j]); break;
      case ChainStep::SUB: for (int j = 0; j < kV; ++j) v[j] = apply<ChainStep::SUB>(s, v[j], x[j]); break;
      case ChainStep::SUB_FROM: for (int j = 0; j < kV; ++j) v[j] = apply<ChainStep::SUB_FROM>(s, v[j], x[j]); break;
      case ChainStep::RELU: for (int j = 0; j < kV; ++j) v[j] = apply<ChainStep::RELU>(s, v[j], x[j]); break;
    }
  }
  for (int j = 0; j < kV; ++j) _mm512_mask_storeu_ps(out + i + 16 * j, j + 1 == kV ? tail : 0xFFFF, v[j]);
}

}  // namespace

void run_chain_avx512(const Chain& c, int64_t n, const float* anchor, const float* const* ptrs, const float* scalars,
                      float* out) {
  int64_t i = 0;
  for (; i + 64 <= n; i += 64) vectors<4>(c, anchor, ptrs, scalars, out, i, 0xFFFF);
  for (; i < n; i += 16) vectors<1>(c, anchor, ptrs, scalars, out, i, lanes(n - i));
}

void run_chain_tile_avx512(const Chain& c, int64_t rows, int64_t cols, float* data, int64_t ld,
                           const float* const* column, const float* const* same, const float* scalars) {
  for (const ChainStep& s : c.steps) {
    const bool has = s.operand >= 0;
    const float* col = has ? column[s.operand] : nullptr;
    const float* sm = has ? same[s.operand] : nullptr;
    const float sc = has ? scalars[s.operand] : 0.0f;
    switch (s.kind) {
      case ChainStep::ADD: tile_step<ChainStep::ADD>(s, rows, cols, data, ld, col, sm, sc); break;
      case ChainStep::MUL: tile_step<ChainStep::MUL>(s, rows, cols, data, ld, col, sm, sc); break;
      case ChainStep::SUB: tile_step<ChainStep::SUB>(s, rows, cols, data, ld, col, sm, sc); break;
      case ChainStep::SUB_FROM: tile_step<ChainStep::SUB_FROM>(s, rows, cols, data, ld, col, sm, sc); break;
      case ChainStep::RELU: tile_step<ChainStep::RELU>(s, rows, cols, data, ld, col, sm, sc); break;
    }
  }
}

}  // namespace dnngraph::cpu
DNNGRAPH_TARGET_END
#endif
