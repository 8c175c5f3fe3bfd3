// Helpers for the flash-attention engine tests (CPU and CUDA) that compare with ref: a case
// (shape, layout, mask, padding, stats), its seeded random inputs in BHSD or BSHD layout, the sdpa
// graph over them, and an element-by-element comparison of rank-4 results.
#pragma once
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <optional>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include "common/random_data.hpp"
#include "core/dtype.hpp"
#include "dnngraph/dnngraph.hpp"

namespace sdpa_test {

namespace dg = dnngraph;

enum class Mask { NONE, CAUSAL, CAUSAL_BOTTOM_RIGHT, SLIDING_WINDOW, BAND };

// One attention problem. The CPU tests start from these defaults; the CUDA tests from head dim 64
// and bf16 (the tensor cores take 16-bit operands).
struct Case {
  int64_t b = 1, h = 1, hk = 1, sq = 1, skv = 1, d = 8, dv = 8;
  dg::DataType type = dg::DataType::FLOAT, out = dg::DataType::NOT_SET;  // out NOT_SET: Q's type
  bool bshd = false;
  Mask mask = Mask::NONE;
  int64_t left = 0, right = 0;  // SLIDING_WINDOW: left; BAND: both
  bool padding = false, stats = false;
  std::optional<double> scale;
  dg::DataType out_type() const { return out == dg::DataType::NOT_SET ? type : out; }
  std::string describe() const {
    return "b" + std::to_string(b) + " h" + std::to_string(h) + " hk" + std::to_string(hk) + " sq" +
           std::to_string(sq) + " skv" + std::to_string(skv) + " d" + std::to_string(d) + " dv" + std::to_string(dv) +
           " " + std::string(dg::to_string(type)) + (bshd ? " BSHD" : " BHSD") + " mask" +
           std::to_string(static_cast<int>(mask)) + " left" + std::to_string(left) + " right" + std::to_string(right) +
           (padding ? " padding" : "") + (stats ? " stats" : "") + (scale ? " scale" + std::to_string(*scale) : "");
  }
};

// A random trial's batch (1..2), K/V heads (1..2), Q heads (1..3 times those: MHA, GQA, MQA) and
// sequence lengths (1..max_sq, 1..max_skv), drawn in that order. C: a Case, or the ref tests' own.
template <typename C>
void pick_heads_and_lengths(test_random::IntPicker& pick, C& c, int64_t max_sq, int64_t max_skv) {
  c.b = pick(1, 2);
  c.hk = pick(1, 2);
  c.h = c.hk * pick(1, 3);
  c.sq = pick(1, max_sq);
  c.skv = pick(1, max_skv);
}

// A random trial's mask (the five in turn) and band bounds (left 1..max_left, right 0..max_right).
template <typename C>
void pick_mask_and_bounds(test_random::IntPicker& pick, C& c, int trial, int64_t max_left, int64_t max_right) {
  c.mask = static_cast<Mask>(trial % 5);
  c.left = pick(1, max_left);
  c.right = pick(0, max_right);
}

// The random-shape sweep: `trials` cases drawn from one picker seeded `seed`, each with heads and
// lengths first (pick_heads_and_lengths), then vary(pick, trial, c) for the rest, then check(c,
// trial) under a trace naming the trial.
template <typename C, typename Vary, typename Check>
void for_each_random_case(uint32_t seed, int trials, int64_t max_sq, int64_t max_skv, Vary vary, Check check) {
  test_random::IntPicker pick(seed);
  for (int trial = 0; trial < trials; ++trial) {
    C c;
    pick_heads_and_lengths(pick, c, max_sq, max_skv);
    vary(pick, trial, c);
    SCOPED_TRACE("trial " + std::to_string(trial));
    check(c, trial);
  }
}

// The tile-edge sweep: `base` at each (sq, skv) of `lengths` under the NONE, CAUSAL,
// CAUSAL_BOTTOM_RIGHT and SLIDING_WINDOW masks, in that order.
template <typename C>
std::vector<C> tile_edge_cases(const C& base, std::initializer_list<std::pair<int64_t, int64_t>> lengths) {
  std::vector<C> cases;
  for (auto [sq, skv] : lengths)
    for (Mask m : {Mask::NONE, Mask::CAUSAL, Mask::CAUSAL_BOTTOM_RIGHT, Mask::SLIDING_WINDOW}) {
      C c = base;
      c.sq = sq;
      c.skv = skv;
      c.mask = m;
      cases.push_back(c);
    }
  return cases;
}

// A rank-4 host tensor in BHSD or BSHD layout.
struct Tensor4 {
  std::vector<int64_t> dims, strides;
  dg::DataType type = dg::DataType::FLOAT;
  std::vector<unsigned char> bytes;
  Tensor4() = default;
  Tensor4(std::vector<int64_t> d, dg::DataType t, bool bshd) : dims(std::move(d)), type(t) {
    strides = bshd ? std::vector<int64_t>{dims[1] * dims[2] * dims[3], dims[3], dims[1] * dims[3], 1}
                   : std::vector<int64_t>{dims[1] * dims[2] * dims[3], dims[2] * dims[3], dims[3], 1};
    bytes.resize(static_cast<size_t>(count() * static_cast<int64_t>(dg::size_of(t))));
  }
  int64_t count() const { return dims[0] * dims[1] * dims[2] * dims[3]; }
  double at(int64_t b, int64_t h, int64_t s, int64_t c) const {
    return dg::dtype::load(bytes.data(), type, b * strides[0] + h * strides[1] + s * strides[2] + c * strides[3]);
  }
  void fill_random(std::mt19937& rng) {
    std::uniform_real_distribution<double> u(-1.5, 1.5);
    for (int64_t i = 0; i < count(); ++i) dg::dtype::store(bytes.data(), type, i, u(rng));
  }
  void poison() {
    for (int64_t i = 0; i < count(); ++i) dg::dtype::store(bytes.data(), type, i, std::nan(""));
  }
  dg::TensorPtr declare(dg::Graph& g, const char* name) const {
    return g.tensor(dg::TensorAttr().set_name(name).set_dim(dims).set_stride(strides).set_data_type(type));
  }
};

struct Inputs {
  Tensor4 q, k, v;
  std::vector<int32_t> seq_q, seq_kv;
};

// Q, K, V uniform in [-1.5, 1.5), then (with padding) each batch's lengths, from `seed`.
inline Inputs make_inputs(const Case& c, uint32_t seed) {
  std::mt19937 rng(seed);
  Inputs in{Tensor4({c.b, c.h, c.sq, c.d}, c.type, c.bshd), Tensor4({c.b, c.hk, c.skv, c.d}, c.type, c.bshd),
            Tensor4({c.b, c.hk, c.skv, c.dv}, c.type, c.bshd), {}, {}};
  in.q.fill_random(rng);
  in.k.fill_random(rng);
  in.v.fill_random(rng);
  for (int64_t b = 0; c.padding && b < c.b; ++b) {
    in.seq_q.push_back(static_cast<int32_t>(std::uniform_int_distribution<int64_t>(0, c.sq)(rng)));
    in.seq_kv.push_back(static_cast<int32_t>(std::uniform_int_distribution<int64_t>(0, c.skv)(rng)));
  }
  return in;
}

// The case's scale and mask on an SdpaAttr or an SdpaBackwardAttr.
template <class Attr>
void set_masks(const Case& c, Attr& a) {
  if (c.scale) a.set_attn_scale(*c.scale);
  switch (c.mask) {
    case Mask::NONE: break;
    case Mask::CAUSAL: a.set_causal_mask(true); break;
    case Mask::CAUSAL_BOTTOM_RIGHT: a.set_causal_mask_bottom_right(true); break;
    case Mask::SLIDING_WINDOW: a.set_causal_mask(true).set_diagonal_band_left_bound(c.left); break;
    case Mask::BAND:
      a.set_diagonal_alignment(dg::DiagonalAlignment::BOTTOM_RIGHT)
          .set_diagonal_band_left_bound(c.left)
          .set_diagonal_band_right_bound(c.right);
      break;
  }
}

inline dg::SdpaAttr attr_of(const Case& c) {
  dg::SdpaAttr a;
  a.set_name("attn").set_is_inference(!c.stats);
  set_masks(c, a);
  return a;
}

// c made bottom-right causal over 3 batches with sq query rows and 30 keys (the first sq - 30 rows
// see no key), with padding: batch 1 has no query rows, batch 2 no keys. Its inputs (seed 7).
inline Inputs fully_masked_inputs(Case& c, int64_t sq) {
  c.b = 3;
  c.sq = sq;
  c.skv = 30;
  c.mask = Mask::CAUSAL_BOTTOM_RIGHT;
  c.stats = true;
  c.padding = true;
  Inputs in = make_inputs(c, 7);
  in.seq_q = {static_cast<int32_t>(sq), 0, 55};
  in.seq_kv = {30, 12, 0};
  return in;
}

// The rows fully_masked_inputs masks or pads hold 0 in O and STATS, not NaN.
inline void expect_masked_rows_zero(const Case& c, const Tensor4& o, const Tensor4& stats, const std::string& what) {
  for (int64_t s = 0; s < c.sq - c.skv; ++s) EXPECT_EQ(o.at(0, 0, s, 0), 0.0) << what << " row " << s;
  EXPECT_EQ(o.at(1, 0, 3, 2), 0.0) << what;
  EXPECT_EQ(stats.at(2, 0, 10, 0), 0.0) << what;
}

// The graph's tensors: inputs, the padding lengths (null without padding) and outputs.
struct SdpaTensors {
  dg::TensorPtr Q, K, V, SQ, SKV, O, STATS;
};

// Declares Q, K, V (and with padding SEQ_Q, SEQ_KV) in g and adds sdpa: O is an output of the
// case's output type, STATS one where the case keeps statistics.
inline SdpaTensors add_sdpa(dg::Graph& g, const Case& c, const Inputs& in) {
  SdpaTensors t;
  t.Q = in.q.declare(g, "Q"), t.K = in.k.declare(g, "K"), t.V = in.v.declare(g, "V");
  dg::SdpaAttr attr = attr_of(c);
  if (c.padding) {
    auto seq = [&](const char* name) {
      return g.tensor(dg::TensorAttr().set_name(name).set_dim({c.b, 1, 1, 1}).set_stride({1, 1, 1, 1}).set_data_type(
          dg::DataType::INT32));
    };
    t.SQ = seq("SEQ_Q"), t.SKV = seq("SEQ_KV");
    attr.set_padding_mask(true).set_seq_len_q(t.SQ).set_seq_len_kv(t.SKV);
  }
  auto [O, STATS] = g.sdpa(t.Q, t.K, t.V, attr);
  t.O = O, t.STATS = STATS;
  O->set_output(true).set_data_type(c.out_type());
  if (c.stats) STATS->set_output(true);
  return t;
}

// Plans g on `handle` for its selected engines: validate, build_operation_graph,
// create_execution_plans (mode A) and check_support. A failed step is a test failure (a refusal
// with explain()'s candidates), and false.
inline bool plan_mode_a(dg::Graph& g, dg::Handle& handle) {
  auto failed = [](const char* step, const dg::Status& s, const std::string& detail = "") {
    ADD_FAILURE() << step << ": " << s.to_string() << detail;
    return false;
  };
  if (auto s = g.validate(); !s.ok()) return failed("validate", s);
  if (auto s = g.build_operation_graph(handle); !s.ok()) return failed("build_operation_graph", s);
  if (auto s = g.create_execution_plans({dg::HeurMode::A}); !s.ok()) return failed("create_execution_plans", s);
  if (auto s = g.check_support(handle); !s.ok()) return failed("check_support", s, "\n" + g.explain());
  return true;
}

// O (Q's layout, the case's output type) and STATS (fp32, BHSD), poisoned with NaN.
inline void poisoned_results(const Case& c, Tensor4& o, Tensor4& stats) {
  o = Tensor4({c.b, c.h, c.sq, c.dv}, c.out_type(), c.bshd);
  stats = Tensor4({c.b, c.h, c.sq, 1}, dg::DataType::FLOAT, false);
  o.poison();
  stats.poison();
}

// Every element within elem_scale * tol * (1 + |want|) (NaN fails); with `norm`, also
// ||got - want|| / ||want|| within tol.
inline void expect_close(const Case& c, const Tensor4& got, const Tensor4& want, double tol, const std::string& what,
                         double elem_scale = 1.0, bool norm = false) {
  double num = 0, den = 0;
  int64_t bad = 0;
  for (int64_t b = 0; b < want.dims[0]; ++b)
    for (int64_t h = 0; h < want.dims[1]; ++h)
      for (int64_t s = 0; s < want.dims[2]; ++s)
        for (int64_t x = 0; x < want.dims[3]; ++x) {
          const double g = got.at(b, h, s, x), w = want.at(b, h, s, x);
          num += (g - w) * (g - w);
          den += w * w;
          if (std::fabs(g - w) <= elem_scale * tol * (1.0 + std::fabs(w))) continue;  // NaN fails too
          if (++bad <= 3)
            ADD_FAILURE() << what << "[" << b << "," << h << "," << s << "," << x << "] = " << g << ", ref " << w
                          << " (" << c.describe() << ")";
        }
  EXPECT_EQ(bad, 0) << what << ": " << c.describe();
  if (!norm) return;
  const double rel = den > 0 ? std::sqrt(num / den) : std::sqrt(num);
  EXPECT_LE(rel, tol) << what << ": relative error " << rel << " (" << c.describe() << ")";
}

}  // namespace sdpa_test
