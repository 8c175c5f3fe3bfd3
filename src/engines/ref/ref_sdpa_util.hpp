// What ref's sdpa and sdpa_backward share: the masking rules of src/graph/sdpa.cpp (per-batch
// lengths, the band) and element access to rank-4 views.
#pragma once
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <optional>

#include <vector>

#include "core/philox.hpp"
#include "engines/ref/ops.hpp"
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

// How one operand's rows are found: batch b's (h, s, c) element is at base[b] + h, s, c strides
// (base: b times the batch stride, or the ragged offset), or, for paged K and V, row s % block_size
// of the container block that the page table names for page s / block_size.
struct Rows {
  View view;
  std::vector<int64_t> base;
  int64_t block_size = 0, pages = 0;  // paged when block_size > 0
  std::vector<int64_t> blocks;        // [b * pages + page]

  int64_t offset(int64_t b, int64_t h, int64_t s, int64_t c) const {
    const auto& st = view.strides;
    if (block_size > 0) {
      const int64_t blk = blocks[static_cast<size_t>(b * pages + s / block_size)];
      return blk * st[0] + h * st[1] + (s % block_size) * st[2] + c * st[3];
    }
    return base[static_cast<size_t>(b)] + h * st[1] + s * st[2] + c * st[3];
  }
  double load(int64_t b, int64_t h, int64_t s, int64_t c) const {
    return dtype::load(view.data, view.dtype, offset(b, h, s, c));
  }
  void store(int64_t b, int64_t h, int64_t s, int64_t c, double v) const {
    dtype::store(view.data, view.dtype, offset(b, h, s, c), v);
  }
};

// Rows [0, rows) of head h of batch b of `x`, as doubles [rows x width], loaded once per task so
// that the loops over keys read contiguous memory (ref's cost was the per-element load).
inline void load_rows(const Rows& x, int64_t b, int64_t h, int64_t rows, int64_t width, std::vector<double>& out) {
  out.resize(static_cast<size_t>(rows * width));
  for (int64_t j = 0; j < rows; ++j)
    for (int64_t c = 0; c < width; ++c) out[static_cast<size_t>(j * width + c)] = x.load(b, h, j, c);
}

// The rows of input or output `slot` (is_output: of the node's outputs); `ragged` is its ragged
// offset's view (absent: none). `rows[b]` is how many rows batch b holds: a ragged offset must place
// them inside the tensor's span, else an execution error names the tensor and the batch.
Status rows_of(const NodeArgs& a, bool is_output, size_t slot, const View& ragged, const std::vector<int64_t>& rows,
               Rows& out);
// Paged K or V (input `slot`) through page table `table_slot` (and its ragged offset, if any):
// every block that batch b's first keys[b] keys use must exist in the container.
Status paged_rows_of(const NodeArgs& a, size_t slot, size_t table_slot, const View& table_ragged,
                     const std::vector<int64_t>& keys, Rows& out);

// What bias, ALiBi and dropout add to the scores of one (b, h, i, j).
struct ScoreTerms {
  View bias;                         // absent: none
  std::vector<double> slopes;        // ALiBi's, per head; empty: none
  std::optional<philox::DropoutMask> dropout;
  double keep_scale = 1.0;           // 1 / (1 - p)
  int64_t h = 0, sq = 0, skv = 0;    // the dims of the dropout mask's index space

  double add(int64_t b, int64_t hi, int64_t i, int64_t j) const {
    double s = 0;
    if (bias.present()) {
      const auto& d = bias.dims;
      const auto& st = bias.strides;
      s += dtype::load(bias.data, bias.dtype,
                       (d[0] == 1 ? 0 : b) * st[0] + (d[1] == 1 ? 0 : hi) * st[1] + i * st[2] + j * st[3]);
    }
    if (!slopes.empty()) s += slopes[static_cast<size_t>(hi)] * static_cast<double>(j - i);
    return s;
  }
  // The factor P's element is multiplied by: 0 dropped, 1 / (1 - p) kept, 1 without dropout.
  double drop(int64_t b, int64_t hi, int64_t i, int64_t j) const {
    if (!dropout) return 1.0;
    const uint64_t index = static_cast<uint64_t>(((b * h + hi) * sq + i) * skv + j);
    return dropout->keep(index) ? keep_scale : 0.0;
  }
};

// ALiBi's slope of each of `heads` heads (Press et al.; the frontend test's compute_ref).
std::vector<double> alibi_slopes(int64_t heads);
// Bias from input `bias_slot`, dropout from `seed_slot` and the next (seed, offset).
template <class Attr>
ScoreTerms score_terms(const Attr& attr, const NodeArgs& a, size_t bias_slot, size_t seed_slot, int64_t h, int64_t sq,
                       int64_t skv);
// One element of an INT32 or INT64 [n, 1, 1, 1] view.
int64_t read_index(const View& v, int64_t i);

}  // namespace dnngraph::ref::sdpa
