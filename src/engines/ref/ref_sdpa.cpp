// Reference scaled dot-product attention: plain loops in double, one (batch, head) per task.
// The masking rules are those of src/graph/sdpa.cpp.
#include <algorithm>
#include <cmath>
#include <limits>
#include <vector>

#include "engines/ref/ops.hpp"
#include "engines/ref/ref_sdpa_util.hpp"

namespace dnngraph::ref {
namespace {

struct SdpaShape {
  int64_t b, h, hk, sq, skv, d, dv;
};

using sdpa::load4;
using sdpa::RowMask;
using sdpa::store4;

// One query row: scores over visible keys, softmax, weighted sum of V rows.
void attend_row(const RowMask& mask, const NodeArgs& a, const SdpaShape& s, double scale, int64_t bi, int64_t hi,
                int64_t i, std::vector<double>& score) {
  const View &q = a.in[slot::SDPA_Q], &k = a.in[slot::SDPA_K], &v = a.in[slot::SDPA_V];
  const View &o = a.out[0], &stats = a.out[1];
  const int64_t kh = hi / (s.h / s.hk);
  constexpr double kNegInf = -std::numeric_limits<double>::infinity();
  double row_max = kNegInf;
  const int64_t seq_kv = mask.seq_kv;
  for (int64_t j = 0; j < seq_kv; ++j) {
    double& sc = score[static_cast<size_t>(j)];
    sc = kNegInf;
    if (!mask.visible(i, j)) continue;
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
  const double scale = sdpa::attn_scale(attr, s.d);
  a.pool.parallel_for(s.b * s.h, [&](int64_t begin, int64_t end) {
    std::vector<double> score(static_cast<size_t>(s.skv));
    for (int64_t bh = begin; bh < end; ++bh) {
      const int64_t bi = bh / s.h, hi = bh % s.h;
      const RowMask mask = sdpa::row_mask(attr, a.in[slot::SDPA_SEQ_Q], a.in[slot::SDPA_SEQ_KV], s.sq, s.skv, bi);
      for (int64_t i = 0; i < s.sq; ++i) {
        if (i < mask.seq_q) {
          attend_row(mask, a, s, scale, bi, hi, i, score);
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
