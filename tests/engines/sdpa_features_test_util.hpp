// Helpers for the tests of sdpa's optional inputs (bias, ALiBi, dropout, ragged offsets, paged K
// and V, K and V of different head counts) on any CPU-handle engine: a case, its seeded inputs
// in BSHD strides (packed THD when ragged: batch b's rows start at the prefix sum of the lengths
// before it), the forward and backward graphs, runs with outputs poisoned with NaN, comparisons.
#pragma once
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <numeric>
#include <random>
#include <string>
#include <vector>

#include "core/dtype.hpp"
#include "dnngraph/dnngraph.hpp"
#include "sdpa_test_util.hpp"

namespace sdpa_features_test {

namespace dg = dnngraph;
using sdpa_test::Mask;

struct FCase {
  int64_t b = 2, h = 2, hk = 1, hv = 1, sq = 5, skv = 7, d = 8, dv = 8;
  dg::DataType type = dg::DataType::FLOAT;
  Mask mask = Mask::NONE;
  int64_t left = 1, right = 0;
  bool padding = false, ragged = false, alibi = false, dropout = false, paged = false, packed_tables = false;
  int64_t bias_b = 0, bias_h = 0;  // the bias's dims 0 and 1; 0: no bias
  int64_t block = 4;               // keys per page when paged
  double p = 0.25;
  bool bias() const { return bias_b > 0; }
  std::string describe() const {
    return "b" + std::to_string(b) + " h" + std::to_string(h) + " hk" + std::to_string(hk) + " hv" +
           std::to_string(hv) + " sq" + std::to_string(sq) + " skv" + std::to_string(skv) + " d" + std::to_string(d) +
           " dv" + std::to_string(dv) + " " + std::string(dg::to_string(type)) + " mask" +
           std::to_string(static_cast<int>(mask)) + (padding ? " padding" : "") + (ragged ? " ragged" : "") +
           (bias() ? " bias" + std::to_string(bias_b) + "x" + std::to_string(bias_h) : "") + (alibi ? " alibi" : "") +
           (dropout ? " dropout" : "") + (paged ? " paged" + std::to_string(block) : "") +
           (packed_tables ? " packed_tables" : "");
  }
};

// A flat host buffer of `n` elements of `type`.
struct Buf {
  dg::DataType type = dg::DataType::FLOAT;
  std::vector<unsigned char> bytes;
  Buf() = default;
  Buf(dg::DataType t, int64_t n) : type(t), bytes(static_cast<size_t>(n) * dg::size_of(t)) {}
  int64_t count() const { return static_cast<int64_t>(bytes.size() / dg::size_of(type)); }
  double at(int64_t i) const { return dg::dtype::load(bytes.data(), type, i); }
  void set(int64_t i, double v) { dg::dtype::store(bytes.data(), type, i, v); }
  void random(std::mt19937& rng) {
    std::uniform_real_distribution<double> u(-1.5, 1.5);
    for (int64_t i = 0; i < count(); ++i) set(i, u(rng));
  }
  void poison() {
    for (int64_t i = 0; i < count(); ++i) set(i, std::nan(""));
  }
  void* ptr() const { return const_cast<unsigned char*>(bytes.data()); }
};

// Element offset of row (b, h, s) of a [b, heads, s, width] BSHD tensor, or of a packed one whose
// batch b starts at `start[b]` rows.
struct Layout {
  int64_t heads = 0, seq = 0, width = 0;
  std::vector<int64_t> start;  // ragged: rows before batch b; empty: dense
  int64_t row(int64_t b, int64_t h, int64_t s) const {
    const int64_t first = start.empty() ? b * seq : start[static_cast<size_t>(b)];
    return ((first + s) * heads + h) * width;
  }
  std::vector<int64_t> dims(int64_t batch) const { return {batch, heads, seq, width}; }
  std::vector<int64_t> strides() const { return {seq * heads * width, width, heads * width, 1}; }
};

struct Data {
  Layout lq, lk, lv, lo;
  Buf q, k, v, bias;                 // k, v: containers when paged
  std::vector<int32_t> seq_q, seq_kv;
  std::vector<int64_t> q_off, k_off, v_off, o_off;  // ragged offsets in elements (b + 1 each)
  std::vector<int32_t> k_table, v_table, table_off;
  int64_t pages = 0, blocks = 0;
  std::vector<int64_t> seed{123456}, offset{789};
};

inline std::vector<int64_t> prefix(const std::vector<int32_t>& lens) {
  std::vector<int64_t> p{0};
  for (int32_t l : lens) p.push_back(p.back() + l);
  return p;
}

// Paged K or V: the dense [b, heads, skv, width] data `dense` copied into blocks of a container
// [blocks, heads, block, width] (BHSD) in a shuffled order that `table` records.
inline void page(const FCase& c, const Buf& dense, const Layout& l, Data& d, Buf& container, std::vector<int32_t>& table,
                 std::mt19937& rng) {
  std::vector<int32_t> order(static_cast<size_t>(d.blocks));
  std::iota(order.begin(), order.end(), 0);
  std::shuffle(order.begin(), order.end(), rng);
  container = Buf(c.type, d.blocks * l.heads * c.block * l.width);
  container.poison();  // keys past the lengths are never read
  table.assign(static_cast<size_t>(c.b * d.pages), -1);
  for (int64_t b = 0; b < c.b; ++b)
    for (int64_t p = 0; p < d.pages; ++p) {
      const int32_t blk = order[static_cast<size_t>(b * d.pages + p)];
      const int64_t at = c.packed_tables ? d.table_off[static_cast<size_t>(b)] + p : b * d.pages + p;
      if (!c.packed_tables || p * c.block < d.seq_kv[static_cast<size_t>(b)]) table[static_cast<size_t>(at)] = blk;
      for (int64_t h = 0; h < l.heads; ++h)
        for (int64_t s = 0; s < c.block && p * c.block + s < c.skv; ++s)
          for (int64_t x = 0; x < l.width; ++x)
            container.set(((blk * l.heads + h) * c.block + s) * l.width + x, dense.at(l.row(b, h, p * c.block + s) + x));
    }
}

inline Data make_data(const FCase& c, uint32_t seed) {
  std::mt19937 rng(seed);
  Data d;
  std::uniform_int_distribution<int64_t> uq(c.ragged ? 1 : 0, c.sq), ukv(c.ragged || c.paged ? 1 : 0, c.skv);
  for (int64_t b = 0; b < c.b; ++b) {
    d.seq_q.push_back(static_cast<int32_t>(c.padding ? uq(rng) : c.sq));
    d.seq_kv.push_back(static_cast<int32_t>(c.padding ? ukv(rng) : c.skv));
  }
  d.lq = {c.h, c.sq, c.d, {}}, d.lk = {c.hk, c.skv, c.d, {}}, d.lv = {c.hv, c.skv, c.dv, {}}, d.lo = {c.h, c.sq, c.dv, {}};
  if (c.ragged) {
    const auto pq = prefix(d.seq_q), pkv = prefix(d.seq_kv);
    d.lq.start = d.lo.start = pq;
    d.lk.start = d.lv.start = pkv;
    for (size_t i = 0; i < pq.size(); ++i) {
      d.q_off.push_back(pq[i] * c.h * c.d), d.o_off.push_back(pq[i] * c.h * c.dv);
      d.k_off.push_back(pkv[i] * c.hk * c.d), d.v_off.push_back(pkv[i] * c.hv * c.dv);
    }
  }
  d.q = Buf(c.type, c.b * c.sq * c.h * c.d), d.k = Buf(c.type, c.b * c.skv * c.hk * c.d);
  d.v = Buf(c.type, c.b * c.skv * c.hv * c.dv);
  d.q.random(rng), d.k.random(rng), d.v.random(rng);
  if (c.bias()) {
    d.bias = Buf(c.type, c.bias_b * c.bias_h * c.sq * c.skv);
    d.bias.random(rng);
  }
  if (c.paged) {
    d.pages = (c.skv + c.block - 1) / c.block;
    d.blocks = c.b * d.pages + 1;  // one spare block that no table names
    if (c.packed_tables) {
      std::vector<int32_t> used;
      for (int32_t l : d.seq_kv) used.push_back(static_cast<int32_t>((l + c.block - 1) / c.block));
      for (int64_t x : prefix(used)) d.table_off.push_back(static_cast<int32_t>(x));
    }
    Buf kc, vc;
    page(c, d.k, d.lk, d, kc, d.k_table, rng);
    page(c, d.v, d.lv, d, vc, d.v_table, rng);
    d.k = std::move(kc), d.v = std::move(vc);
  }
  return d;
}

inline dg::TensorPtr tensor(dg::Graph& g, const char* name, std::vector<int64_t> dims, std::vector<int64_t> strides,
                            dg::DataType t) {
  return g.tensor(dg::TensorAttr().set_name(name).set_dim(std::move(dims)).set_stride(std::move(strides)).set_data_type(t));
}
inline dg::TensorPtr index_tensor(dg::Graph& g, const char* name, int64_t n, dg::DataType t) {
  return tensor(g, name, {n, 1, 1, 1}, {1, 1, 1, 1}, t);
}

// Everything the forward and backward graphs share: Q, K, V and the attribute's inputs.
struct Common {
  dg::TensorPtr Q, K, V, SQ, SKV, BIAS, SEED, OFFSET, QR, KR, VR, OR;
};

template <class Attr>
Common declare_common(dg::Graph& g, const FCase& c, const Data& d, Attr& a) {
  Common t;
  t.Q = tensor(g, "Q", d.lq.dims(c.b), d.lq.strides(), c.type);
  if (c.paged) {
    t.K = tensor(g, "K", {d.blocks, c.hk, c.block, c.d}, {c.hk * c.block * c.d, c.block * c.d, c.d, 1}, c.type);
    t.V = tensor(g, "V", {d.blocks, c.hv, c.block, c.dv}, {c.hv * c.block * c.dv, c.block * c.dv, c.dv, 1}, c.type);
  } else {
    t.K = tensor(g, "K", d.lk.dims(c.b), d.lk.strides(), c.type);
    t.V = tensor(g, "V", d.lv.dims(c.b), d.lv.strides(), c.type);
  }
  sdpa_test::Case mc;
  mc.mask = c.mask, mc.left = c.left, mc.right = c.right;
  sdpa_test::set_masks(mc, a);
  a.set_attn_scale(0.3).set_name("attn");
  if (c.padding) {
    t.SQ = index_tensor(g, "SEQ_Q", c.b, dg::DataType::INT32), t.SKV = index_tensor(g, "SEQ_KV", c.b, dg::DataType::INT32);
    a.set_padding_mask(true).set_seq_len_q(t.SQ).set_seq_len_kv(t.SKV);
  }
  if (c.bias()) {
    t.BIAS = tensor(g, "BIAS", {c.bias_b, c.bias_h, c.sq, c.skv}, {c.bias_h * c.sq * c.skv, c.sq * c.skv, c.skv, 1}, c.type);
    a.set_bias(t.BIAS);
  }
  a.set_alibi_mask(c.alibi);
  if (c.dropout) {
    t.SEED = index_tensor(g, "SEED", 1, dg::DataType::INT64), t.OFFSET = index_tensor(g, "OFFSET", 1, dg::DataType::INT64);
    a.set_dropout(c.p, t.SEED, t.OFFSET);
  }
  if (c.ragged) {
    t.QR = index_tensor(g, "Q_OFF", c.b + 1, dg::DataType::INT64), t.KR = index_tensor(g, "K_OFF", c.b + 1, dg::DataType::INT64);
    t.VR = index_tensor(g, "V_OFF", c.b + 1, dg::DataType::INT64), t.OR = index_tensor(g, "O_OFF", c.b + 1, dg::DataType::INT64);
    t.Q->set_ragged_offset(t.QR), t.K->set_ragged_offset(t.KR), t.V->set_ragged_offset(t.VR);
  }
  return t;
}

inline void pack_common(const Common& t, const Data& d, dg::VariantPack& pack) {
  auto cp = [](const void* p) { return const_cast<void*>(p); };
  pack[t.Q] = d.q.ptr(), pack[t.K] = d.k.ptr(), pack[t.V] = d.v.ptr();
  if (t.SQ) pack[t.SQ] = cp(d.seq_q.data()), pack[t.SKV] = cp(d.seq_kv.data());
  if (t.BIAS) pack[t.BIAS] = d.bias.ptr();
  if (t.SEED) pack[t.SEED] = cp(d.seed.data()), pack[t.OFFSET] = cp(d.offset.data());
  if (t.QR) {
    pack[t.QR] = cp(d.q_off.data()), pack[t.KR] = cp(d.k_off.data());
    pack[t.VR] = cp(d.v_off.data()), pack[t.OR] = cp(d.o_off.data());
  }
}

// Validates, plans (mode A) and builds plan `plan` of g on the CPU handle; false (and a test failure) if a step fails.
inline bool build(dg::Graph& g, dg::Handle& handle, int64_t plan) {
  if (!sdpa_test::plan_mode_a(g, handle)) return false;
  const dg::Status s = g.build_plan_at_index(handle, plan);
  EXPECT_TRUE(s.ok()) << s.to_string();
  return s.ok();
}

struct FwdOut {
  Buf o, stats, dump;
  dg::Status status;
};

// The forward on `engine`, outputs poisoned with NaN before the run.
// `plan`: the index among the engine's plans (the CPU engines': AVX2 kernels first, then portable).
inline FwdOut run_forward(const FCase& c, const Data& d, const std::string& engine, bool expect_ok = true,
                          int64_t plan = 0) {
  dg::Handle handle(dg::Device::cpu());
  dg::Graph g;
  g.set_io_data_type(c.type).set_intermediate_data_type(dg::DataType::FLOAT).set_compute_data_type(dg::DataType::FLOAT);
  g.select_engines({engine});
  dg::SdpaAttr a;
  a.set_is_inference(false);
  const Common t = declare_common(g, c, d, a);
  dg::TensorPtr DUMP, KT, VT, KTR, VTR;
  if (c.dropout) {
    DUMP = tensor(g, "DUMP", {c.b, c.h, c.sq, c.skv}, {c.h * c.sq * c.skv, c.sq * c.skv, c.skv, 1}, dg::DataType::FLOAT);
    a.set_rng_dump(DUMP);
  }
  if (c.paged) {
    KT = tensor(g, "K_TABLE", {c.b, 1, d.pages, 1}, {d.pages, d.pages, 1, 1}, dg::DataType::INT32);
    VT = tensor(g, "V_TABLE", {c.b, 1, d.pages, 1}, {d.pages, d.pages, 1, 1}, dg::DataType::INT32);
    a.set_paged_attention_k_table(KT).set_paged_attention_v_table(VT).set_paged_attention_max_seq_len_kv(c.skv);
    if (c.packed_tables) {
      KTR = index_tensor(g, "K_TABLE_OFF", c.b + 1, dg::DataType::INT32);
      VTR = index_tensor(g, "V_TABLE_OFF", c.b + 1, dg::DataType::INT32);
      KT->set_ragged_offset(KTR), VT->set_ragged_offset(VTR);
    }
  }
  auto [O, STATS] = g.sdpa(t.Q, t.K, t.V, a);
  O->set_output(true).set_dim(d.lo.dims(c.b)).set_stride(d.lo.strides());
  if (t.OR) O->set_ragged_offset(t.OR);
  STATS->set_output(true);
  FwdOut out{Buf(c.type, c.b * c.sq * c.h * c.dv), Buf(dg::DataType::FLOAT, c.b * c.h * c.sq),
             Buf(dg::DataType::FLOAT, c.dropout ? c.b * c.h * c.sq * c.skv : 0), {}};
  out.o.poison(), out.stats.poison(), out.dump.poison();
  if (!build(g, handle, plan)) return out;
  dg::VariantPack pack{{O, out.o.ptr()}, {STATS, out.stats.ptr()}};
  pack_common(t, d, pack);
  auto cp = [](const void* p) { return const_cast<void*>(p); };
  if (DUMP) pack[DUMP] = out.dump.ptr();
  if (KT) pack[KT] = cp(d.k_table.data()), pack[VT] = cp(d.v_table.data());
  if (KTR) pack[KTR] = cp(d.table_off.data()), pack[VTR] = cp(d.table_off.data());
  out.status = g.execute_plan_at_index(handle, pack, nullptr, plan);
  if (expect_ok) {
    EXPECT_TRUE(out.status.ok()) << out.status.to_string();
  }
  return out;
}

// Row (b, h, i) of [b, h, rows, width] within `limit` rows per batch: both buffers' widths compared,
// each element within tol * scale * (1 + |want|) (NaN fails).
inline void expect_rows_close(const Buf& got, const Buf& want, const Layout& l, int64_t b, int64_t h, int64_t i,
                              double tol, const std::string& what, int64_t& bad) {
  for (int64_t x = 0; x < l.width; ++x) {
    const int64_t at = l.row(b, h, i) + x;
    const double gv = got.at(at), wv = want.at(at);
    if (std::fabs(gv - wv) <= tol * (1.0 + std::fabs(wv))) continue;
    if (++bad <= 3) ADD_FAILURE() << what << "[" << b << "," << h << "," << i << "," << x << "] = " << gv << ", want " << wv;
  }
}

// Every row a ragged tensor's batches own, or every row of a dense one.
inline void expect_tensor_close(const FCase& c, const Buf& got, const Buf& want, const Layout& l,
                                const std::vector<int32_t>& lengths, double tol, const std::string& what) {
  int64_t bad = 0;
  for (int64_t b = 0; b < c.b; ++b)
    for (int64_t h = 0; h < l.heads; ++h)
      for (int64_t i = 0; i < (l.start.empty() ? l.seq : lengths[static_cast<size_t>(b)]); ++i)
        expect_rows_close(got, want, l, b, h, i, tol, what, bad);
  EXPECT_EQ(bad, 0) << what << ": " << c.describe();
  if (l.start.empty()) return;
  // A ragged output's rows past the last batch's are nobody's: never written.
  for (int64_t e = l.start.back() * l.heads * l.width; e < got.count(); ++e)
    if (!std::isnan(got.at(e))) {
      ADD_FAILURE() << what << ": element " << e << " past the packed rows was written (" << c.describe() << ")";
      break;
    }
}

struct BwdOut {
  Buf dq, dk, dv, dbias;
  dg::Status status;
};

// The backward on `engine` from the forward's O and STATS (`fwd`) and dO, gradients poisoned.
inline BwdOut run_backward(const FCase& c, const Data& d, const FwdOut& fwd, const Buf& d_o, const std::string& engine,
                           int64_t plan = 0) {
  dg::Handle handle(dg::Device::cpu());
  dg::Graph g;
  g.set_io_data_type(c.type).set_intermediate_data_type(dg::DataType::FLOAT).set_compute_data_type(dg::DataType::FLOAT);
  g.select_engines({engine});
  dg::SdpaBackwardAttr a;
  const Common t = declare_common(g, c, d, a);
  auto O = tensor(g, "O", d.lo.dims(c.b), d.lo.strides(), c.type), DO = tensor(g, "dO", d.lo.dims(c.b), d.lo.strides(), c.type);
  auto STATS = tensor(g, "STATS", {c.b, c.h, c.sq, 1}, {c.h * c.sq, c.sq, 1, 1}, dg::DataType::FLOAT);
  dg::TensorPtr DBIAS;
  if (c.bias()) {
    DBIAS = tensor(g, "DBIAS", {c.bias_b, c.bias_h, c.sq, c.skv}, {c.bias_h * c.sq * c.skv, c.sq * c.skv, c.skv, 1}, c.type);
    a.set_dbias(DBIAS);
  }
  if (c.ragged) O->set_ragged_offset(t.OR), DO->set_ragged_offset(t.OR);
  auto [DQ, DK, DV] = g.sdpa_backward(t.Q, t.K, t.V, O, DO, STATS, a);
  DQ->set_output(true), DK->set_output(true), DV->set_output(true);
  if (c.ragged) DQ->set_ragged_offset(t.QR), DK->set_ragged_offset(t.KR), DV->set_ragged_offset(t.VR);
  BwdOut out{Buf(c.type, d.q.count()), Buf(c.type, d.k.count()), Buf(c.type, d.v.count()),
             Buf(c.type, c.bias() ? d.bias.count() : 0), {}};
  out.dq.poison(), out.dk.poison(), out.dv.poison(), out.dbias.poison();
  if (!build(g, handle, plan)) return out;
  dg::VariantPack pack{{O, fwd.o.ptr()}, {DO, d_o.ptr()}, {STATS, fwd.stats.ptr()},
                       {DQ, out.dq.ptr()}, {DK, out.dk.ptr()}, {DV, out.dv.ptr()}};
  pack_common(t, d, pack);
  if (DBIAS) pack[DBIAS] = out.dbias.ptr();
  out.status = g.execute_plan_at_index(handle, pack, nullptr, plan);
  EXPECT_TRUE(out.status.ok()) << out.status.to_string();
  return out;
}

// Gradients within tol of ref's, relative to each gradient's largest magnitude (sums of many terms
// of both signs carry the sum's absolute error).
inline void expect_grads_close(const FCase& c, const Data& d, const BwdOut& got, const BwdOut& want, double tol) {
  auto max_abs = [](const Buf& b) {
    double m = 1.0;
    for (int64_t i = 0; i < b.count(); ++i)
      if (!std::isnan(b.at(i))) m = std::max(m, std::fabs(b.at(i)));
    return m;
  };
  expect_tensor_close(c, got.dq, want.dq, d.lq, d.seq_q, tol * max_abs(want.dq), "dQ");
  expect_tensor_close(c, got.dk, want.dk, d.lk, d.seq_kv, tol * max_abs(want.dk), "dK");
  expect_tensor_close(c, got.dv, want.dv, d.lv, d.seq_kv, tol * max_abs(want.dv), "dV");
  if (!c.bias()) return;
  const double scale = tol * max_abs(want.dbias);
  int64_t bad = 0;
  for (int64_t e = 0; e < want.dbias.count(); ++e) {
    const double gv = got.dbias.at(e), wv = want.dbias.at(e);
    if (!(std::fabs(gv - wv) <= scale * (1.0 + std::fabs(wv))) && ++bad <= 3) {
      ADD_FAILURE() << "dBias element " << e << " = " << gv << ", want " << wv;
    }
  }
  EXPECT_EQ(bad, 0) << "dBias: " << c.describe();
}

}  // namespace sdpa_features_test
