// AVX2+FMA and portable builds of the cpu_sdpa_flash tile kernels (see flash_kernels.hpp).
// The AVX2 functions carry target attributes, so the library itself still builds for baseline
// x86-64; kernels() picks them only after a run-time CPU check.
#include "engines/cpu/sdpa/flash_kernels.hpp"

#include <algorithm>
#include <cmath>
#include <limits>

#include "engines/cpu/cpu_features.hpp"

#if defined(__x86_64__) && defined(__GNUC__)
#include <immintrin.h>
#define DG_SDPA_HAVE_AVX2 1
#endif

namespace dnngraph::cpu::sdpa {
namespace {

constexpr float kNegInf = -std::numeric_limits<float>::infinity();

// ---- portable

void gemm_generic(int64_t m, int64_t n, int64_t k, const float* a, int64_t lda, const float* b, int64_t ldb,
                  float* c, int64_t ldc, bool accumulate, const RowBlock* blocks) {
  for (int64_t i = 0; i < m; ++i) {
    const RowBlock rb = blocks ? blocks[i / kMr] : RowBlock{0, n, 0, k};
    float* crow = c + i * ldc;
    if (!accumulate) std::fill(crow + rb.n_begin, crow + rb.n_end, 0.0f);
    for (int64_t p = rb.k_begin; p < rb.k_end; ++p) {
      const float av = a[i * lda + p];
      const float* brow = b + p * ldb;
      for (int64_t j = rb.n_begin; j < rb.n_end; ++j) crow[j] += av * brow[j];  // GCC vectorizes this loop
    }
  }
}

// The row-max update shared by both builds: returns the scale for the old accumulator, or a
// negative value when the row has nothing visible in this tile.
inline float update_max(float* m, float tile_max) {
  const float m_new = std::max(*m, tile_max);
  const float alpha = *m == kNegInf ? 0.0f : std::exp2(*m - m_new);
  *m = m_new;
  return alpha;
}

void softmax_generic(float* s, int64_t lds, int64_t rows, int64_t n_pad, const int64_t* lo, const int64_t* hi,
                     float* m, float* l, float* acc, int64_t ldacc, int64_t dv_pad) {
  for (int64_t r = 0; r < rows; ++r) {
    float* row = s + r * lds;
    if (lo[r] >= hi[r]) {
      std::fill(row, row + n_pad, 0.0f);
      continue;
    }
    float mx = kNegInf;
    for (int64_t j = lo[r]; j < hi[r]; ++j) mx = std::max(mx, row[j]);
    const float alpha = update_max(&m[r], mx);
    float sum = 0;
    for (int64_t j = 0; j < n_pad; ++j) {
      const float p = (j >= lo[r] && j < hi[r]) ? std::exp2(row[j] - m[r]) : 0.0f;
      row[j] = p;
      sum += p;
    }
    l[r] = l[r] * alpha + sum;
    if (alpha != 1.0f)
      for (int64_t c = 0; c < dv_pad; ++c) acc[r * ldacc + c] *= alpha;
  }
}

void probs_and_grads_generic(float* s, float* dp, int64_t ld, int64_t rows, int64_t n_pad, const int64_t* lo,
                             const int64_t* hi, const float* lse_log2, const float* delta, float scale_log2) {
  for (int64_t r = 0; r < rows; ++r) {
    float *srow = s + r * ld, *dprow = dp + r * ld;
    for (int64_t j = 0; j < n_pad; ++j) {
      const float p = (j >= lo[r] && j < hi[r]) ? std::exp2(srow[j] * scale_log2 - lse_log2[r]) : 0.0f;
      srow[j] = p;
      dprow[j] = p * (dprow[j] - delta[r]);
    }
  }
}

void dropout_row_generic(const philox::DropoutMask& m, uint64_t first, int64_t count, float* dst, float kept) {
  m.row(first, count, dst, kept);
}

const Kernels kGeneric{"generic", gemm_generic, softmax_generic, probs_and_grads_generic, dropout_row_generic};

// ---- AVX2 + FMA

#ifdef DG_SDPA_HAVE_AVX2
#define DG_AVX2 __attribute__((target("avx2,fma")))

// C[6 x 16] (+)= A[6 x k] * B[k x 16]: 12 accumulators, the classic Haswell register block.
DG_AVX2 void gemm_6x16(int64_t k, const float* a, int64_t lda, const float* b, int64_t ldb, float* c, int64_t ldc,
                       bool accumulate) {
  // Every loop over the tile is unrolled, so the accumulators stay in registers (rolled, GCC
  // kept them on the stack and stored all twelve on every k step).
  __m256 acc[6][2];
#pragma GCC unroll 6
  for (int r = 0; r < 6; ++r)
#pragma GCC unroll 2
    for (int h = 0; h < 2; ++h)
      acc[r][h] = accumulate ? _mm256_loadu_ps(c + r * ldc + 8 * h) : _mm256_setzero_ps();
#pragma GCC unroll 4
  for (int64_t p = 0; p < k; ++p) {
    const __m256 b0 = _mm256_loadu_ps(b + p * ldb);
    const __m256 b1 = _mm256_loadu_ps(b + p * ldb + 8);
#pragma GCC unroll 6
    for (int r = 0; r < 6; ++r) {
      const __m256 av = _mm256_broadcast_ss(a + r * lda + p);
      acc[r][0] = _mm256_fmadd_ps(av, b0, acc[r][0]);
      acc[r][1] = _mm256_fmadd_ps(av, b1, acc[r][1]);
    }
  }
#pragma GCC unroll 6
  for (int r = 0; r < 6; ++r)
#pragma GCC unroll 2
    for (int h = 0; h < 2; ++h) _mm256_storeu_ps(c + r * ldc + 8 * h, acc[r][h]);
}

DG_AVX2 void gemm_avx2(int64_t m, int64_t n, int64_t k, const float* a, int64_t lda, const float* b, int64_t ldb,
                       float* c, int64_t ldc, bool accumulate, const RowBlock* blocks) {
  for (int64_t i = 0; i < m; i += kMr) {
    const RowBlock rb = blocks ? blocks[i / kMr] : RowBlock{0, n, 0, k};
    const float* ai = a + i * lda + rb.k_begin;
    const float* bk = b + rb.k_begin * ldb;
    for (int64_t j = rb.n_begin; j < rb.n_end; j += kNr)
      gemm_6x16(rb.k_end - rb.k_begin, ai, lda, bk + j, ldb, c + i * ldc + j, ldc, accumulate);
  }
}

// 2^x for x <= 0 (inputs below -126 give 2^-126, negligible next to the row max's 1): the Cephes
// exp2f polynomial on [-0.5, 0.5], about 2 ulp. Below -126 it gives 0, not the smallest normal:
// a row of such P (ALiBi's far keys, a large negative bias) would otherwise feed the GEMMs values
// whose products are subnormal, which x86 computes many times slower.
DG_AVX2 inline __m256 exp2_avx2(__m256 x) {
  const __m256 normal = _mm256_cmp_ps(x, _mm256_set1_ps(-126.0f), _CMP_GE_OQ);
  x = _mm256_min_ps(_mm256_max_ps(x, _mm256_set1_ps(-126.0f)), _mm256_set1_ps(126.0f));
  const __m256 n = _mm256_round_ps(x, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
  const __m256 f = _mm256_sub_ps(x, n);
  __m256 p = _mm256_set1_ps(1.535336188319500e-4f);
  p = _mm256_fmadd_ps(p, f, _mm256_set1_ps(1.339887440266574e-3f));
  p = _mm256_fmadd_ps(p, f, _mm256_set1_ps(9.618437357674640e-3f));
  p = _mm256_fmadd_ps(p, f, _mm256_set1_ps(5.550332471162809e-2f));
  p = _mm256_fmadd_ps(p, f, _mm256_set1_ps(2.402264791363012e-1f));
  p = _mm256_fmadd_ps(p, f, _mm256_set1_ps(6.931472028550421e-1f));
  p = _mm256_fmadd_ps(p, f, _mm256_set1_ps(1.0f));
  const __m256i e = _mm256_slli_epi32(_mm256_add_epi32(_mm256_cvtps_epi32(n), _mm256_set1_epi32(127)), 23);
  return _mm256_and_ps(_mm256_mul_ps(p, _mm256_castsi256_ps(e)), normal);
}

DG_AVX2 inline float hmax(__m256 v) {
  __m128 x = _mm_max_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
  x = _mm_max_ps(x, _mm_movehl_ps(x, x));
  x = _mm_max_ss(x, _mm_shuffle_ps(x, x, 1));
  return _mm_cvtss_f32(x);
}

DG_AVX2 inline float hsum(__m256 v) {
  __m128 x = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
  x = _mm_add_ps(x, _mm_movehl_ps(x, x));
  x = _mm_add_ss(x, _mm_shuffle_ps(x, x, 1));
  return _mm_cvtss_f32(x);
}

// Lanes j0 .. j0+7 inside [lo, hi).
DG_AVX2 inline __m256 lane_mask(int64_t j0, int64_t lo, int64_t hi) {
  const __m256i j = _mm256_add_epi32(_mm256_set1_epi32(static_cast<int>(j0)), _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7));
  const __m256i in_lo = _mm256_cmpgt_epi32(j, _mm256_set1_epi32(static_cast<int>(lo) - 1));
  const __m256i in_hi = _mm256_cmpgt_epi32(_mm256_set1_epi32(static_cast<int>(hi)), j);
  return _mm256_castsi256_ps(_mm256_and_si256(in_lo, in_hi));
}

DG_AVX2 void softmax_row_avx2(float* row, int64_t n_pad, int64_t lo, int64_t hi, float* m, float* l, float* acc,
                              int64_t dv_pad) {
  // n_pad is a multiple of 16, so whole vectors cover the row. Vectors [first, last) hold visible
  // lanes; only the two edge vectors need a lane mask.
  const int64_t first = lo / 8 * 8, last = (hi + 7) / 8 * 8;
  const __m256 neg_inf = _mm256_set1_ps(kNegInf);
  __m256 vmax = neg_inf;
  for (int64_t j = first; j < last; j += 8) {
    __m256 x = _mm256_loadu_ps(row + j);
    if (j < lo || j + 8 > hi) x = _mm256_blendv_ps(neg_inf, x, lane_mask(j, lo, hi));
    vmax = _mm256_max_ps(vmax, x);
  }
  const float alpha = update_max(m, hmax(vmax));
  const __m256 vm = _mm256_set1_ps(*m);
  const __m256 zero = _mm256_setzero_ps();
  for (int64_t j = 0; j < first; j += 8) _mm256_storeu_ps(row + j, zero);
  for (int64_t j = last; j < n_pad; j += 8) _mm256_storeu_ps(row + j, zero);
  __m256 vsum = zero;
  for (int64_t j = first; j < last; j += 8) {
    __m256 p = exp2_avx2(_mm256_sub_ps(_mm256_loadu_ps(row + j), vm));
    if (j < lo || j + 8 > hi) p = _mm256_and_ps(p, lane_mask(j, lo, hi));
    _mm256_storeu_ps(row + j, p);
    vsum = _mm256_add_ps(vsum, p);
  }
  *l = *l * alpha + hsum(vsum);
  if (alpha != 1.0f) {
    const __m256 va = _mm256_set1_ps(alpha);
    for (int64_t c = 0; c < dv_pad; c += 8) _mm256_storeu_ps(acc + c, _mm256_mul_ps(_mm256_loadu_ps(acc + c), va));
  }
}

DG_AVX2 void softmax_avx2(float* s, int64_t lds, int64_t rows, int64_t n_pad, const int64_t* lo, const int64_t* hi,
                          float* m, float* l, float* acc, int64_t ldacc, int64_t dv_pad) {
  for (int64_t r = 0; r < rows; ++r) {
    float* row = s + r * lds;
    if (lo[r] >= hi[r]) {
      for (int64_t j = 0; j < n_pad; j += 8) _mm256_storeu_ps(row + j, _mm256_setzero_ps());
      continue;
    }
    softmax_row_avx2(row, n_pad, lo[r], hi[r], &m[r], &l[r], acc + r * ldacc, dv_pad);
  }
}

DG_AVX2 void probs_and_grads_avx2(float* s, float* dp, int64_t ld, int64_t rows, int64_t n_pad, const int64_t* lo,
                                  const int64_t* hi, const float* lse_log2, const float* delta, float scale_log2) {
  const __m256 zero = _mm256_setzero_ps(), vscale = _mm256_set1_ps(scale_log2);
  for (int64_t r = 0; r < rows; ++r) {
    float *srow = s + r * ld, *dprow = dp + r * ld;
    const __m256 vlse = _mm256_set1_ps(lse_log2[r]), vdelta = _mm256_set1_ps(delta[r]);
    for (int64_t j = 0; j < n_pad; j += 8) {
      if (j + 8 <= lo[r] || j >= hi[r]) {  // a vector wholly masked
        _mm256_storeu_ps(srow + j, zero);
        _mm256_storeu_ps(dprow + j, zero);
        continue;
      }
      __m256 p = exp2_avx2(_mm256_fmsub_ps(_mm256_loadu_ps(srow + j), vscale, vlse));
      if (j < lo[r] || j + 8 > hi[r]) p = _mm256_and_ps(p, lane_mask(j, lo[r], hi[r]));
      _mm256_storeu_ps(srow + j, p);
      _mm256_storeu_ps(dprow + j, _mm256_mul_ps(p, _mm256_sub_ps(_mm256_loadu_ps(dprow + j), vdelta)));
    }
  }
}

// The high and low 32 bits of a * mul per 32-bit lane.
DG_AVX2 inline void mulhilo(__m256i a, __m256i mul, __m256i& h, __m256i& l) {
  const __m256i even = _mm256_mul_epu32(a, mul), odd = _mm256_mul_epu32(_mm256_srli_epi64(a, 32), mul);
  h = _mm256_blend_epi32(_mm256_srli_epi64(even, 32), odd, 0xAA);
  l = _mm256_blend_epi32(even, _mm256_slli_epi64(odd, 32), 0xAA);
}

// Eight Philox4x32-10 blocks (groups g .. g + 7) in the lanes of c0..c3; 32-bit lanes multiply as
// 64-bit products of the even lanes, then of the odd ones shifted down.
DG_AVX2 inline void philox8(const philox::DropoutMask& m, uint64_t g, __m256i c[4]) {
  alignas(32) uint32_t lo[8], hi[8];
  for (int i = 0; i < 8; ++i) lo[i] = static_cast<uint32_t>(g + i), hi[i] = static_cast<uint32_t>((g + i) >> 32);
  c[0] = _mm256_load_si256(reinterpret_cast<const __m256i*>(lo));
  c[1] = _mm256_load_si256(reinterpret_cast<const __m256i*>(hi));
  c[2] = _mm256_set1_epi32(static_cast<int>(static_cast<uint32_t>(m.offset)));
  c[3] = _mm256_set1_epi32(static_cast<int>(static_cast<uint32_t>(m.offset >> 32)));
  uint32_t k0 = static_cast<uint32_t>(m.seed), k1 = static_cast<uint32_t>(m.seed >> 32);
  const __m256i m0 = _mm256_set1_epi32(static_cast<int>(0xD2511F53u)), m1 = _mm256_set1_epi32(static_cast<int>(0xCD9E8D57u));
  for (int round = 0; round < 10; ++round) {
    __m256i h0, l0, h1, l1;
    mulhilo(c[0], m0, h0, l0);
    mulhilo(c[2], m1, h1, l1);
    const __m256i key0 = _mm256_set1_epi32(static_cast<int>(k0)), key1 = _mm256_set1_epi32(static_cast<int>(k1));
    c[0] = _mm256_xor_si256(_mm256_xor_si256(h1, c[1]), key0);
    c[1] = l1;
    c[2] = _mm256_xor_si256(_mm256_xor_si256(h0, c[3]), key1);
    c[3] = l0;
    k0 += 0x9E3779B9u;
    k1 += 0xBB67AE85u;
  }
}

DG_AVX2 void dropout_row_avx2(const philox::DropoutMask& m, uint64_t first, int64_t count, float* dst, float kept) {
  uint64_t index = first;
  const uint64_t end = first + static_cast<uint64_t>(count);
  const uint64_t head = std::min(end, (index + 3) / 4 * 4);  // to a block boundary
  m.row(index, static_cast<int64_t>(head - index), dst, kept);
  index = head;
  const __m256i threshold = _mm256_set1_epi32(static_cast<int>(m.threshold) - 1);
  const __m256 vkept = _mm256_set1_ps(kept);
  for (; end - index >= 32; index += 32) {
    __m256i c[4];
    philox8(m, index / 4, c);
    __m256 v[4];  // v[w] lane i: element 4 i + w
    for (int w = 0; w < 4; ++w)
      v[w] = _mm256_and_ps(_mm256_castsi256_ps(_mm256_cmpgt_epi32(_mm256_srli_epi32(c[w], 8), threshold)), vkept);
    const __m256 t0 = _mm256_unpacklo_ps(v[0], v[1]), t1 = _mm256_unpackhi_ps(v[0], v[1]);
    const __m256 t2 = _mm256_unpacklo_ps(v[2], v[3]), t3 = _mm256_unpackhi_ps(v[2], v[3]);
    const __m256 u0 = _mm256_shuffle_ps(t0, t2, 0x44), u1 = _mm256_shuffle_ps(t0, t2, 0xEE);  // blocks 0|4, 1|5
    const __m256 u2 = _mm256_shuffle_ps(t1, t3, 0x44), u3 = _mm256_shuffle_ps(t1, t3, 0xEE);  // blocks 2|6, 3|7
    float* out = dst + (index - first);
    _mm256_storeu_ps(out, _mm256_permute2f128_ps(u0, u1, 0x20));
    _mm256_storeu_ps(out + 8, _mm256_permute2f128_ps(u2, u3, 0x20));
    _mm256_storeu_ps(out + 16, _mm256_permute2f128_ps(u0, u1, 0x31));
    _mm256_storeu_ps(out + 24, _mm256_permute2f128_ps(u2, u3, 0x31));
  }
  m.row(index, static_cast<int64_t>(end - index), dst + (index - first), kept);
}

const Kernels kAvx2{"avx2", gemm_avx2, softmax_avx2, probs_and_grads_avx2, dropout_row_avx2};

// ---- AVX-512 GEMM tiles (the softmax and dropout stay AVX2): C[6 x 16 kW] (+)= A[6 x k] B[k x 16 kW]
// in zmm registers, two column blocks at a time where the row block has them (12 accumulators).
#define DG_AVX512 __attribute__((target("avx512f,avx2,fma")))

template <int kW>
DG_AVX512 inline void gemm_6xw_512(int64_t k, const float* a, int64_t lda, const float* b, int64_t ldb, float* c,
                                   int64_t ldc, bool accumulate) {
  __m512 acc[6][kW];
#pragma GCC unroll 6
  for (int r = 0; r < 6; ++r)
#pragma GCC unroll 2
    for (int h = 0; h < kW; ++h) acc[r][h] = accumulate ? _mm512_loadu_ps(c + r * ldc + 16 * h) : _mm512_setzero_ps();
#pragma GCC unroll 4
  for (int64_t p = 0; p < k; ++p) {
    __m512 bv[kW];
#pragma GCC unroll 2
    for (int h = 0; h < kW; ++h) bv[h] = _mm512_loadu_ps(b + p * ldb + 16 * h);
#pragma GCC unroll 6
    for (int r = 0; r < 6; ++r) {
      const __m512 av = _mm512_set1_ps(a[r * lda + p]);
#pragma GCC unroll 2
      for (int h = 0; h < kW; ++h) acc[r][h] = _mm512_fmadd_ps(av, bv[h], acc[r][h]);
    }
  }
#pragma GCC unroll 6
  for (int r = 0; r < 6; ++r)
#pragma GCC unroll 2
    for (int h = 0; h < kW; ++h) _mm512_storeu_ps(c + r * ldc + 16 * h, acc[r][h]);
}

DG_AVX512 void gemm_avx512(int64_t m, int64_t n, int64_t k, const float* a, int64_t lda, const float* b, int64_t ldb,
                           float* c, int64_t ldc, bool accumulate, const RowBlock* blocks) {
  for (int64_t i = 0; i < m; i += kMr) {
    const RowBlock rb = blocks ? blocks[i / kMr] : RowBlock{0, n, 0, k};
    const float* ai = a + i * lda + rb.k_begin;
    const float* bk = b + rb.k_begin * ldb;
    const int64_t kk = rb.k_end - rb.k_begin;
    int64_t j = rb.n_begin;
    for (; j + 2 * kNr <= rb.n_end; j += 2 * kNr) gemm_6xw_512<2>(kk, ai, lda, bk + j, ldb, c + i * ldc + j, ldc, accumulate);
    if (j < rb.n_end) gemm_6xw_512<1>(kk, ai, lda, bk + j, ldb, c + i * ldc + j, ldc, accumulate);
  }
}

const Kernels kAvx512{"avx512", gemm_avx512, softmax_avx2, probs_and_grads_avx2, dropout_row_avx2};
#endif

}  // namespace

bool cpu_has_avx2_fma() {
#ifdef DG_SDPA_HAVE_AVX2
  static const bool has = cpu_features().supports(Isa::AVX2);  // the OS-saved state and DNNGRAPH_MAX_CPU_ISA too
  return has;
#else
  return false;
#endif
}

namespace {
bool cpu_has_avx512f() {
#ifdef DG_SDPA_HAVE_AVX2
  static const bool has = cpu_features().supports(Isa::AVX512);
  return has;
#else
  return false;
#endif
}

}  // namespace

std::vector<const Kernels*> kernel_builds() {
  std::vector<const Kernels*> out{&kGeneric};
#ifdef DG_SDPA_HAVE_AVX2
  if (cpu_has_avx2_fma()) out.push_back(&kAvx2);
  if (cpu_has_avx512f()) out.push_back(&kAvx512);
#endif
  return out;
}

const Kernels& kernels(bool avx2) {
#ifdef DG_SDPA_HAVE_AVX2
  // The AVX-512 GEMM tiles: the encoder's attention (4 x 12 heads x 128 x 64) 1.76 -> 1.50 ms.
  if (avx2 && cpu_has_avx2_fma()) return cpu_has_avx512f() ? kAvx512 : kAvx2;
#endif
  (void)avx2;
  return kGeneric;
}

}  // namespace dnngraph::cpu::sdpa
