// The reference sdpa: cases worked out by hand, and a naive full-matrix oracle written independently
// (mask matrix, then softmax) on seeded random shapes and every input type (FLOAT, HALF, BFLOAT16, FP8).
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <random>

#include "common/dims.hpp"
#include "core/dtype.hpp"
#include "dnngraph/dnngraph.hpp"
#include "sdpa_test_util.hpp"

namespace dg = dnngraph;

namespace {

struct RefCase {
  int64_t b = 1, h = 1, hk = 1, sq = 1, skv = 1, d = 4, dv = 4;
  dg::SdpaAttr attr;
  std::vector<int32_t> seq_q, seq_kv;  // padding mask when non-empty
  bool stats = true;
  dg::DataType input_type = dg::DataType::FLOAT;  // Q, K, V; O and STATS are FLOAT
};

struct RefResult {
  std::vector<float> q, k, v, o, stats;  // dense [b,h,s,d] order
};

// Q, K, V stored as `t`; the float vectors hold the values they decode to.
std::vector<unsigned char> encode(std::vector<float>& x, dg::DataType t) {
  std::vector<unsigned char> bytes(x.size() * static_cast<size_t>(dg::size_of(t)));
  for (size_t i = 0; i < x.size(); ++i) {
    dg::dtype::store(bytes.data(), t, static_cast<int64_t>(i), x[i]);
    x[i] = static_cast<float>(dg::dtype::load(bytes.data(), t, static_cast<int64_t>(i)));
  }
  return bytes;
}

// Runs the graph on the ref engine; inputs are random unless given.
RefResult run_ref(const RefCase& c, uint32_t seed, const RefResult* inputs = nullptr) {
  dg::Handle handle(dg::Device::cpu());
  dg::Graph g;
  g.set_io_data_type(dg::DataType::FLOAT).set_compute_data_type(dg::DataType::FLOAT);
  g.select_engines({"ref"});
  auto dense = [&](const char* name, std::vector<int64_t> dims, dg::DataType t) {
    return g.tensor(dg::TensorAttr().set_name(name).set_dim(dims).set_stride(test_dims::packed(dims)).set_data_type(t));
  };
  auto Q = dense("Q", {c.b, c.h, c.sq, c.d}, c.input_type);
  auto K = dense("K", {c.b, c.hk, c.skv, c.d}, c.input_type);
  auto V = dense("V", {c.b, c.hk, c.skv, c.dv}, c.input_type);
  dg::SdpaAttr attr = c.attr;
  dg::TensorPtr SQ, SKV;
  if (!c.seq_q.empty()) {
    SQ = dense("SEQ_Q", {c.b, 1, 1, 1}, dg::DataType::INT32);
    SKV = dense("SEQ_KV", {c.b, 1, 1, 1}, dg::DataType::INT32);
    attr.set_padding_mask(true).set_seq_len_q(SQ).set_seq_len_kv(SKV);
  }
  attr.set_is_inference(!c.stats);
  auto [O, STATS] = g.sdpa(Q, K, V, attr);
  O->set_output(true);
  if (c.stats) STATS->set_output(true);
  RefResult r;
  if (inputs) {
    r = *inputs;
  } else {
    std::mt19937 rng(seed);
    std::uniform_real_distribution<float> u(-1.5f, 1.5f);
    auto fill = [&](std::vector<float>& x, int64_t n) {
      x.resize(static_cast<size_t>(n));
      for (auto& e : x) e = u(rng);
    };
    fill(r.q, c.b * c.h * c.sq * c.d);
    fill(r.k, c.b * c.hk * c.skv * c.d);
    fill(r.v, c.b * c.hk * c.skv * c.dv);
  }
  r.o.assign(static_cast<size_t>(c.b * c.h * c.sq * c.dv), std::nanf(""));
  r.stats.assign(static_cast<size_t>(c.b * c.h * c.sq), std::nanf(""));
  EXPECT_TRUE(g.validate().ok());
  EXPECT_TRUE(g.build_operation_graph(handle).ok());
  EXPECT_TRUE(g.create_execution_plans({dg::HeurMode::A}).ok());
  EXPECT_TRUE(g.check_support(handle).ok());
  EXPECT_TRUE(g.build_plans(handle).ok());
  std::vector<unsigned char> qb = encode(r.q, c.input_type), kb = encode(r.k, c.input_type),
                             vb = encode(r.v, c.input_type);
  dg::VariantPack pack{{Q, qb.data()}, {K, kb.data()}, {V, vb.data()}, {O, r.o.data()}};
  std::vector<int32_t> sq = c.seq_q, skv = c.seq_kv;
  if (SQ) {
    pack[SQ] = sq.data();
    pack[SKV] = skv.data();
  }
  if (c.stats) pack[STATS] = r.stats.data();
  auto s = g.execute(handle, pack, nullptr);
  EXPECT_TRUE(s.ok()) << s.to_string();
  return r;
}

// Independent oracle: the full [sq, skv] mask matrix, then a softmax per row.
void naive_sdpa(const RefCase& c, const RefResult& in, std::vector<double>& o, std::vector<double>& stats) {
  const double scale = c.attr.get_attn_scale().value_or(1.0 / std::sqrt(static_cast<double>(c.d)));
  o.assign(static_cast<size_t>(c.b * c.h * c.sq * c.dv), 0.0);
  stats.assign(static_cast<size_t>(c.b * c.h * c.sq), 0.0);
  for (int64_t b = 0; b < c.b; ++b) {
    const int64_t lq = c.seq_q.empty() ? c.sq : c.seq_q[static_cast<size_t>(b)];
    const int64_t lkv = c.seq_kv.empty() ? c.skv : c.seq_kv[static_cast<size_t>(b)];
    const int64_t diag = c.attr.get_diagonal_alignment() == dg::DiagonalAlignment::BOTTOM_RIGHT ? lkv - lq : 0;
    std::vector<std::vector<bool>> mask(static_cast<size_t>(c.sq), std::vector<bool>(static_cast<size_t>(c.skv)));
    for (int64_t i = 0; i < lq; ++i)
      for (int64_t j = 0; j < lkv; ++j) {
        const int64_t rel = j - (i + diag);  // distance right of the diagonal
        const auto right = c.attr.get_diagonal_band_right_bound();
        const auto left = c.attr.get_diagonal_band_left_bound();
        mask[static_cast<size_t>(i)][static_cast<size_t>(j)] = (!right || rel <= *right) && (!left || -rel < *left);
      }
    for (int64_t h = 0; h < c.h; ++h) {
      const int64_t kh = h / (c.h / c.hk);
      for (int64_t i = 0; i < c.sq; ++i) {
        std::vector<double> p(static_cast<size_t>(c.skv), 0.0);
        double mx = -std::numeric_limits<double>::infinity();
        for (int64_t j = 0; j < c.skv; ++j) {
          if (!mask[static_cast<size_t>(i)][static_cast<size_t>(j)]) continue;
          double dot = 0;
          for (int64_t x = 0; x < c.d; ++x)
            dot += double(in.q[static_cast<size_t>(((b * c.h + h) * c.sq + i) * c.d + x)]) *
                   double(in.k[static_cast<size_t>(((b * c.hk + kh) * c.skv + j) * c.d + x)]);
          p[static_cast<size_t>(j)] = dot * scale;
          mx = std::max(mx, dot * scale);
        }
        if (mx == -std::numeric_limits<double>::infinity()) continue;  // stays 0
        double sum = 0;
        for (int64_t j = 0; j < c.skv; ++j)
          if (mask[static_cast<size_t>(i)][static_cast<size_t>(j)]) sum += (p[static_cast<size_t>(j)] = std::exp(p[static_cast<size_t>(j)] - mx));
        const size_t row = static_cast<size_t>((b * c.h + h) * c.sq + i);
        stats[row] = mx + std::log(sum);
        for (int64_t x = 0; x < c.dv; ++x) {
          double acc = 0;
          for (int64_t j = 0; j < c.skv; ++j)
            if (mask[static_cast<size_t>(i)][static_cast<size_t>(j)])
              acc += p[static_cast<size_t>(j)] * in.v[static_cast<size_t>(((b * c.hk + kh) * c.skv + j) * c.dv + x)];
          o[row * static_cast<size_t>(c.dv) + static_cast<size_t>(x)] = acc / sum;
        }
      }
    }
  }
}

void expect_matches_naive(const RefCase& c, uint32_t seed) {
  RefResult r = run_ref(c, seed);
  std::vector<double> o, stats;
  naive_sdpa(c, r, o, stats);
  for (size_t i = 0; i < o.size(); ++i) ASSERT_NEAR(r.o[i], o[i], 1e-5 + 1e-5 * std::fabs(o[i])) << "O[" << i << "]";
  for (size_t i = 0; i < stats.size(); ++i)
    ASSERT_NEAR(r.stats[i], stats[i], 1e-5 + 1e-5 * std::fabs(stats[i])) << "STATS[" << i << "]";
}

}  // namespace

