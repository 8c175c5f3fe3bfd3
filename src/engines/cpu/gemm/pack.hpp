// Packing strided matrices of any supported type (fp32, bf16, fp16) into the fp32 layouts the
// microkernels read: row-major A blocks and NR-wide B panels. Conversions happen here, so the
// kernels only ever see fp32.
#pragma once
#include <cstdint>
#include <cstring>

#include "dnngraph/types.hpp"

namespace dnngraph::cpu::gemm {

// A 2-D view: element (r, c) at data + (r * rs + c * cs) elements of type `dtype`.
struct StridedMatrix {
  const void* data = nullptr;
  DataType dtype = DataType::FLOAT;
  int64_t rs = 0, cs = 0;
};

bool packable(DataType t);  // FLOAT, BFLOAT16, HALF

// dst[i * ld + k] = src(r0 + i, c0 + k) for i < rows, k < cols, in fp32.
void pack_rows(const StridedMatrix& src, int64_t r0, int64_t rows, int64_t c0, int64_t cols, float* dst, int64_t ld);

// k-major A panels of mr rows: panel t holds dst[t * cols * mr + k * mr + i] = src(r0 + t * mr + i,
// c0 + k), zero for rows past `rows`.
void pack_a_panels(const StridedMatrix& src, int64_t r0, int64_t rows, int64_t c0, int64_t cols, int mr, float* dst);

// Columns [0, cols) of a tile of mr rows of 32-bit words (row i at rows + i * ld words) into
// k-major order, out[c * mr + i], by 8 x 8 word transposes where this CPU has them: row groups
// [0, 8), [8, 16), ... and a last one ending at mr (overlapping the one before where mr is not a
// multiple of 8: the same words written twice). Returns the columns done (a multiple of 8; 0
// where mr < 8 or no transposes here); the caller does the rest. (The scalar transpose was 6.6%
// of an sgemm 2048 and 9-11% of a bf16 one on Zen 4.)
int64_t transpose_tile_words(const uint32_t* rows, int64_t ld, int64_t cols, int mr, uint32_t* out);

// B panels: columns [c0, c0 + cols) of rows [0, krows), NR wide: panel p holds
// dst[p * krows * nr + k * nr + j] = src(k, c0 + p * nr + j), zero past `cols`.
void pack_panels(const StridedMatrix& src, int64_t krows, int64_t c0, int64_t cols, int nr, float* dst);

// n values from src + i * stride (elements of `t`) to fp32, any type and stride.
void convert_run_strided(const void* src, DataType t, int64_t stride, int64_t n, float* dst);

// The same, with unit-stride bf16 and fp32 runs inline: convs call it per pixel and tap, and for
// 16 channels the out-of-line dispatch was 17% of a bf16 1x1 C16 112x112 layer.
inline void convert_run(const void* src, DataType t, int64_t stride, int64_t n, float* dst) {
  if (stride == 1 && t == DataType::BFLOAT16) {
    const uint16_t* s = static_cast<const uint16_t*>(src);
    for (int64_t k = 0; k < n; ++k) {
      const uint32_t bits = static_cast<uint32_t>(s[k]) << 16;
      std::memcpy(dst + k, &bits, 4);
    }
  } else if (stride == 1 && t == DataType::FLOAT && n <= 32) {
    // Short runs (a tile's 12-14 channels, a 32-wide panel's) by fixed-size copies the compiler
    // inlines: a memcpy call per run was a third of cpu_conv_wgrad_gemm's 1x1 C256 56x56 layer.
    const char* s = static_cast<const char*>(src);
    char* d = reinterpret_cast<char*>(dst);
    int64_t b = n * 4, o = 0;
    for (; o + 64 <= b; o += 64) std::memcpy(d + o, s + o, 64);
    if (o + 32 <= b) std::memcpy(d + o, s + o, 32), o += 32;
    if (o + 16 <= b) std::memcpy(d + o, s + o, 16), o += 16;
    if (o + 8 <= b) std::memcpy(d + o, s + o, 8), o += 8;
    if (o < b) std::memcpy(d + o, s + o, 4);
  } else if (stride == 1 && t == DataType::FLOAT) {
    std::memcpy(dst, src, static_cast<size_t>(n) * 4);
  } else {
    convert_run_strided(src, t, stride, n, dst);
  }
}

}  // namespace dnngraph::cpu::gemm
