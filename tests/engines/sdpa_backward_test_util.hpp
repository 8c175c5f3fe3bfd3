// Helpers for the sdpa_backward engine tests (ref, CPU, CUDA): a case's inputs (Q, K, V and dO
// seeded random; O and STATS from ref's forward over them), the backward graph, and a run on the
// CPU of any engine with dQ, dK, dV poisoned with NaN first.
#pragma once
#include <gtest/gtest.h>

#include <random>
#include <string>
#include <vector>

#include "sdpa_test_util.hpp"

namespace sdpa_test {

struct BwdInputs {
  Inputs fwd;          // Q, K, V, the padding lengths
  Tensor4 o, d_o, stats;
};

struct Grads {
  Tensor4 dq, dk, dv;
  std::string plan_name;
};

struct BwdTensors {
  dg::TensorPtr Q, K, V, O, DO, STATS, SQ, SKV, DQ, DK, DV;
};

inline dg::TensorPtr seq_len_tensor(dg::Graph& g, const Case& c, const char* name) {
  return g.tensor(
      dg::TensorAttr().set_name(name).set_dim({c.b, 1, 1, 1}).set_stride({1, 1, 1, 1}).set_data_type(dg::DataType::INT32));
}

// Every Q, K, V, O, dO, STATS (and SEQ) tensor of g, and sdpa_backward over them; dQ, dK, dV are
// outputs in the layouts of Q, K and V.
// `deterministic`: the node asks for the same bits on every run (set_deterministic_algorithm).
inline BwdTensors add_sdpa_backward(dg::Graph& g, const Case& c, const BwdInputs& in, bool deterministic = false) {
  BwdTensors t;
  t.Q = in.fwd.q.declare(g, "Q"), t.K = in.fwd.k.declare(g, "K"), t.V = in.fwd.v.declare(g, "V");
  t.O = in.o.declare(g, "O"), t.DO = in.d_o.declare(g, "dO"), t.STATS = in.stats.declare(g, "STATS");
  dg::SdpaBackwardAttr attr;
  attr.set_name("attn_bwd");
  set_masks(c, attr);
  attr.set_deterministic_algorithm(deterministic);
  if (c.padding) {
    t.SQ = seq_len_tensor(g, c, "SEQ_Q"), t.SKV = seq_len_tensor(g, c, "SEQ_KV");
    attr.set_padding_mask(true).set_seq_len_q(t.SQ).set_seq_len_kv(t.SKV);
  }
  auto [DQ, DK, DV] = g.sdpa_backward(t.Q, t.K, t.V, t.O, t.DO, t.STATS, attr);
  t.DQ = DQ, t.DK = DK, t.DV = DV;
  for (auto& x : {DQ, DK, DV}) x->set_output(true);
  return t;
}

// O and STATS of the forward on ref, in the case's type and layout.
inline void forward_on_ref(const Case& c, const Inputs& in, Tensor4& o, Tensor4& stats) {
  dg::Handle handle(dg::Device::cpu());
  dg::Graph g;
  g.set_io_data_type(c.type).set_compute_data_type(dg::DataType::FLOAT).select_engines({"ref"});
  Case fc = c;
  fc.stats = true;
  const auto [Q, K, V, SQ, SKV, O, STATS] = add_sdpa(g, fc, in);
  poisoned_results(fc, o, stats);
  if (!plan_mode_a(g, handle)) return;
  ASSERT_TRUE(g.build_plans(handle).ok());
  std::vector<int32_t> sq = in.seq_q, skv = in.seq_kv;
  dg::VariantPack pack{{Q, const_cast<unsigned char*>(in.q.bytes.data())},
                       {K, const_cast<unsigned char*>(in.k.bytes.data())},
                       {V, const_cast<unsigned char*>(in.v.bytes.data())},
                       {O, o.bytes.data()},
                       {STATS, stats.bytes.data()}};
  if (c.padding) pack[SQ] = sq.data(), pack[SKV] = skv.data();
  ASSERT_TRUE(g.execute(handle, pack, nullptr).ok());
}

// The case's inputs from `seed`: O and STATS are ref's forward; dO is uniform in [-1.5, 1.5).
inline BwdInputs make_backward_inputs(const Case& c, uint32_t seed) {
  BwdInputs in;
  in.fwd = make_inputs(c, seed);
  forward_on_ref(c, in.fwd, in.o, in.stats);
  in.d_o = Tensor4({c.b, c.h, c.sq, c.dv}, c.type, c.bshd);
  std::mt19937 rng(seed * 7919u + 1u);
  in.d_o.fill_random(rng);
  return in;
}

// dQ, dK, dV in the layouts of Q, K, V, poisoned with NaN.
inline Grads poisoned_grads(const Case& c) {
  Grads g{Tensor4({c.b, c.h, c.sq, c.d}, c.type, c.bshd), Tensor4({c.b, c.hk, c.skv, c.d}, c.type, c.bshd),
          Tensor4({c.b, c.hk, c.skv, c.dv}, c.type, c.bshd), ""};
  g.dq.poison();
  g.dk.poison();
  g.dv.poison();
  return g;
}

// The backward on the CPU with only `engine`, its plan `plan_index`.
inline Grads run_backward_on_cpu(const Case& c, const BwdInputs& in, const std::string& engine, int64_t plan_index = 0) {
  dg::Handle handle(dg::Device::cpu());
  dg::Graph g;
  g.set_io_data_type(c.type).set_compute_data_type(dg::DataType::FLOAT).select_engines({engine});
  const BwdTensors t = add_sdpa_backward(g, c, in);
  Grads out = poisoned_grads(c);
  if (!plan_mode_a(g, handle)) return out;
  EXPECT_TRUE(g.build_plan_at_index(handle, plan_index).ok());
  EXPECT_TRUE(g.get_plan_name_at_index(plan_index, out.plan_name).ok());
  std::vector<int32_t> sq = in.fwd.seq_q, skv = in.fwd.seq_kv;
  auto ptr = [](const Tensor4& x) { return const_cast<unsigned char*>(x.bytes.data()); };
  dg::VariantPack pack{{t.Q, ptr(in.fwd.q)}, {t.K, ptr(in.fwd.k)},  {t.V, ptr(in.fwd.v)},
                       {t.O, ptr(in.o)},     {t.DO, ptr(in.d_o)},   {t.STATS, ptr(in.stats)},
                       {t.DQ, out.dq.bytes.data()}, {t.DK, out.dk.bytes.data()}, {t.DV, out.dv.bytes.data()}};
  if (c.padding) pack[t.SQ] = sq.data(), pack[t.SKV] = skv.data();
  const dg::Status s = g.execute_plan_at_index(handle, pack, nullptr, plan_index);
  EXPECT_TRUE(s.ok()) << s.to_string();
  return out;
}

// Gradients within tol of ref's, element by element relative to the gradient's largest magnitude
// (a gradient sums many terms of both signs, so small elements carry the sum's absolute error).
inline void expect_grads_close(const Case& c, const Grads& got, const Grads& want, double tol) {
  auto max_abs = [](const Tensor4& t) {
    double m = 0;
    for (int64_t i = 0; i < t.count(); ++i) m = std::max(m, std::fabs(dg::dtype::load(t.bytes.data(), t.type, i)));
    return m;
  };
  const std::pair<const char*, std::pair<const Tensor4*, const Tensor4*>> grads[] = {
      {"dQ", {&got.dq, &want.dq}}, {"dK", {&got.dk, &want.dk}}, {"dV", {&got.dv, &want.dv}}};
  for (const auto& [name, gw] : grads) {
    const double scale = std::max(1.0, max_abs(*gw.second));
    expect_close(c, *gw.first, *gw.second, tol * scale, std::string(name) + " of " + got.plan_name);
  }
}

}  // namespace sdpa_test