TEST(RefSdpa, OneKeyGivesItsValueAndItsScoreAsStats) {
  RefCase c;
  c.sq = 3;
  RefResult r = run_ref(c, 1);
  for (int64_t i = 0; i < 3; ++i) {
    double dot = 0;
    for (int x = 0; x < 4; ++x) dot += double(r.q[static_cast<size_t>(i * 4 + x)]) * r.k[static_cast<size_t>(x)];
    EXPECT_NEAR(r.stats[static_cast<size_t>(i)], dot / 2.0, 1e-6);  // scale 1/sqrt(4)
    for (int x = 0; x < 4; ++x) EXPECT_FLOAT_EQ(r.o[static_cast<size_t>(i * 4 + x)], r.v[static_cast<size_t>(x)]);
  }
}

TEST(RefSdpa, CausalWindowOfOneSelectsTheDiagonalKey) {
  for (auto align : {dg::DiagonalAlignment::TOP_LEFT, dg::DiagonalAlignment::BOTTOM_RIGHT}) {
    RefCase c;
    c.sq = 4;
    c.skv = 7;
    c.attr.set_causal_mask(true).set_diagonal_alignment(align).set_diagonal_band_left_bound(1);
    RefResult r = run_ref(c, 2);
    const int64_t diag = align == dg::DiagonalAlignment::BOTTOM_RIGHT ? 3 : 0;
    for (int64_t i = 0; i < 4; ++i)
      for (int64_t x = 0; x < 4; ++x)
        EXPECT_FLOAT_EQ(r.o[static_cast<size_t>(i * 4 + x)], r.v[static_cast<size_t>((i + diag) * 4 + x)]);
  }
}

