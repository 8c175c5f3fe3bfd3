// Reference sdpa_backward: plain loops in double. P is rebuilt from the forward's STATS, as the
// flash backward does. One helper gives a query row's P (after dropout) and dS = d loss / d score;
// four passes, each owning what it writes (no races), sum them into dQ (per query row), dK (per
// batch and K head), dV (per batch and V head) and dBias (per row of the bias). The rules are
// those of src/graph/sdpa.cpp.
#include <cmath>
#include <vector>

#include "engines/ref/ops.hpp"
#include "engines/ref/ref_sdpa_util.hpp"

namespace dnngraph::ref {
namespace {

using sdpa::RowMask;
using sdpa::Rows;

struct BwdShape {
  int64_t b, h, hk, hv, sq, skv, d, dv;
};

struct Operands {
  Rows q, k, v, o, d_o, dq, dk, dv;
  bool dq_ragged = false, dk_ragged = false, dv_ragged = false;
  sdpa::ScoreTerms terms;
  double scale = 1;
  std::vector<RowMask> masks;  // per batch
};

// Row i of head hi: pd[j] = P after dropout (what multiplied V), ds[j] = dS; 0 for keys it does not see.
void row_grads(const Operands& x, const View& stats, const BwdShape& s, int64_t bi, int64_t hi, int64_t i,
               std::vector<double>& pd, std::vector<double>& ds) {
  const RowMask& mask = x.masks[static_cast<size_t>(bi)];
  const int64_t kh = hi / (s.h / s.hk), vh = hi / (s.h / s.hv);
  pd.assign(static_cast<size_t>(s.skv), 0.0);
  ds.assign(static_cast<size_t>(s.skv), 0.0);
  double delta = 0;  // rowsum(dO * O)
  for (int64_t c = 0; c < s.dv; ++c) delta += x.d_o.load(bi, hi, i, c) * x.o.load(bi, hi, i, c);
  const double lse = sdpa::load4(stats, bi, hi, i, 0);
  for (int64_t j = 0; j < mask.seq_kv; ++j) {
    if (!mask.visible(i, j)) continue;
    double dot = 0, dp = 0;
    for (int64_t c = 0; c < s.d; ++c) dot += x.q.load(bi, hi, i, c) * x.k.load(bi, kh, j, c);
    for (int64_t c = 0; c < s.dv; ++c) dp += x.d_o.load(bi, hi, i, c) * x.v.load(bi, vh, j, c);
    const double p = std::exp(dot * x.scale + x.terms.add(bi, hi, i, j) - lse);
    const double z = x.terms.drop(bi, hi, i, j);
    pd[static_cast<size_t>(j)] = p * z;
    ds[static_cast<size_t>(j)] = p * (dp * z - delta);
  }
}

void dq_pass(const NodeArgs& a, const Operands& x, const BwdShape& s) {
  a.pool.parallel_for(s.b * s.h * s.sq, [&](int64_t begin, int64_t end) {
    std::vector<double> pd, ds;
    for (int64_t t = begin; t < end; ++t) {
      const int64_t bi = t / (s.h * s.sq), hi = t / s.sq % s.h, i = t % s.sq;
      if (i >= x.masks[static_cast<size_t>(bi)].seq_q) {  // padded row: zeros, unless ragged
        if (!x.dq_ragged)
          for (int64_t c = 0; c < s.d; ++c) x.dq.store(bi, hi, i, c, 0.0);
        continue;
      }
      row_grads(x, a.in[slot::SB_STATS], s, bi, hi, i, pd, ds);
      const int64_t kh = hi / (s.h / s.hk);
      for (int64_t c = 0; c < s.d; ++c) {
        double acc = 0;
        for (int64_t j = 0; j < s.skv; ++j)
          if (ds[static_cast<size_t>(j)] != 0.0) acc += ds[static_cast<size_t>(j)] * x.k.load(bi, kh, j, c);
        x.dq.store(bi, hi, i, c, acc * x.scale);
      }
    }
  });
}

// dK (for_k) or dV of one (batch, K or V head): sums over the Q heads of its group.
void dkv_pass(const NodeArgs& a, const Operands& x, const BwdShape& s, bool for_k) {
  const int64_t heads = for_k ? s.hk : s.hv, group = s.h / heads, width = for_k ? s.d : s.dv;
  const Rows& dst = for_k ? x.dk : x.dv;
  const bool ragged = for_k ? x.dk_ragged : x.dv_ragged;
  a.pool.parallel_for(s.b * heads, [&](int64_t begin, int64_t end) {
    std::vector<double> pd, ds, acc;
    for (int64_t t = begin; t < end; ++t) {
      const int64_t bi = t / heads, kh = t % heads;
      const RowMask& mask = x.masks[static_cast<size_t>(bi)];
      acc.assign(static_cast<size_t>(s.skv * width), 0.0);
      for (int64_t hi = kh * group; hi < (kh + 1) * group; ++hi)
        for (int64_t i = 0; i < mask.seq_q; ++i) {
          row_grads(x, a.in[slot::SB_STATS], s, bi, hi, i, pd, ds);
          for (int64_t j = 0; j < mask.seq_kv; ++j) {
            const double w = for_k ? ds[static_cast<size_t>(j)] * x.scale : pd[static_cast<size_t>(j)];
            if (w == 0.0) continue;
            for (int64_t c = 0; c < width; ++c)
              acc[static_cast<size_t>(j * width + c)] += w * (for_k ? x.q.load(bi, hi, i, c) : x.d_o.load(bi, hi, i, c));
          }
        }
      const int64_t rows = ragged ? mask.seq_kv : s.skv;  // a ragged gradient's padded rows are the next batch's
      for (int64_t j = 0; j < rows; ++j)
        for (int64_t c = 0; c < width; ++c) dst.store(bi, kh, j, c, acc[static_cast<size_t>(j * width + c)]);
    }
  });
}

// dBias row (bb, hb, i): dS summed over the batches and heads the bias broadcasts over.
void dbias_pass(const NodeArgs& a, const Operands& x, const BwdShape& s) {
  const View& db = a.out[3];
  const int64_t nb = db.dims[0], nh = db.dims[1];
  a.pool.parallel_for(nb * nh * s.sq, [&](int64_t begin, int64_t end) {
    std::vector<double> pd, ds, acc;
    for (int64_t t = begin; t < end; ++t) {
      const int64_t bb = t / (nh * s.sq), hb = t / s.sq % nh, i = t % s.sq;
      acc.assign(static_cast<size_t>(s.skv), 0.0);
      for (int64_t bi = (nb == 1 ? 0 : bb); bi < (nb == 1 ? s.b : bb + 1); ++bi)
        for (int64_t hi = (nh == 1 ? 0 : hb); hi < (nh == 1 ? s.h : hb + 1); ++hi) {
          if (i >= x.masks[static_cast<size_t>(bi)].seq_q) continue;
          row_grads(x, a.in[slot::SB_STATS], s, bi, hi, i, pd, ds);
          for (int64_t j = 0; j < s.skv; ++j) acc[static_cast<size_t>(j)] += ds[static_cast<size_t>(j)];
        }
      for (int64_t j = 0; j < s.skv; ++j) sdpa::store4(db, bb, hb, i, j, acc[static_cast<size_t>(j)]);
    }
  });
}

Status resolve(const SdpaBackwardAttr& attr, const NodeArgs& a, const BwdShape& s, Operands& x) {
  std::vector<int64_t> lq, lkv;
  for (int64_t b = 0; b < s.b; ++b) {
    x.masks.push_back(sdpa::row_mask(attr, a.in[slot::SB_SEQ_Q], a.in[slot::SB_SEQ_KV], s.sq, s.skv, b));
    lq.push_back(x.masks.back().seq_q);
    lkv.push_back(x.masks.back().seq_kv);
  }
  struct Item {
    bool out;
    size_t slot, ragged;
    const std::vector<int64_t>* rows;
    Rows* dst;
  };
  const Item items[] = {{false, slot::SB_Q, slot::SB_Q_RAGGED, &lq, &x.q},      {false, slot::SB_K, slot::SB_K_RAGGED, &lkv, &x.k},
                        {false, slot::SB_V, slot::SB_V_RAGGED, &lkv, &x.v},     {false, slot::SB_O, slot::SB_O_RAGGED, &lq, &x.o},
                        {false, slot::SB_DO, slot::SB_DO_RAGGED, &lq, &x.d_o},  {true, 0, slot::SB_DQ_RAGGED, &lq, &x.dq},
                        {true, 1, slot::SB_DK_RAGGED, &lkv, &x.dk},             {true, 2, slot::SB_DV_RAGGED, &lkv, &x.dv}};
  for (const Item& it : items)
    if (auto st = sdpa::rows_of(a, it.out, it.slot, a.in[it.ragged], *it.rows, *it.dst); !st.ok()) return st;
  x.dq_ragged = a.in[slot::SB_DQ_RAGGED].present();
  x.dk_ragged = a.in[slot::SB_DK_RAGGED].present();
  x.dv_ragged = a.in[slot::SB_DV_RAGGED].present();
  return {};
}

}  // namespace

Status run(const SdpaBackwardAttr& attr, const NodeArgs& a) {
  const View &q = a.in[slot::SB_Q], &k = a.in[slot::SB_K], &v = a.in[slot::SB_V];
  const BwdShape s{q.dims[0], q.dims[1], k.dims[1], v.dims[1], q.dims[2], k.dims[2], q.dims[3], v.dims[3]};
  Operands x;
  if (auto st = resolve(attr, a, s, x); !st.ok()) return st;
  x.scale = sdpa::attn_scale(attr, s.d);
  x.terms = sdpa::score_terms(attr, a, slot::SB_BIAS, slot::SB_SEED, s.h, s.sq, s.skv);
  dq_pass(a, x, s);
  dkv_pass(a, x, s, true);
  dkv_pass(a, x, s, false);
  if (a.in[slot::SB_BIAS].present()) dbias_pass(a, x, s);
  return {};
}

}  // namespace dnngraph::ref
