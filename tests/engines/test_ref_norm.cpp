// The reference normalizations against independent per-row computations (mean by sum, variance
// by E[x^2] - mean^2) on seeded random shapes, layouts and types, both forward phases.
#include <gtest/gtest.h>

#include "engines/ref_test_util.hpp"

namespace {

using namespace ref_test;

// Row statistics of X (rows along dim 0): sum and sum of squares over the rest.
struct RowStats {
  std::vector<double> sum, sum_sq;
  double count = 0;
};

RowStats row_stats(const HostTensor& x) {
  RowStats r;
  r.sum.assign(static_cast<size_t>(x.dims[0]), 0.0);
  r.sum_sq = r.sum;
  r.count = static_cast<double>(volume(x.dims) / x.dims[0]);
  for_each(x.dims, [&](const Dims& i) {
    const double v = x.get(i);
    r.sum[static_cast<size_t>(i[0])] += v;
    r.sum_sq[static_cast<size_t>(i[0])] += v * v;
  });
  return r;
}

Dims with_first(Dims d, int64_t first) {
  d[0] = first;
  return d;
}

// Parameter dims: (1, rest of X).
Dims row_param(const Dims& x) { return with_first(x, 1); }
// Statistic dims: (N, 1, ..., 1).
Dims stat_dims(const Dims& x) { return with_first(Dims(x.size(), 1), x[0]); }
// Parameter index for X index idx: dim 0 pinned.
Dims param_at(const Dims& idx) { return with_first(idx, 0); }

TEST(RefBatchnorm, RandomShapesLayoutsAndTypes) {
  std::mt19937 rng(31);
  for (int trial = 0; trial < 40; ++trial) {
    const Dims xd = random_dims(rng, 2 + rng() % 3, 5);
    Dims pd(xd.size(), 1);
    pd[1] = xd[1];
    HostTensor x = random_tensor(xd, random_float_type(rng), rng);
    HostTensor mean = random_tensor(pd, random_float_type(rng), rng);
    HostTensor inv_var = random_tensor(pd, random_float_type(rng), rng, 0.25, 2.0);
    HostTensor scale = random_tensor(pd, random_float_type(rng), rng);
    HostTensor bias = random_tensor(pd, random_float_type(rng), rng);
    HostTensor y = make_tensor(xd, random_strides(xd, rng), random_float_type(rng));
    SCOPED_TRACE("trial " + std::to_string(trial));
    dg::Graph g;
    auto X = x.declare(g, "X"), M = mean.declare(g, "M"), V = inv_var.declare(g, "V");
    auto S = scale.declare(g, "S"), B = bias.declare(g, "B");
    auto Y = g.batchnorm_inference(X, M, V, S, B, dg::BatchnormInferenceAttr());
    y.describe(Y);
    auto s = run_on_ref(g, {{X, x.data()}, {M, mean.data()}, {V, inv_var.data()}, {S, scale.data()},
                            {B, bias.data()}, {Y, y.data()}});
    ASSERT_TRUE(s.ok()) << s.to_string();
    expect_near(y, [&](const Dims& i) {
      Dims c(i.size(), 0);
      c[1] = i[1];
      return (x.get(i) - mean.get(c)) * inv_var.get(c) * scale.get(c) + bias.get(c);
    });
  }
}

TEST(RefLayernorm, RandomShapesLayoutsTypesAndPhases) {
  std::mt19937 rng(32);
  for (int trial = 0; trial < 40; ++trial) {
    const bool training = trial % 2 == 0;
    const Dims xd = random_dims(rng, 2 + rng() % 3, 6);
    const double eps = trial % 4 < 2 ? 1e-5 : 0.5;
    HostTensor x = random_tensor(xd, random_float_type(rng), rng, -3.0, 5.0);
    HostTensor scale = random_tensor(row_param(xd), random_float_type(rng), rng);
    HostTensor bias = random_tensor(row_param(xd), random_float_type(rng), rng);
    HostTensor y = make_tensor(xd, random_strides(xd, rng), random_float_type(rng));
    HostTensor mean = make_tensor(stat_dims(xd), Dims(xd.size(), 1), dg::DataType::FLOAT);
    HostTensor inv_var = mean;
    SCOPED_TRACE("trial " + std::to_string(trial));
    dg::Graph g;
    auto X = x.declare(g, "X"), S = scale.declare(g, "S"), B = bias.declare(g, "B");
    auto phase = training ? dg::NormFwdPhase::TRAINING : dg::NormFwdPhase::INFERENCE;
    auto [Y, MEAN, INV_VAR] = g.layernorm(X, S, B, dg::LayernormAttr().set_forward_phase(phase).set_epsilon(eps));
    y.describe(Y);
    dg::VariantPack pack{{X, x.data()}, {S, scale.data()}, {B, bias.data()}, {Y, y.data()}};
    if (training) {
      mean.describe(MEAN);
      inv_var.describe(INV_VAR);
      pack[MEAN] = mean.data();
      pack[INV_VAR] = inv_var.data();
    }
    auto s = run_on_ref(g, pack);
    ASSERT_TRUE(s.ok()) << s.to_string();
    const RowStats r = row_stats(x);
    auto mu = [&](int64_t n) { return r.sum[static_cast<size_t>(n)] / r.count; };
    auto inv = [&](int64_t n) {
      const double var = r.sum_sq[static_cast<size_t>(n)] / r.count - mu(n) * mu(n);
      return 1.0 / std::sqrt(var + eps);
    };
    expect_near(y, [&](const Dims& i) {
      return (x.get(i) - mu(i[0])) * inv(i[0]) * scale.get(param_at(i)) + bias.get(param_at(i));
    });
    if (training) {
      expect_near(mean, [&](const Dims& i) { return mu(i[0]); });
      expect_near(inv_var, [&](const Dims& i) { return inv(i[0]); });
    }
  }
}

TEST(RefRmsnorm, RandomShapesLayoutsTypesBiasAndPhases) {
  std::mt19937 rng(33);
  for (int trial = 0; trial < 40; ++trial) {
    const bool training = trial % 2 == 0, with_bias = trial % 3 != 0;
    const Dims xd = random_dims(rng, 2 + rng() % 3, 6);
    const double eps = 1e-6;
    HostTensor x = random_tensor(xd, random_float_type(rng), rng);
    HostTensor scale = random_tensor(row_param(xd), random_float_type(rng), rng);
    HostTensor bias = random_tensor(row_param(xd), random_float_type(rng), rng);
    HostTensor y = make_tensor(xd, random_strides(xd, rng), random_float_type(rng));
    HostTensor inv_rms = make_tensor(stat_dims(xd), Dims(xd.size(), 1), dg::DataType::FLOAT);
    SCOPED_TRACE("trial " + std::to_string(trial));
    dg::Graph g;
    auto X = x.declare(g, "X"), S = scale.declare(g, "S");
    dg::RmsnormAttr attr;
    attr.set_forward_phase(training ? dg::NormFwdPhase::TRAINING : dg::NormFwdPhase::INFERENCE).set_epsilon(eps);
    dg::TensorPtr B;
    if (with_bias) attr.set_bias(B = bias.declare(g, "B"));
    auto [Y, INV_RMS] = g.rmsnorm(X, S, attr);
    y.describe(Y);
    dg::VariantPack pack{{X, x.data()}, {S, scale.data()}, {Y, y.data()}};
    if (with_bias) pack[B] = bias.data();
    if (training) {
      inv_rms.describe(INV_RMS);
      pack[INV_RMS] = inv_rms.data();
    }
    auto s = run_on_ref(g, pack);
    ASSERT_TRUE(s.ok()) << s.to_string();
    const RowStats r = row_stats(x);
    auto inv = [&](int64_t n) { return 1.0 / std::sqrt(r.sum_sq[static_cast<size_t>(n)] / r.count + eps); };
    expect_near(y, [&](const Dims& i) {
      return x.get(i) * inv(i[0]) * scale.get(param_at(i)) + (with_bias ? bias.get(param_at(i)) : 0.0);
    });
    if (training) expect_near(inv_rms, [&](const Dims& i) { return inv(i[0]); });
  }
}

// A row worked by hand: x = (1, 2, 3, 4), mean 2.5, biased variance 1.25.
TEST(RefLayernorm, HandWorkedRow) {
  std::mt19937 rng(34);
  HostTensor x = make_tensor({1, 4}, {4, 1}, dg::DataType::FLOAT);
  HostTensor one = make_tensor({1, 4}, {4, 1}, dg::DataType::FLOAT), zero = one;
  for (int64_t i = 0; i < 4; ++i) {
    x.set({0, i}, static_cast<double>(i + 1));
    one.set({0, i}, 1.0);
    zero.set({0, i}, 0.0);
  }
  HostTensor y = make_tensor({1, 4}, {4, 1}, dg::DataType::FLOAT);
  dg::Graph g;
  auto X = x.declare(g, "X"), S = one.declare(g, "S"), B = zero.declare(g, "B");
  auto outs = g.layernorm(X, S, B, dg::LayernormAttr().set_epsilon(0.0));
  y.describe(outs[0]);
  ASSERT_TRUE(run_on_ref(g, {{X, x.data()}, {S, one.data()}, {B, zero.data()}, {outs[0], y.data()}}).ok());
  const double inv = 1.0 / std::sqrt(1.25);
  for (int64_t i = 0; i < 4; ++i) EXPECT_FLOAT_EQ(y.get({0, i}), static_cast<float>((i + 1 - 2.5) * inv));
}

}  // namespace
