// What cpu_sdpa_flash and cpu_sdpa_backward_flash share: rank-4 operands, the band of keys a
// query row sees (src/graph/sdpa.cpp's rules), and element conversion while tiles load and store.
#pragma once
#include <algorithm>
#include <array>
#include <cstdint>
#include <optional>

#include "core/dtype.hpp"
#include "graph/ir.hpp"

namespace dnngraph::cpu::sdpa {

inline int64_t round_up(int64_t x, int64_t m) { return (x + m - 1) / m * m; }

inline bool is_tile_type(DataType t) {
  return t == DataType::FLOAT || t == DataType::HALF || t == DataType::BFLOAT16;
}

// A rank-4 operand: tensor id, type, strides in elements.
struct Operand {
  int id = -1;
  DataType dtype = DataType::NOT_SET;
  std::array<int64_t, 4> st{};
  int64_t offset(int64_t b, int64_t h, int64_t s, int64_t c) const {
    return b * st[0] + h * st[1] + s * st[2] + c * st[3];
  }
};

inline Operand operand(const ir::Graph& g, int id) {
  Operand o;
  o.id = id;
  if (id < 0) return o;
  const ir::Tensor& t = g.tensor(id);
  o.dtype = t.dtype;
  for (size_t i = 0; i < 4 && i < t.strides.size(); ++i) o.st[i] = t.strides[i];
  return o;
}

// The keys one query row sees: [lo, hi), empty when lo >= hi. Both ends grow with the row.
// Bounds are capped at seq_q + seq_kv, past which they mask nothing, so that no sum overflows.
struct Band {
  int64_t seq_q, seq_kv, offset;
  std::optional<int64_t> left, right;
  int64_t cap(int64_t bound) const { return std::min(bound, seq_q + seq_kv); }
  int64_t lo(int64_t i) const { return left ? std::clamp(i + offset - cap(*left) + 1, int64_t{0}, seq_kv) : 0; }
  int64_t hi(int64_t i) const { return right ? std::clamp(i + offset + cap(*right) + 1, int64_t{0}, seq_kv) : seq_kv; }
};

// dst[i * dst_stride] = src[off + i * src_stride] * scale, for i < n.
inline void load_strided(const void* base, DataType t, int64_t off, int64_t src_stride, int64_t n, float* dst,
                         int64_t dst_stride, float scale) {
  switch (t) {
    case DataType::FLOAT: {
      const float* s = static_cast<const float*>(base) + off;
      for (int64_t i = 0; i < n; ++i) dst[i * dst_stride] = s[i * src_stride] * scale;
      return;
    }
    case DataType::BFLOAT16: {
      const uint16_t* s = static_cast<const uint16_t*>(base) + off;
      for (int64_t i = 0; i < n; ++i) dst[i * dst_stride] = dtype::bf16_to_float(s[i * src_stride]) * scale;
      return;
    }
    case DataType::HALF: {
      const uint16_t* s = static_cast<const uint16_t*>(base) + off;
      for (int64_t i = 0; i < n; ++i) dst[i * dst_stride] = dtype::half_to_float(s[i * src_stride]) * scale;
      return;
    }
    default: return;  // check() admits only the three types above
  }
}

inline void store_strided(void* base, DataType t, int64_t off, int64_t stride, int64_t n, const float* src,
                          float scale) {
  switch (t) {
    case DataType::FLOAT: {
      float* d = static_cast<float*>(base) + off;
      for (int64_t i = 0; i < n; ++i) d[i * stride] = src[i] * scale;
      return;
    }
    case DataType::BFLOAT16: {
      uint16_t* d = static_cast<uint16_t*>(base) + off;
      for (int64_t i = 0; i < n; ++i) d[i * stride] = dtype::float_to_bf16(src[i] * scale);
      return;
    }
    case DataType::HALF: {
      uint16_t* d = static_cast<uint16_t*>(base) + off;
      for (int64_t i = 0; i < n; ++i) d[i * stride] = dtype::float_to_half(src[i] * scale);
      return;
    }
    default: return;
  }
}

}  // namespace dnngraph::cpu::sdpa
