// What ref's sdpa and sdpa_backward share: the masking rules of src/graph/sdpa.cpp (per-batch
// lengths, the band) and element access to rank-4 views.
#pragma once
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <optional>

#include "engines/ref/view.hpp"

namespace dnngraph::ref::sdpa {

// One batch's lengths (the padding mask's seq_len values clamped to the dims, else the dims) and
// the band of visible keys.
struct RowMask {
  int64_t seq_q = 0, seq_kv = 0, offset = 0;
  std::optional<int64_t> left, right;

  // Compared as the key's distance right of the diagonal, which is small: i + offset + bound could
  // overflow for bounds near INT64_MAX.
  bool visible(int64_t i, int64_t j) const {
    const int64_t ahead = j - (i + offset);
    if (right && ahead > *right) return false;
    if (left && -ahead >= *left) return false;
    return true;
  }
};

// seq_q_view / seq_kv_view: the node's SEQ_LEN inputs (absent views: no padding mask).
template <class Attr>
RowMask row_mask(const Attr& attr, const View& seq_q_view, const View& seq_kv_view, int64_t sq, int64_t skv,
                 int64_t batch) {
  RowMask m{sq, skv, 0, attr.get_diagonal_band_left_bound(), attr.get_diagonal_band_right_bound()};
  if (seq_q_view.present()) m.seq_q = std::clamp(static_cast<int64_t>(seq_q_view.at({batch, 0, 0, 0})), int64_t{0}, sq);
  if (seq_kv_view.present())
    m.seq_kv = std::clamp(static_cast<int64_t>(seq_kv_view.at({batch, 0, 0, 0})), int64_t{0}, skv);
  if (attr.get_diagonal_alignment() == DiagonalAlignment::BOTTOM_RIGHT) m.offset = m.seq_kv - m.seq_q;
  return m;
}

template <class Attr>
double attn_scale(const Attr& attr, int64_t d) {
  return attr.get_attn_scale().value_or(1.0 / std::sqrt(static_cast<double>(d)));
}

// Element offset of [b, h, s, c] in a rank-4 view.
inline int64_t offset4(const View& t, int64_t b, int64_t h, int64_t s, int64_t c) {
  return b * t.strides[0] + h * t.strides[1] + s * t.strides[2] + c * t.strides[3];
}
inline double load4(const View& t, int64_t b, int64_t h, int64_t s, int64_t c) {
  return dtype::load(t.data, t.dtype, offset4(t, b, h, s, c));
}
inline void store4(const View& t, int64_t b, int64_t h, int64_t s, int64_t c, double v) {
  dtype::store(t.data, t.dtype, offset4(t, b, h, s, c), v);
}

}  // namespace dnngraph::ref::sdpa
