// Reference scaled dot-product attention: plain loops in double, one (batch, head) per task.
// The masking rules are those of src/graph/sdpa.cpp.
#include <algorithm>
#include <cmath>
#include <limits>
#include <vector>

#include "engines/ref/ops.hpp"

namespace dnngraph::ref {
namespace {

struct SdpaShape {
  int64_t b, h, hk, sq, skv, d, dv;
};

// Per-batch lengths: the padding mask's seq_len tensors clamped to the dims, else the dims.
void batch_lengths(const NodeArgs& a, const SdpaShape& s, int64_t batch, int64_t& sq, int64_t& skv) {
  sq = s.sq;
  skv = s.skv;
  const View& lq = a.in[slot::SDPA_SEQ_Q];
  const View& lkv = a.in[slot::SDPA_SEQ_KV];
  if (lq.present()) sq = std::clamp(static_cast<int64_t>(lq.at({batch, 0, 0, 0})), int64_t{0}, s.sq);
  if (lkv.present()) skv = std::clamp(static_cast<int64_t>(lkv.at({batch, 0, 0, 0})), int64_t{0}, s.skv);
}

// Compared as the key's distance right of the diagonal, which is small: i + offset + bound could
// overflow for bounds near INT64_MAX.
bool key_visible(const SdpaAttr& attr, int64_t i, int64_t j, int64_t offset) {
  const int64_t ahead = j - (i + offset);
  if (auto r = attr.get_diagonal_band_right_bound(); r && ahead > *r) return false;
  if (auto l = attr.get_diagonal_band_left_bound(); l && -ahead >= *l) return false;
  return true;
}

// Element offset of [b, h, s, c] in a rank-4 view.
int64_t offset4(const View& t, int64_t b, int64_t h, int64_t s, int64_t c) {
  return b * t.strides[0] + h * t.strides[1] + s * t.strides[2] + c * t.strides[3];
}
double load4(const View& t, int64_t b, int64_t h, int64_t s, int64_t c) {
  return dtype::load(t.data, t.dtype, offset4(t, b, h, s, c));
}
void store4(const View& t, int64_t b, int64_t h, int64_t s, int64_t c, double v) {
  dtype::store(t.data, t.dtype, offset4(t, b, h, s, c), v);
}

// One query row: scores over visible keys, softmax, weighted sum of V rows.
void attend_row(const SdpaAttr& attr, const NodeArgs& a, const SdpaShape& s, double scale, int64_t bi, int64_t hi,
                int64_t i, int64_t seq_kv, int64_t offset, std::vector<double>& score) {
  const View &q = a.in[slot::SDPA_Q], &k = a.in[slot::SDPA_K], &v = a.in[slot::SDPA_V];
  const View &o = a.out[0], &stats = a.out[1];
  const int64_t kh = hi / (s.h / s.hk);
  constexpr double kNegInf = -std::numeric_limits<double>::infinity();
  double row_max = kNegInf;
  for (int64_t j = 0; j < seq_kv; ++j) {
    double& sc = score[static_cast<size_t>(j)];
    sc = kNegInf;
    if (!key_visible(attr, i, j, offset)) continue;
    double dot = 0;
    for (int64_t c = 0; c < s.d; ++c) dot += load4(q, bi, hi, i, c) * load4(k, bi, kh, j, c);
    sc = dot * scale;
    row_max = std::max(row_max, sc);
  }
  if (row_max == kNegInf) {  // no visible key
    for (int64_t c = 0; c < s.dv; ++c) store4(o, bi, hi, i, c, 0.0);
    if (stats.present()) store4(stats, bi, hi, i, 0, 0.0);
    return;
  }
  double sum = 0;
  for (int64_t j = 0; j < seq_kv; ++j) {
    double& sc = score[static_cast<size_t>(j)];
    sc = std::exp(sc - row_max);  // masked keys: exp(-inf) = 0
    sum += sc;
  }
  for (int64_t c = 0; c < s.dv; ++c) {
    double acc = 0;
    for (int64_t j = 0; j < seq_kv; ++j)
      if (score[static_cast<size_t>(j)] != 0.0) acc += score[static_cast<size_t>(j)] * load4(v, bi, kh, j, c);
    store4(o, bi, hi, i, c, acc / sum);
  }
  if (stats.present()) store4(stats, bi, hi, i, 0, row_max + std::log(sum));
}

}  // namespace

Status run(const SdpaAttr& attr, const NodeArgs& a) {
  const View &q = a.in[slot::SDPA_Q], &k = a.in[slot::SDPA_K], &v = a.in[slot::SDPA_V];
  const SdpaShape s{q.dims[0], q.dims[1], k.dims[1], q.dims[2], k.dims[2], q.dims[3], v.dims[3]};
  const double scale = attr.get_attn_scale().value_or(1.0 / std::sqrt(static_cast<double>(s.d)));
  const bool bottom_right = attr.get_diagonal_alignment() == DiagonalAlignment::BOTTOM_RIGHT;
  a.pool.parallel_for(s.b * s.h, [&](int64_t begin, int64_t end) {
    std::vector<double> score(static_cast<size_t>(s.skv));
    for (int64_t bh = begin; bh < end; ++bh) {
      const int64_t bi = bh / s.h, hi = bh % s.h;
      int64_t seq_q = 0, seq_kv = 0;
      batch_lengths(a, s, bi, seq_q, seq_kv);
      const int64_t offset = bottom_right ? seq_kv - seq_q : 0;
      for (int64_t i = 0; i < s.sq; ++i) {
        if (i < seq_q) {
          attend_row(attr, a, s, scale, bi, hi, i, seq_kv, offset, score);
          continue;
        }
        for (int64_t c = 0; c < s.dv; ++c) store4(a.out[0], bi, hi, i, c, 0.0);  // padded row
        if (a.out[1].present()) store4(a.out[1], bi, hi, i, 0, 0.0);
      }
    }
  });
  return {};
}

}  // namespace dnngraph::ref
