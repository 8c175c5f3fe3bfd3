#include "engines/cpu/gemm/pack_bf16.hpp"

#include <algorithm>
#include <cstring>

#include "core/dtype.hpp"

namespace dnngraph::cpu::gemm {
namespace {

// Element (r, c) of src as bf16 bits.
uint16_t bf16_at(const StridedMatrix& m, int64_t r, int64_t c) {
  const int64_t off = r * m.rs + c * m.cs;
  switch (m.dtype) {
    case DataType::BFLOAT16: return static_cast<const uint16_t*>(m.data)[off];
    case DataType::HALF: return dtype::float_to_bf16(dtype::half_to_float(static_cast<const uint16_t*>(m.data)[off]));
    default: return dtype::float_to_bf16(static_cast<const float*>(m.data)[off]);
  }
}

uint32_t pair(uint16_t lo, uint16_t hi) { return static_cast<uint32_t>(lo) | (static_cast<uint32_t>(hi) << 16); }

}  // namespace

void pack_a_bf16_pairs(const StridedMatrix& src, int64_t r0, int64_t rows, int64_t kp0, int64_t kpairs,
                       int64_t k_total, int mr, float* dst) {
  uint32_t* out = reinterpret_cast<uint32_t*>(dst);
  const int64_t tiles = (rows + mr - 1) / mr;
  const bool bf16_rows = src.dtype == DataType::BFLOAT16 && src.cs == 1;
  int64_t blocked = 0;  // pairs of the current tile done by transpose_tile_words
  for (int64_t t = 0; t < tiles; ++t)
    for (int i = 0; i < mr; ++i) {
      uint32_t* col = out + t * kpairs * mr + i;
      const int64_t r = t * mr + i;
      if (r >= rows) {
        for (int64_t kp = 0; kp < kpairs; ++kp) col[kp * mr] = 0;
        continue;
      }
      const int64_t full = std::max<int64_t>(0, std::min(kpairs, k_total / 2 - kp0));  // pairs inside K
      if (bf16_rows) {  // the pairs are the row's own 32-bit words
        const uint16_t* row = static_cast<const uint16_t*>(src.data) + (r0 + r) * src.rs + 2 * kp0;
        // A whole tile at an even stride: the rows' words transposed in blocks.
        if (i == 0)
          blocked = t * mr + mr <= rows && src.rs % 2 == 0
                        ? transpose_tile_words(reinterpret_cast<const uint32_t*>(row), src.rs / 2, full, mr, col)
                        : 0;
        for (int64_t kp = blocked; kp < full; ++kp) {
          uint32_t w;
          std::memcpy(&w, row + 2 * kp, 4);
          col[kp * mr] = w;
        }
      } else {
        for (int64_t kp = 0; kp < full; ++kp)
          col[kp * mr] = pair(bf16_at(src, r0 + r, 2 * (kp0 + kp)), bf16_at(src, r0 + r, 2 * (kp0 + kp) + 1));
      }
      for (int64_t kp = full; kp < kpairs; ++kp) {  // the odd last k, then zeros
        const int64_t k = 2 * (kp0 + kp);
        col[kp * mr] = k < k_total ? pair(bf16_at(src, r0 + r, k), 0) : 0;
      }
    }
}

void pack_b_bf16_pairs(const StridedMatrix& src, int64_t krows, int64_t c0, int64_t cols, int nr, int64_t kpairs,
                       float* dst) {
  uint32_t* out = reinterpret_cast<uint32_t*>(dst);
  const int64_t real_pairs = (krows + 1) / 2, panels = (cols + nr - 1) / nr;
  const bool bf16_cols = src.dtype == DataType::BFLOAT16 && src.cs == 1;
  for (int64_t p = 0; p < panels; ++p) {
    const int64_t j0 = p * nr, w = std::min<int64_t>(nr, cols - j0);
    for (int64_t kp = real_pairs; kp < kpairs; ++kp) std::fill_n(out + p * kpairs * nr + kp * nr, nr, 0u);
    for (int64_t kp = 0; kp < real_pairs; ++kp) {
      uint32_t* o = out + p * kpairs * nr + kp * nr;
      const int64_t k = 2 * kp;
      const bool has_hi = k + 1 < krows;
      if (bf16_cols) {
        const uint16_t* lo = static_cast<const uint16_t*>(src.data) + k * src.rs + c0 + j0;
        const uint16_t* hi = lo + src.rs;
        for (int64_t j = 0; j < w; ++j) o[j] = pair(lo[j], has_hi ? hi[j] : 0);
      } else {
        for (int64_t j = 0; j < w; ++j)
          o[j] = pair(bf16_at(src, k, c0 + j0 + j), has_hi ? bf16_at(src, k + 1, c0 + j0 + j) : 0);
      }
      for (int64_t j = w; j < nr; ++j) o[j] = 0;
    }
  }
}

void pack_a_bf16_rows(const StridedMatrix& src, int64_t r0, int64_t rows, int64_t kp0, int64_t kpairs,
                      int64_t k_total, int mr, float* dst) {
  uint32_t* out = reinterpret_cast<uint32_t*>(dst);
  const int64_t tiles = (rows + mr - 1) / mr;
  const int64_t full = std::max<int64_t>(0, std::min(kpairs, k_total / 2 - kp0));  // pairs inside K
  const bool bf16_rows = src.dtype == DataType::BFLOAT16 && src.cs == 1;
  for (int64_t t = 0; t < tiles; ++t)
    for (int i = 0; i < mr; ++i) {
      uint32_t* row_out = out + t * kpairs * mr + i * kpairs;
      const int64_t r = t * mr + i;
      if (r >= rows) {
        std::fill_n(row_out, kpairs, 0u);
        continue;
      }
      if (bf16_rows) {  // the row's own 32-bit words
        std::memcpy(row_out, static_cast<const uint16_t*>(src.data) + (r0 + r) * src.rs + 2 * kp0,
                    static_cast<size_t>(full) * 4);
      } else {
        for (int64_t kp = 0; kp < full; ++kp)
          row_out[kp] = pair(bf16_at(src, r0 + r, 2 * (kp0 + kp)), bf16_at(src, r0 + r, 2 * (kp0 + kp) + 1));
      }
      for (int64_t kp = full; kp < kpairs; ++kp) {
        const int64_t k = 2 * (kp0 + kp);
        row_out[kp] = k < k_total ? pair(bf16_at(src, r0 + r, k), 0) : 0;
      }
    }
}

}  // namespace dnngraph::cpu::gemm
