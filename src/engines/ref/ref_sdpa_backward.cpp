// Reference sdpa_backward: plain loops in double. P is rebuilt from the forward's STATS, as the
// flash backward does. One helper gives a query row's P (after dropout) and dS = d loss / d score
// over a range of keys; three kinds of tasks, each owning what it writes (no races), sum them into
// dQ (per batch and head), dK and dV (per batch, K or V head and block of keys) and dBias (per
// bias row block). K and V rows are read into doubles once per task. Rules: src/graph/sdpa.cpp.
#include <algorithm>
#include <cmath>
#include <vector>

#include "engines/ref/ops.hpp"
#include "engines/ref/ref_sdpa_util.hpp"

namespace dnngraph::ref {
namespace {

using sdpa::RowMask;
using sdpa::Rows;

constexpr int64_t kBlock = 64;  // keys per dK/dV task, query rows per dBias task

struct BwdShape {
  int64_t b, h, hk, hv, sq, skv, d, dv;
};

struct Operands {
  Rows q, k, v, o, d_o, dq, dk, dv;
  bool dq_ragged = false, dk_ragged = false, dv_ragged = false;
  sdpa::ScoreTerms terms;
  double scale = 1;
  std::vector<RowMask> masks;  // per batch
  View stats;
};

// Keys [j0, j1) of K head kh and V head vh of batch b, in double.
struct Keys {
  int64_t b = -1, kh = -1, vh = -1, j0 = 0, j1 = 0;
  std::vector<double> k, v;
  void ensure(const Operands& x, const BwdShape& s, int64_t bi, int64_t hi, int64_t from, int64_t to) {
    const int64_t new_kh = hi / (s.h / s.hk), new_vh = hi / (s.h / s.hv);
    if (b == bi && kh == new_kh && vh == new_vh && j0 == from && j1 == to) return;
    b = bi, kh = new_kh, vh = new_vh, j0 = from, j1 = to;
    k.resize(static_cast<size_t>((to - from) * s.d));
    v.resize(static_cast<size_t>((to - from) * s.dv));
    for (int64_t j = from; j < to; ++j) {
      for (int64_t c = 0; c < s.d; ++c) k[static_cast<size_t>((j - from) * s.d + c)] = x.k.load(bi, kh, j, c);
      for (int64_t c = 0; c < s.dv; ++c) v[static_cast<size_t>((j - from) * s.dv + c)] = x.v.load(bi, vh, j, c);
    }
  }
};

// Query row i of head hi: Q and dO in double, delta = rowsum(dO * O), the forward's logsumexp.
struct Query {
  std::vector<double> q, d_o;
  double delta = 0, lse = 0;
  void load(const Operands& x, const BwdShape& s, int64_t bi, int64_t hi, int64_t i) {
    q.resize(static_cast<size_t>(s.d));
    d_o.resize(static_cast<size_t>(s.dv));
    for (int64_t c = 0; c < s.d; ++c) q[static_cast<size_t>(c)] = x.q.load(bi, hi, i, c);
    delta = 0;
    for (int64_t c = 0; c < s.dv; ++c) {
      d_o[static_cast<size_t>(c)] = x.d_o.load(bi, hi, i, c);
      delta += d_o[static_cast<size_t>(c)] * x.o.load(bi, hi, i, c);
    }
    lse = sdpa::load4(x.stats, bi, hi, i, 0);
  }
};

// pd[j - j0] = P after dropout (what multiplied V), ds[j - j0] = dS, over the keys the Keys hold;
// 0 for keys the row does not see.
void row_grads(const Operands& x, const BwdShape& s, const Keys& keys, const Query& row, int64_t hi, int64_t i,
               std::vector<double>& pd, std::vector<double>& ds) {
  const RowMask& mask = x.masks[static_cast<size_t>(keys.b)];
  const int64_t n = keys.j1 - keys.j0;
  pd.assign(static_cast<size_t>(n), 0.0);
  ds.assign(static_cast<size_t>(n), 0.0);
  for (int64_t j = keys.j0; j < keys.j1; ++j) {
    if (j >= mask.seq_kv || !mask.visible(i, j)) continue;
    const double* kj = &keys.k[static_cast<size_t>((j - keys.j0) * s.d)];
    const double* vj = &keys.v[static_cast<size_t>((j - keys.j0) * s.dv)];
    double dot = 0, dp = 0;
    for (int64_t c = 0; c < s.d; ++c) dot += row.q[static_cast<size_t>(c)] * kj[c];
    for (int64_t c = 0; c < s.dv; ++c) dp += row.d_o[static_cast<size_t>(c)] * vj[c];
    const double p = std::exp(dot * x.scale + x.terms.add(keys.b, hi, i, j) - row.lse);
    const double z = x.terms.drop(keys.b, hi, i, j);
    pd[static_cast<size_t>(j - keys.j0)] = p * z;
    ds[static_cast<size_t>(j - keys.j0)] = p * (dp * z - row.delta);
  }
}

void dq_pass(const NodeArgs& a, const Operands& x, const BwdShape& s) {
  a.pool.parallel_for(s.b * s.h, [&](int64_t begin, int64_t end) {
    Keys keys;
    Query row;
    std::vector<double> pd, ds;
    for (int64_t t = begin; t < end; ++t) {
      const int64_t bi = t / s.h, hi = t % s.h;
      const RowMask& mask = x.masks[static_cast<size_t>(bi)];
      keys.ensure(x, s, bi, hi, 0, mask.seq_kv);
      for (int64_t i = 0; i < s.sq; ++i) {
        if (i >= mask.seq_q) {  // padded row: zeros, unless ragged (then the next batch's)
          if (!x.dq_ragged)
            for (int64_t c = 0; c < s.d; ++c) x.dq.store(bi, hi, i, c, 0.0);
          continue;
        }
        row.load(x, s, bi, hi, i);
        row_grads(x, s, keys, row, hi, i, pd, ds);
        std::vector<double> acc(static_cast<size_t>(s.d), 0.0);
        for (int64_t j = 0; j < mask.seq_kv; ++j) {
          if (ds[static_cast<size_t>(j)] == 0.0) continue;
          for (int64_t c = 0; c < s.d; ++c) acc[static_cast<size_t>(c)] += ds[static_cast<size_t>(j)] * keys.k[static_cast<size_t>(j * s.d + c)];
        }
        for (int64_t c = 0; c < s.d; ++c) x.dq.store(bi, hi, i, c, acc[static_cast<size_t>(c)] * x.scale);
      }
    }
  });
}

// dK (for_k) or dV of one (batch, K or V head, block of keys): sums over the Q heads of its group.
void dkv_pass(const NodeArgs& a, const Operands& x, const BwdShape& s, bool for_k) {
  const int64_t heads = for_k ? s.hk : s.hv, group = s.h / heads, width = for_k ? s.d : s.dv;
  const int64_t blocks = (s.skv + kBlock - 1) / kBlock;
  const Rows& dst = for_k ? x.dk : x.dv;
  const bool ragged = for_k ? x.dk_ragged : x.dv_ragged;
  a.pool.parallel_for(s.b * heads * blocks, [&](int64_t begin, int64_t end) {
    Keys keys;
    Query row;
    std::vector<double> pd, ds, acc;
    for (int64_t t = begin; t < end; ++t) {
      const int64_t bi = t / (heads * blocks), head = t / blocks % heads, j0 = t % blocks * kBlock;
      const int64_t j1 = std::min(j0 + kBlock, s.skv);
      const RowMask& mask = x.masks[static_cast<size_t>(bi)];
      acc.assign(static_cast<size_t>((j1 - j0) * width), 0.0);
      for (int64_t hi = head * group; hi < (head + 1) * group && j0 < mask.seq_kv; ++hi) {
        keys.ensure(x, s, bi, hi, j0, std::min(j1, mask.seq_kv));
        for (int64_t i = 0; i < mask.seq_q; ++i) {
          row.load(x, s, bi, hi, i);
          row_grads(x, s, keys, row, hi, i, pd, ds);
          for (int64_t j = keys.j0; j < keys.j1; ++j) {
            const double w = for_k ? ds[static_cast<size_t>(j - j0)] * x.scale : pd[static_cast<size_t>(j - j0)];
            if (w == 0.0) continue;
            const std::vector<double>& src = for_k ? row.q : row.d_o;
            for (int64_t c = 0; c < width; ++c) acc[static_cast<size_t>((j - j0) * width + c)] += w * src[static_cast<size_t>(c)];
          }
        }
      }
      const int64_t stop = ragged ? std::min(j1, mask.seq_kv) : j1;  // a ragged gradient's padded rows are the next batch's
      for (int64_t j = j0; j < stop; ++j)
        for (int64_t c = 0; c < width; ++c) dst.store(bi, head, j, c, acc[static_cast<size_t>((j - j0) * width + c)]);
    }
  });
}

// dBias rows [i0, i0 + kBlock) of (bb, hb): dS summed over the batches and heads the bias broadcasts over.
void dbias_pass(const NodeArgs& a, const Operands& x, const BwdShape& s) {
  const View& db = a.out[3];
  const int64_t nb = db.dims[0], nh = db.dims[1], blocks = (s.sq + kBlock - 1) / kBlock;
  a.pool.parallel_for(nb * nh * blocks, [&](int64_t begin, int64_t end) {
    Keys keys;
    Query row;
    std::vector<double> pd, ds, acc;
    for (int64_t t = begin; t < end; ++t) {
      const int64_t bb = t / (nh * blocks), hb = t / blocks % nh, i0 = t % blocks * kBlock;
      const int64_t i1 = std::min(i0 + kBlock, s.sq);
      acc.assign(static_cast<size_t>((i1 - i0) * s.skv), 0.0);
      for (int64_t bi = (nb == 1 ? 0 : bb); bi < (nb == 1 ? s.b : bb + 1); ++bi)
        for (int64_t hi = (nh == 1 ? 0 : hb); hi < (nh == 1 ? s.h : hb + 1); ++hi) {
          const RowMask& mask = x.masks[static_cast<size_t>(bi)];
          keys.ensure(x, s, bi, hi, 0, mask.seq_kv);
          for (int64_t i = i0; i < std::min(i1, mask.seq_q); ++i) {
            row.load(x, s, bi, hi, i);
            row_grads(x, s, keys, row, hi, i, pd, ds);
            for (int64_t j = 0; j < mask.seq_kv; ++j) acc[static_cast<size_t>((i - i0) * s.skv + j)] += ds[static_cast<size_t>(j)];
          }
        }
      for (int64_t i = i0; i < i1; ++i)
        for (int64_t j = 0; j < s.skv; ++j) sdpa::store4(db, bb, hb, i, j, acc[static_cast<size_t>((i - i0) * s.skv + j)]);
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
  x.stats = a.in[slot::SB_STATS];
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
  const ir::Tensor& dbias = a.graph.tensor(a.node.outputs[3]);
  if (a.in[slot::SB_BIAS].present() && (!dbias.is_virtual || !a.graph.consumers(dbias.id).empty()))
    dbias_pass(a, x, s);  // nobody reads a virtual dBias that no node consumes
  return {};
}

}  // namespace dnngraph::ref