TEST(RefSdpa, EqualScoresAverageTheVisibleValues) {
  RefCase c;
  c.sq = 3;
  c.skv = 3;
  c.attr.set_causal_mask(true);
  RefResult in;
  in.q.assign(12, 0.25f);
  in.k.assign(12, 0.5f);
  for (int i = 0; i < 12; ++i) in.v.push_back(static_cast<float>(i % 5) - 1.5f);
  RefResult r = run_ref(c, 0, &in);
  for (int64_t i = 0; i < 3; ++i)
    for (int64_t x = 0; x < 4; ++x) {
      double mean = 0;
      for (int64_t j = 0; j <= i; ++j) mean += r.v[static_cast<size_t>(j * 4 + x)];
      EXPECT_NEAR(r.o[static_cast<size_t>(i * 4 + x)], mean / double(i + 1), 1e-6);
    }
  // Every visible score is 0.25 * 0.5 * 4 / 2 = 0.25: stats = 0.25 + log(count).
  for (int64_t i = 0; i < 3; ++i) EXPECT_NEAR(r.stats[static_cast<size_t>(i)], 0.25 + std::log(double(i + 1)), 1e-6);
}

TEST(RefSdpa, PaddedAndFullyMaskedRowsAreZero) {
  RefCase c;
  c.b = 2;
  c.sq = 5;
  c.skv = 6;
  c.seq_q = {3, 5};
  c.seq_kv = {6, 2};
  // Bottom-right causal with a right bound: batch 1 (lq=5, lkv=2) has diagonal offset -3, so rows
  // 0..2 see no key at all.
  c.attr.set_causal_mask_bottom_right(true);
  RefResult r = run_ref(c, 3);
  for (int64_t i = 0; i < 5; ++i) {
    const bool empty0 = i >= 3, empty1 = i < 3;
    for (int64_t x = 0; x < 4; ++x) {
      EXPECT_TRUE(!empty0 || r.o[static_cast<size_t>(i * 4 + x)] == 0.0f) << "row " << i;
      EXPECT_TRUE(!empty1 || r.o[static_cast<size_t>((5 + i) * 4 + x)] == 0.0f) << "row " << i;
    }
    EXPECT_TRUE(!empty0 || r.stats[static_cast<size_t>(i)] == 0.0f) << "row " << i;
    EXPECT_TRUE(!empty1 || r.stats[static_cast<size_t>(5 + i)] == 0.0f) << "row " << i;
  }
  expect_matches_naive(c, 3);
}

TEST(RefSdpa, MatchesNaiveOnRandomShapes) {
  auto vary = [](test_random::IntPicker& pick, int trial, RefCase& c) {
    c.d = pick(1, 8);
    c.dv = pick(1, 8);
    if (trial % 3 == 1) c.attr.set_attn_scale(0.3);
    switch (trial % 4) {
      case 1: c.attr.set_causal_mask(true); break;
      case 2: c.attr.set_causal_mask_bottom_right(true).set_diagonal_band_left_bound(pick(1, 4)); break;
      case 3: c.attr.set_diagonal_band_left_bound(pick(0, 3)).set_diagonal_band_right_bound(pick(0, 3)); break;
      default: break;
    }
    const dg::DataType types[] = {dg::DataType::FLOAT, dg::DataType::HALF, dg::DataType::BFLOAT16,
                                  dg::DataType::FP8_E4M3, dg::DataType::FP8_E5M2};
    c.input_type = types[trial % 5];
    if (trial % 5 == 4) {
      for (int64_t b = 0; b < c.b; ++b) {
        c.seq_q.push_back(static_cast<int32_t>(pick(0, c.sq)));
        c.seq_kv.push_back(static_cast<int32_t>(pick(0, c.skv)));
      }
    }
  };
  sdpa_test::for_each_random_case<RefCase>(42, 24, 9, 9, vary, [](const RefCase& c, int trial) {
    expect_matches_naive(c, static_cast<uint32_t>(trial));
  });
}
