#include "engines/cpu/gemm/pack.hpp"

#include <algorithm>
#include <cstring>
#include <type_traits>

#include "core/dtype.hpp"
#include "engines/cpu/cpu_features.hpp"
#include "engines/cpu/simd/transpose_words.hpp"

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#include <immintrin.h>
#define DNNGRAPH_PACK_X86 1
#endif

namespace dnngraph::cpu::gemm {
namespace {

template <class T>
float to_fp32(T v);
template <>
float to_fp32<float>(float v) { return v; }

struct Bf16 { uint16_t bits; };
struct Fp16 { uint16_t bits; };
template <>
float to_fp32<Bf16>(Bf16 v) { return dtype::bf16_to_float(v.bits); }
template <>
float to_fp32<Fp16>(Fp16 v) { return dtype::half_to_float(v.bits); }

template <class T>
void rows_typed(const StridedMatrix& s, int64_t r0, int64_t rows, int64_t c0, int64_t cols, float* dst, int64_t ld) {
  const T* base = static_cast<const T*>(s.data);
  if (s.cs == 1) {
    for (int64_t i = 0; i < rows; ++i) {
      const T* src = base + (r0 + i) * s.rs + c0;
      float* d = dst + i * ld;
      for (int64_t k = 0; k < cols; ++k) d[k] = to_fp32(src[k]);
    }
    return;
  }
  // Columns strided (a transposed view): walk 8-row strips so reads along r stay near each other.
  for (int64_t i0 = 0; i0 < rows; i0 += 8) {
    const int64_t ie = std::min(rows, i0 + 8);
    for (int64_t k = 0; k < cols; ++k) {
      const T* src = base + (c0 + k) * s.cs + r0 * s.rs;
      for (int64_t i = i0; i < ie; ++i) dst[i * ld + k] = to_fp32(src[i * s.rs]);
    }
  }
}

#if DNNGRAPH_PACK_X86
// One 8 x 8 block: rows src + j * ld (8 floats each) become dst + k * ldd (8 floats each).
__attribute__((target("avx2"))) inline void transpose8x8(const float* src, int64_t ld, float* dst, int64_t ldd) {
  __m256 r[8], t[8];
  for (int j = 0; j < 8; ++j) r[j] = _mm256_loadu_ps(src + j * ld);
  for (int j = 0; j < 8; j += 2) {
    t[j] = _mm256_unpacklo_ps(r[j], r[j + 1]);
    t[j + 1] = _mm256_unpackhi_ps(r[j], r[j + 1]);
  }
  for (int j = 0; j < 8; j += 4) {
    r[j] = _mm256_shuffle_ps(t[j], t[j + 2], 0x44);
    r[j + 1] = _mm256_shuffle_ps(t[j], t[j + 2], 0xEE);
    r[j + 2] = _mm256_shuffle_ps(t[j + 1], t[j + 3], 0x44);
    r[j + 3] = _mm256_shuffle_ps(t[j + 1], t[j + 3], 0xEE);
  }
  for (int k = 0; k < 4; ++k) {
    _mm256_storeu_ps(dst + k * ldd, _mm256_permute2f128_ps(r[k], r[k + 4], 0x20));
    _mm256_storeu_ps(dst + (k + 4) * ldd, _mm256_permute2f128_ps(r[k], r[k + 4], 0x31));
  }
}

// fp32 B with unit stride along k and columns strided (KRSC conv weights, a transposed matrix):
// 8 x 8 register transposes instead of a scalar store per element, a cache line apart (that
// scalar pack was ~17% of the 3x3 C256 14x14 layer, whose 2.4 MB of weights are packed per call).
__attribute__((target("avx2"))) void panels_transposed_avx2(const float* base, int64_t cs, int64_t krows, int64_t c0,
                                                            int64_t cols, int nr, float* dst) {
  const int64_t panels = (cols + nr - 1) / nr, k8 = krows / 8 * 8;
  for (int64_t p = 0; p < panels; ++p) {
    float* d = dst + p * krows * nr;
    const int64_t j0 = c0 + p * nr, w = std::min<int64_t>(nr, cols - p * nr), w8 = w / 8 * 8;
    for (int64_t j = 0; j < w8; j += 8)
      for (int64_t k = 0; k < k8; k += 8) transpose8x8(base + (j0 + j) * cs + k, cs, d + k * nr + j, nr);
    for (int64_t k = 0; k < krows; ++k) {
      float* dk = d + k * nr;
      for (int64_t j = (k < k8 ? w8 : 0); j < w; ++j) dk[j] = base[(j0 + j) * cs + k];
      for (int64_t j = w; j < nr; ++j) dk[j] = 0.0f;
    }
  }
}
#endif

template <class T>
void panels_typed(const StridedMatrix& s, int64_t krows, int64_t c0, int64_t cols, int nr, float* dst) {
  const T* base = static_cast<const T*>(s.data);
  const int64_t panels = (cols + nr - 1) / nr;
#if DNNGRAPH_PACK_X86
  if constexpr (std::is_same_v<T, float>) {
    if (s.rs == 1 && s.cs != 1 && nr % 8 == 0 && cpu_features().supports(Isa::AVX2)) {
      panels_transposed_avx2(base, s.cs, krows, c0, cols, nr, dst);
      return;
    }
  }
#endif
  if (s.cs == 1) {
    // Rows in blocks of 16 across every panel: reads stay within a few rows (pages), and each
    // panel receives a contiguous 16 x NR piece.
    for (int64_t k0 = 0; k0 < krows; k0 += 16) {
      const int64_t ke = std::min(krows, k0 + 16);
      for (int64_t p = 0; p < panels; ++p) {
        const int64_t j0 = c0 + p * nr, w = std::min<int64_t>(nr, cols - p * nr);
        float* d = dst + p * krows * nr;
        for (int64_t k = k0; k < ke; ++k) {
          const T* src = base + k * s.rs + j0;
          float* dk = d + k * nr;
          if constexpr (std::is_same_v<T, float>) {
            if (w == nr) {
              std::memcpy(dk, src, static_cast<size_t>(nr) * sizeof(float));
              continue;
            }
          }
          for (int64_t j = 0; j < w; ++j) dk[j] = to_fp32(src[j]);
          for (int64_t j = w; j < nr; ++j) dk[j] = 0.0f;
        }
      }
    }
    return;
  }
  for (int64_t p = 0; p < panels; ++p) {
    float* d = dst + p * krows * nr;
    const int64_t j0 = c0 + p * nr, w = std::min<int64_t>(nr, cols - p * nr);
    for (int64_t j = 0; j < nr; ++j) {
      if (j >= w) {
        for (int64_t k = 0; k < krows; ++k) d[k * nr + j] = 0.0f;
        continue;
      }
      const T* src = base + (j0 + j) * s.cs;
      for (int64_t k = 0; k < krows; ++k) d[k * nr + j] = to_fp32(src[k * s.rs]);
    }
  }
}

template <class T>
void a_panels_typed(const StridedMatrix& s, int64_t r0, int64_t rows, int64_t c0, int64_t cols, int mr, float* dst) {
  const T* base = static_cast<const T*>(s.data);
  constexpr int kMaxMr = 16;
  for (int64_t t = 0; t * mr < rows; ++t) {
    float* d = dst + t * cols * mr;
    const int64_t h = std::min<int64_t>(mr, rows - t * mr);
    const T* src[kMaxMr];
    for (int64_t i = 0; i < h; ++i) src[i] = base + (r0 + t * mr + i) * s.rs + c0 * s.cs;
    if (h == 6 && mr == 6 && s.cs == 1) {  // the AVX2 tile: k outer, so stores run contiguously
      for (int64_t k = 0; k < cols; ++k, d += 6) {
        d[0] = to_fp32(src[0][k]); d[1] = to_fp32(src[1][k]); d[2] = to_fp32(src[2][k]);
        d[3] = to_fp32(src[3][k]); d[4] = to_fp32(src[4][k]); d[5] = to_fp32(src[5][k]);
      }
      continue;
    }
    int64_t k = 0;
    if constexpr (std::is_same_v<T, float>)  // a whole tile of rows: their words in 8 x 8 blocks
      if (h == mr && s.cs == 1)
        k = transpose_tile_words(reinterpret_cast<const uint32_t*>(src[0]), s.rs, cols, mr,
                                 reinterpret_cast<uint32_t*>(d));
    // k outer: stores contiguous, and a transposed A (rs == 1) is read contiguously too.
    for (; k < cols; ++k) {
      for (int64_t i = 0; i < h; ++i) d[k * mr + i] = to_fp32(src[i][k * s.cs]);
      for (int64_t i = h; i < mr; ++i) d[k * mr + i] = 0.0f;
    }
  }
}

}  // namespace

int64_t transpose_tile_words(const uint32_t* rows, int64_t ld, int64_t cols, int mr, uint32_t* out) {
  if (mr < 8 || !simd::words_transpose_available()) return 0;
  const int64_t blocks = cols / 8 * 8;
  for (int g = 0; g < mr; g += 8) {
    const int g0 = std::min(g, mr - 8);
    for (int64_t c = 0; c < blocks; c += 8) simd::transpose_8x8_words(rows + g0 * ld + c, ld, out + c * mr + g0, mr);
  }
  return blocks;
}

void pack_a_panels(const StridedMatrix& s, int64_t r0, int64_t rows, int64_t c0, int64_t cols, int mr, float* dst) {
  switch (s.dtype) {
    case DataType::BFLOAT16: a_panels_typed<Bf16>(s, r0, rows, c0, cols, mr, dst); return;
    case DataType::HALF: a_panels_typed<Fp16>(s, r0, rows, c0, cols, mr, dst); return;
    default: a_panels_typed<float>(s, r0, rows, c0, cols, mr, dst); return;
  }
}

bool packable(DataType t) { return t == DataType::FLOAT || t == DataType::BFLOAT16 || t == DataType::HALF; }

void pack_rows(const StridedMatrix& s, int64_t r0, int64_t rows, int64_t c0, int64_t cols, float* dst, int64_t ld) {
  switch (s.dtype) {
    case DataType::BFLOAT16: rows_typed<Bf16>(s, r0, rows, c0, cols, dst, ld); return;
    case DataType::HALF: rows_typed<Fp16>(s, r0, rows, c0, cols, dst, ld); return;
    default: rows_typed<float>(s, r0, rows, c0, cols, dst, ld); return;
  }
}

void pack_panels(const StridedMatrix& s, int64_t krows, int64_t c0, int64_t cols, int nr, float* dst) {
  switch (s.dtype) {
    case DataType::BFLOAT16: panels_typed<Bf16>(s, krows, c0, cols, nr, dst); return;
    case DataType::HALF: panels_typed<Fp16>(s, krows, c0, cols, nr, dst); return;
    default: panels_typed<float>(s, krows, c0, cols, nr, dst); return;
  }
}

void convert_run_strided(const void* src, DataType t, int64_t stride, int64_t n, float* dst) {
  const StridedMatrix s{src, t, 0, stride};
  pack_rows(s, 0, 1, 0, n, dst, n);
}

}  // namespace dnngraph::cpu::gemm
