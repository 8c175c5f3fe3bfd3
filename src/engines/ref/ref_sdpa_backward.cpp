// Reference sdpa_backward: plain loops in double, one (batch, KV head) per task, so that the heads
// of a GQA group add into that task's dK and dV without races. P is rebuilt from the forward's
// STATS, as the flash backward does. The rules are those of src/graph/sdpa.cpp.
#include <cmath>
#include <vector>

#include "engines/ref/ops.hpp"
#include "engines/ref/ref_sdpa_util.hpp"

namespace dnngraph::ref {
namespace {

using sdpa::load4;
using sdpa::RowMask;
using sdpa::store4;

struct BwdShape {
  int64_t b, h, hk, sq, skv, d, dv;
};

// A (batch, KV head)'s K and V rows in double, and the dK, dV sums.
struct KvHead {
  std::vector<double> k, v, dk, dv;
};

void load_kv(const NodeArgs& a, const BwdShape& s, int64_t bi, int64_t kh, KvHead& kv) {
  kv.k.assign(static_cast<size_t>(s.skv * s.d), 0.0);
  kv.v.assign(static_cast<size_t>(s.skv * s.dv), 0.0);
  kv.dk.assign(kv.k.size(), 0.0);
  kv.dv.assign(kv.v.size(), 0.0);
  for (int64_t j = 0; j < s.skv; ++j) {
    for (int64_t c = 0; c < s.d; ++c) kv.k[static_cast<size_t>(j * s.d + c)] = load4(a.in[slot::SB_K], bi, kh, j, c);
    for (int64_t c = 0; c < s.dv; ++c) kv.v[static_cast<size_t>(j * s.dv + c)] = load4(a.in[slot::SB_V], bi, kh, j, c);
  }
}

// Query row i of head hi: its dQ row, and its share of dK and dV.
void backward_row(const RowMask& mask, const NodeArgs& a, const BwdShape& s, double scale, int64_t bi, int64_t hi,
                  int64_t i, KvHead& kv) {
  std::vector<double> q(static_cast<size_t>(s.d)), d_o(static_cast<size_t>(s.dv)), dq(static_cast<size_t>(s.d), 0.0);
  double delta = 0;  // rowsum(dO * O)
  for (int64_t c = 0; c < s.d; ++c) q[static_cast<size_t>(c)] = load4(a.in[slot::SB_Q], bi, hi, i, c);
  for (int64_t c = 0; c < s.dv; ++c) {
    d_o[static_cast<size_t>(c)] = load4(a.in[slot::SB_DO], bi, hi, i, c);
    delta += d_o[static_cast<size_t>(c)] * load4(a.in[slot::SB_O], bi, hi, i, c);
  }
  const double lse = load4(a.in[slot::SB_STATS], bi, hi, i, 0);
  for (int64_t j = 0; j < mask.seq_kv; ++j) {
    if (!mask.visible(i, j)) continue;
    const double* kj = &kv.k[static_cast<size_t>(j * s.d)];
    const double* vj = &kv.v[static_cast<size_t>(j * s.dv)];
    double dot = 0, dp = 0;
    for (int64_t c = 0; c < s.d; ++c) dot += q[static_cast<size_t>(c)] * kj[c];
    for (int64_t c = 0; c < s.dv; ++c) dp += d_o[static_cast<size_t>(c)] * vj[c];
    const double p = std::exp(dot * scale - lse);
    const double ds = p * (dp - delta) * scale;
    for (int64_t c = 0; c < s.d; ++c) {
      dq[static_cast<size_t>(c)] += ds * kj[c];
      kv.dk[static_cast<size_t>(j * s.d + c)] += ds * q[static_cast<size_t>(c)];
    }
    for (int64_t c = 0; c < s.dv; ++c) kv.dv[static_cast<size_t>(j * s.dv + c)] += p * d_o[static_cast<size_t>(c)];
  }
  for (int64_t c = 0; c < s.d; ++c) store4(a.out[0], bi, hi, i, c, dq[static_cast<size_t>(c)]);
}

}  // namespace

Status run(const SdpaBackwardAttr& attr, const NodeArgs& a) {
  const View &q = a.in[slot::SB_Q], &k = a.in[slot::SB_K], &v = a.in[slot::SB_V];
  const BwdShape s{q.dims[0], q.dims[1], k.dims[1], q.dims[2], k.dims[2], q.dims[3], v.dims[3]};
  const double scale = sdpa::attn_scale(attr, s.d);
  const int64_t group = s.h / s.hk;
  a.pool.parallel_for(s.b * s.hk, [&](int64_t begin, int64_t end) {
    KvHead kv;
    for (int64_t t = begin; t < end; ++t) {
      const int64_t bi = t / s.hk, kh = t % s.hk;
      const RowMask mask = sdpa::row_mask(attr, a.in[slot::SB_SEQ_Q], a.in[slot::SB_SEQ_KV], s.sq, s.skv, bi);
      load_kv(a, s, bi, kh, kv);
      for (int64_t hi = kh * group; hi < (kh + 1) * group; ++hi)
        for (int64_t i = 0; i < s.sq; ++i) {
          if (i < mask.seq_q) {
            backward_row(mask, a, s, scale, bi, hi, i, kv);
            continue;
          }
          for (int64_t c = 0; c < s.d; ++c) store4(a.out[0], bi, hi, i, c, 0.0);  // padded row
        }
      for (int64_t j = 0; j < s.skv; ++j) {
        for (int64_t c = 0; c < s.d; ++c) store4(a.out[1], bi, kh, j, c, kv.dk[static_cast<size_t>(j * s.d + c)]);
        for (int64_t c = 0; c < s.dv; ++c) store4(a.out[2], bi, kh, j, c, kv.dv[static_cast<size_t>(j * s.dv + c)]);
      }
    }
  });
  return {};
}

}  // namespace dnngraph::ref
