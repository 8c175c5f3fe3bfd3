// Reference scaled dot-product attention: plain loops in double, one (batch, head) per task.
// The rules (masks, bias, ALiBi, dropout, ragged and paged rows) are those of src/graph/sdpa.cpp.
#include <algorithm>
#include <cmath>
#include <limits>
#include <vector>

#include "engines/ref/ops.hpp"
#include "engines/ref/ref_sdpa_util.hpp"

namespace dnngraph::ref {
namespace {

struct SdpaShape {
  int64_t b, h, hk, hv, sq, skv, d, dv;
};

using sdpa::RowMask;
using sdpa::Rows;

// Q, K, V, O resolved per batch, and what the scores get added.
struct Operands {
  Rows q, k, v, o;
  bool o_ragged = false;
  sdpa::ScoreTerms terms;
};

// A task's K and V rows (of heads kh, vh of batch b) in double, and one query row.
struct HeadRows {
  int64_t b = -1, kh = -1, vh = -1;
  std::vector<double> k, v, q, score;
};

// One query row: scores over visible keys, softmax, weighted sum of V rows (dropped ones left out).
void attend_row(const RowMask& mask, const Operands& x, const View& stats, const SdpaShape& s, double scale,
                int64_t bi, int64_t hi, int64_t i, HeadRows& hr) {
  constexpr double kNegInf = -std::numeric_limits<double>::infinity();
  for (int64_t c = 0; c < s.d; ++c) hr.q[static_cast<size_t>(c)] = x.q.load(bi, hi, i, c);
  double row_max = kNegInf;
  for (int64_t j = 0; j < mask.seq_kv; ++j) {
    double& sc = hr.score[static_cast<size_t>(j)];
    sc = kNegInf;
    if (!mask.visible(i, j)) continue;
    const double* kj = &hr.k[static_cast<size_t>(j * s.d)];
    double dot = 0;
    for (int64_t c = 0; c < s.d; ++c) dot += hr.q[static_cast<size_t>(c)] * kj[c];
    sc = dot * scale + x.terms.add(bi, hi, i, j);
    row_max = std::max(row_max, sc);
  }
  if (row_max == kNegInf) {  // no visible key
    for (int64_t c = 0; c < s.dv; ++c) x.o.store(bi, hi, i, c, 0.0);
    if (stats.present()) sdpa::store4(stats, bi, hi, i, 0, 0.0);
    return;
  }
  double sum = 0;
  for (int64_t j = 0; j < mask.seq_kv; ++j) {
    double& sc = hr.score[static_cast<size_t>(j)];
    sc = std::exp(sc - row_max);  // masked keys: exp(-inf) = 0
    sum += sc;
  }
  for (int64_t j = 0; j < mask.seq_kv; ++j) hr.score[static_cast<size_t>(j)] *= x.terms.drop(bi, hi, i, j);
  std::vector<double> acc(static_cast<size_t>(s.dv), 0.0);
  for (int64_t j = 0; j < mask.seq_kv; ++j) {
    const double p = hr.score[static_cast<size_t>(j)];
    if (p == 0.0) continue;
    const double* vj = &hr.v[static_cast<size_t>(j * s.dv)];
    for (int64_t c = 0; c < s.dv; ++c) acc[static_cast<size_t>(c)] += p * vj[c];
  }
  for (int64_t c = 0; c < s.dv; ++c) x.o.store(bi, hi, i, c, acc[static_cast<size_t>(c)] / sum);
  if (stats.present()) sdpa::store4(stats, bi, hi, i, 0, row_max + std::log(sum));
}

// The dropout mask of every element of [b, h, sq, skv], masked or not.
void dump_mask(const NodeArgs& a, const SdpaShape& s, const sdpa::ScoreTerms& terms) {
  const View& dump = a.out[2];
  a.pool.parallel_for(s.b * s.h, [&](int64_t begin, int64_t end) {
    for (int64_t bh = begin; bh < end; ++bh)
      for (int64_t i = 0; i < s.sq; ++i)
        for (int64_t j = 0; j < s.skv; ++j)
          sdpa::store4(dump, bh / s.h, bh % s.h, i, j, terms.drop(bh / s.h, bh % s.h, i, j) != 0.0 ? 1.0 : 0.0);
  });
}

Status resolve(const SdpaAttr& attr, const NodeArgs& a, const SdpaShape& s, Operands& x) {
  std::vector<int64_t> lq(static_cast<size_t>(s.b)), lkv(static_cast<size_t>(s.b));
  for (int64_t b = 0; b < s.b; ++b) {
    const RowMask m = sdpa::row_mask(attr, a.in[slot::SDPA_SEQ_Q], a.in[slot::SDPA_SEQ_KV], s.sq, s.skv, b);
    lq[static_cast<size_t>(b)] = m.seq_q, lkv[static_cast<size_t>(b)] = m.seq_kv;
  }
  if (auto st = sdpa::rows_of(a, false, slot::SDPA_Q, a.in[slot::SDPA_Q_RAGGED], lq, x.q); !st.ok()) return st;
  if (auto st = sdpa::rows_of(a, true, 0, a.in[slot::SDPA_O_RAGGED], lq, x.o); !st.ok()) return st;
  x.o_ragged = a.in[slot::SDPA_O_RAGGED].present();
  if (a.in[slot::SDPA_K_TABLE].present()) {
    if (auto st = sdpa::paged_rows_of(a, slot::SDPA_K, slot::SDPA_K_TABLE, a.in[slot::SDPA_K_TABLE_RAGGED], lkv, x.k);
        !st.ok())
      return st;
    return sdpa::paged_rows_of(a, slot::SDPA_V, slot::SDPA_V_TABLE, a.in[slot::SDPA_V_TABLE_RAGGED], lkv, x.v);
  }
  if (auto st = sdpa::rows_of(a, false, slot::SDPA_K, a.in[slot::SDPA_K_RAGGED], lkv, x.k); !st.ok()) return st;
  return sdpa::rows_of(a, false, slot::SDPA_V, a.in[slot::SDPA_V_RAGGED], lkv, x.v);
}

}  // namespace

Status run(const SdpaAttr& attr, const NodeArgs& a) {
  const View &q = a.in[slot::SDPA_Q], &k = a.in[slot::SDPA_K], &v = a.in[slot::SDPA_V];
  const bool paged = a.in[slot::SDPA_K_TABLE].present();
  const int64_t skv = paged ? *attr.get_paged_attention_max_seq_len_kv() : k.dims[2];
  const SdpaShape s{q.dims[0], q.dims[1], k.dims[1], v.dims[1], q.dims[2], skv, q.dims[3], v.dims[3]};
  const double scale = sdpa::attn_scale(attr, s.d);
  Operands x;
  if (auto st = resolve(attr, a, s, x); !st.ok()) return st;
  x.terms = sdpa::score_terms(attr, a, slot::SDPA_BIAS, slot::SDPA_SEED, s.h, s.sq, s.skv);
  const View& stats = a.out[1];
  if (x.terms.dropout && !a.graph.tensor(a.node.outputs[2]).is_virtual) dump_mask(a, s, x.terms);
  a.pool.parallel_for(s.b * s.h, [&](int64_t begin, int64_t end) {
    HeadRows hr;
    hr.q.resize(static_cast<size_t>(s.d));
    hr.score.resize(static_cast<size_t>(s.skv));
    for (int64_t bh = begin; bh < end; ++bh) {
      const int64_t bi = bh / s.h, hi = bh % s.h;
      const RowMask mask = sdpa::row_mask(attr, a.in[slot::SDPA_SEQ_Q], a.in[slot::SDPA_SEQ_KV], s.sq, s.skv, bi);
      const int64_t kh = hi / (s.h / s.hk), vh = hi / (s.h / s.hv);
      if (hr.b != bi || hr.kh != kh || hr.vh != vh) {  // the keys a batch holds, once per task and head
        sdpa::load_rows(x.k, bi, kh, mask.seq_kv, s.d, hr.k);
        sdpa::load_rows(x.v, bi, vh, mask.seq_kv, s.dv, hr.v);
        hr.b = bi, hr.kh = kh, hr.vh = vh;
      }
      for (int64_t i = 0; i < s.sq; ++i) {
        if (i < mask.seq_q) {
          attend_row(mask, x, stats, s, scale, bi, hi, i, hr);
          continue;
        }
        // Padded rows: zeros, except in a ragged O, where they belong to the next batch.
        if (!x.o_ragged)
          for (int64_t c = 0; c < s.dv; ++c) x.o.store(bi, hi, i, c, 0.0);
        if (stats.present()) sdpa::store4(stats, bi, hi, i, 0, 0.0);
      }
    }
  });
  return {};
}

}  // namespace dnngraph::ref
