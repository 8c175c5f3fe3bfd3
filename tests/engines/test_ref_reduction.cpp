// The reference reduction against hand-worked values and against an independent scatter-style
// computation (every input element accumulates into its output slot) on seeded random cases.
#include <gtest/gtest.h>

#include <map>

#include "engines/ref_test_util.hpp"

namespace {

using namespace ref_test;
using M = dg::ReductionMode;

const M kModes[] = {M::ADD, M::MUL, M::MIN, M::MAX, M::AMAX, M::AVG, M::NORM1, M::NORM2};

// Reduces x into y's dims with mode m, in double.
HostTensor run_reduction(const HostTensor& x_in, M m, const Dims& y_dims, dg::DataType y_type, std::mt19937& rng) {
  HostTensor x = x_in;
  HostTensor y = make_tensor(y_dims, random_strides(y_dims, rng), y_type);
  auto s = run_one_op_on_ref(
      x, y, [&](dg::Graph& g, const dg::TensorPtr& X) { return g.reduction(X, dg::ReductionAttr().set_mode(m)); });
  EXPECT_TRUE(s.ok()) << s.to_string();
  return y;
}

// The expected output: a map from output index to (accumulator, count), filled in X's order.
std::map<Dims, double> expected(const HostTensor& x, M m, const Dims& y_dims) {
  std::map<Dims, double> acc;
  std::map<Dims, int64_t> count;
  for_each(x.dims, [&](const Dims& idx) {
    Dims o = idx;
    for (size_t i = 0; i < o.size(); ++i)
      if (y_dims[i] == 1) o[i] = 0;
    const double v = x.get(idx);
    auto [it, fresh] = acc.emplace(o, 0.0);
    double& a = it->second;
    ++count[o];
    switch (m) {
      case M::ADD: case M::AVG: a += v; break;
      case M::MUL: a = fresh ? v : a * v; break;
      case M::MIN: a = fresh ? v : std::min(a, v); break;
      case M::MAX: a = fresh ? v : std::max(a, v); break;
      case M::AMAX: a = std::max(a, std::fabs(v)); break;
      case M::NORM1: a += std::fabs(v); break;
      case M::NORM2: a += v * v; break;
      default: break;
    }
  });
  for (auto& [o, a] : acc) {
    if (m == M::AVG) a /= static_cast<double>(count[o]);
    if (m == M::NORM2) a = std::sqrt(a);
  }
  return acc;
}

TEST(RefReduction, HandWorkedRows) {
  // X = [[1, -2, 3], [4, 5, -6]], reduced over dim 1.
  const std::map<M, std::pair<double, double>> want{
      {M::ADD, {2, 3}},     {M::MUL, {-6, -120}}, {M::MIN, {-2, -6}},   {M::MAX, {3, 5}},
      {M::AMAX, {3, 6}},    {M::AVG, {2.0 / 3, 1}}, {M::NORM1, {6, 15}}, {M::NORM2, {std::sqrt(14.0), std::sqrt(77.0)}},
  };
  std::mt19937 rng(1);
  HostTensor x = make_tensor({2, 3}, {3, 1}, dg::DataType::FLOAT);
  const double values[2][3] = {{1, -2, 3}, {4, 5, -6}};
  for_each(x.dims, [&](const Dims& i) { x.set(i, values[i[0]][i[1]]); });
  for (M m : kModes) {
    SCOPED_TRACE(dg::to_string(m));
    HostTensor y = run_reduction(x, m, {2, 1}, dg::DataType::FLOAT, rng);
    EXPECT_DOUBLE_EQ(y.get({0, 0}), static_cast<float>(want.at(m).first));
    EXPECT_DOUBLE_EQ(y.get({1, 0}), static_cast<float>(want.at(m).second));
  }
}

TEST(RefReduction, NaNPropagatesThroughMinMaxAmax) {
  std::mt19937 rng(2);
  HostTensor x = make_tensor({1, 4}, {4, 1}, dg::DataType::FLOAT);
  const double values[] = {1.0, std::nan(""), -7.0, 2.0};
  for (int64_t i = 0; i < 4; ++i) x.set({0, i}, values[i]);
  for (M m : {M::MIN, M::MAX, M::AMAX, M::ADD}) {
    HostTensor y = run_reduction(x, m, {1, 1}, dg::DataType::FLOAT, rng);
    EXPECT_TRUE(std::isnan(y.get({0, 0}))) << dg::to_string(m);
  }
}

TEST(RefReduction, RandomShapesAxesLayoutsAndTypes) {
  std::mt19937 rng(20240611);
  for (int trial = 0; trial < 120; ++trial) {
    const M m = kModes[trial % 8];
    const Dims x_dims = random_dims(rng, 1 + rng() % 4, 5);
    // Each axis kept or reduced at random; every third case is the default full reduction.
    Dims y_dims(x_dims.size(), 1);
    const bool full = trial % 3 == 0;
    if (!full)
      for (size_t i = 0; i < y_dims.size(); ++i) y_dims[i] = rng() % 2 ? x_dims[i] : 1;
    const double range = m == M::MUL ? 1.05 : 2.0;  // keeps long products finite
    HostTensor x = random_tensor(x_dims, random_float_type(rng), rng, -range, range);
    const dg::DataType y_type = random_float_type(rng);
    SCOPED_TRACE("trial " + std::to_string(trial) + " " + std::string(dg::to_string(m)) + " " +
                 std::string(dg::to_string(x.dtype)) + " -> " + std::string(dg::to_string(y_type)));
    HostTensor y = make_tensor(y_dims, full ? Dims(y_dims.size(), 1) : random_strides(y_dims, rng), y_type);
    dg::Graph g;
    auto X = x.declare(g, "X");
    auto Y = g.reduction(X, dg::ReductionAttr().set_mode(m));
    if (full) {  // let inference pick the dims and strides
      Y->set_data_type(y_type).set_output(true);
    } else {
      y.describe(Y);
    }
    auto s = run_on_ref(g, {{X, x.data()}, {Y, y.data()}});
    ASSERT_TRUE(s.ok()) << s.to_string();
    if (full) {
      ASSERT_EQ(Y->get_dim(), y_dims);
    }
    const auto want = expected(x, m, y_dims);
    expect_near(y, [&](const Dims& o) { return want.at(o); });
  }
}

}  // namespace
