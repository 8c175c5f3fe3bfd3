// The reference layout ops against index arithmetic written in the test, on seeded random shapes,
// strides and types. Results must be exact: the input value, rounded to the output's type.
#include <gtest/gtest.h>

#include <cstring>

#include "engines/ref_test_util.hpp"

namespace {

using namespace ref_test;

// Expects y == x's value at src(y index), rounded to y's type, exactly.
void expect_moved(const HostTensor& y, const std::function<double(const Dims&)>& src) {
  expect_near(y, [&](const Dims& o) { return dnngraph::dtype::round_to(y.dtype, src(o)); }, 0.0);
}

TEST(RefLayout, RandomReshapes) {
  std::mt19937 rng(51);
  for (int trial = 0; trial < 40; ++trial) {
    HostTensor x = random_tensor(random_dims(rng, 1 + rng() % 4, 5), random_float_type(rng), rng);
    const Dims yd = random_factorization(volume(x.dims), 1 + rng() % 4, rng);
    Dims attr_dims = yd;
    if (trial % 2) attr_dims[rng() % yd.size()] = -1;
    HostTensor y = make_tensor(yd, random_strides(yd, rng), random_float_type(rng));
    SCOPED_TRACE("trial " + std::to_string(trial));
    auto s = run_one_op_on_ref(
        x, y, [&](dg::Graph& g, const dg::TensorPtr& X) { return g.reshape(X, dg::ReshapeAttr().set_dim(attr_dims)); });
    ASSERT_TRUE(s.ok()) << s.to_string();
    expect_moved(y, [&](const Dims& o) { return x.get(test_dims::unravel(test_dims::ravel(o, yd), x.dims)); });
  }
}

TEST(RefLayout, RandomTransposes) {
  std::mt19937 rng(52);
  for (int trial = 0; trial < 40; ++trial) {
    HostTensor x = random_tensor(random_dims(rng, 1 + rng() % 4, 5), random_float_type(rng), rng);
    Dims perm(x.dims.size());
    std::iota(perm.begin(), perm.end(), 0);
    std::shuffle(perm.begin(), perm.end(), rng);
    Dims yd(perm.size());
    for (size_t i = 0; i < perm.size(); ++i) yd[i] = x.dims[static_cast<size_t>(perm[i])];
    const bool packed = trial % 2 == 0;  // inference picks row-major packed strides
    HostTensor y = make_tensor(yd, packed ? test_dims::packed(yd) : random_strides(yd, rng), random_float_type(rng));
    SCOPED_TRACE("trial " + std::to_string(trial));
    dg::Graph g;
    auto X = x.declare(g, "X");
    auto Y = g.transpose(X, dg::TransposeAttr().set_permutation(perm));
    if (packed) Y->set_data_type(y.dtype).set_output(true);
    else y.describe(Y);
    auto s = run_on_ref(g, {{X, x.data()}, {Y, y.data()}});
    ASSERT_TRUE(s.ok()) << s.to_string();
    ASSERT_EQ(Y->get_stride(), y.strides);
    expect_moved(y, [&](const Dims& o) {
      Dims i(o.size());
      for (size_t k = 0; k < o.size(); ++k) i[static_cast<size_t>(perm[k])] = o[k];
      return x.get(i);
    });
  }
}

TEST(RefLayout, RandomSlices) {
  std::mt19937 rng(53);
  for (int trial = 0; trial < 40; ++trial) {
    HostTensor x = random_tensor(random_dims(rng, 1 + rng() % 4, 6), random_float_type(rng), rng);
    std::vector<std::pair<int64_t, int64_t>> slices(rng() % (x.dims.size() + 1));
    Dims yd = x.dims, start(x.dims.size(), 0);
    for (size_t i = 0; i < slices.size(); ++i) {
      const int64_t a = static_cast<int64_t>(rng() % static_cast<uint32_t>(x.dims[i]));
      const int64_t b = a + 1 + static_cast<int64_t>(rng() % static_cast<uint32_t>(x.dims[i] - a));
      slices[i] = {a, b};
      yd[i] = b - a;
      start[i] = a;
    }
    HostTensor y = make_tensor(yd, random_strides(yd, rng), random_float_type(rng));
    SCOPED_TRACE("trial " + std::to_string(trial));
    auto s = run_one_op_on_ref(
        x, y, [&](dg::Graph& g, const dg::TensorPtr& X) { return g.slice(X, dg::SliceAttr().set_slices(slices)); });
    ASSERT_TRUE(s.ok()) << s.to_string();
    expect_moved(y, [&](const Dims& o) {
      Dims i = o;
      for (size_t k = 0; k < i.size(); ++k) i[k] += start[k];
      return x.get(i);
    });
  }
}

TEST(RefLayout, RandomConcatenations) {
  std::mt19937 rng(54);
  for (int trial = 0; trial < 40; ++trial) {
    const Dims base = random_dims(rng, 1 + rng() % 4, 4);
    const size_t axis = rng() % base.size();
    std::vector<HostTensor> xs(1 + rng() % 4);
    Dims yd = base;
    yd[axis] = 0;
    for (auto& x : xs) {
      Dims d = base;
      d[axis] = 1 + rng() % 4;
      yd[axis] += d[axis];
      x = random_tensor(d, random_float_type(rng), rng);
    }
    HostTensor y = make_tensor(yd, random_strides(yd, rng), random_float_type(rng));
    SCOPED_TRACE("trial " + std::to_string(trial));
    dg::Graph g;
    std::vector<dg::TensorPtr> inputs;
    dg::VariantPack pack;
    for (size_t k = 0; k < xs.size(); ++k) {
      inputs.push_back(xs[k].declare(g, "X" + std::to_string(k)));
      pack[inputs.back()] = xs[k].data();
    }
    auto Y = g.concatenate(inputs, dg::ConcatenateAttr().set_axis(static_cast<int64_t>(axis)));
    y.describe(Y);
    pack[Y] = y.data();
    auto s = run_on_ref(g, pack);
    ASSERT_TRUE(s.ok()) << s.to_string();
    expect_moved(y, [&](const Dims& o) {
      Dims i = o;
      size_t k = 0;
      while (i[axis] >= xs[k].dims[axis]) i[axis] -= xs[k++].dims[axis];
      return xs[k].get(i);
    });
  }
}

// Equal types copy bits: int64 values beyond 2^53 (not representable in double) survive.
TEST(RefLayout, EqualTypesCopyExactly) {
  HostTensor x = make_tensor({2, 3}, {3, 1}, dg::DataType::INT64);
  HostTensor y = make_tensor({3, 2}, {2, 1}, dg::DataType::INT64);
  std::vector<int64_t> values(6);
  for (size_t i = 0; i < 6; ++i) values[i] = (int64_t{1} << 60) + static_cast<int64_t>(2 * i + 1);
  std::memcpy(x.data(), values.data(), 48);
  dg::Graph g;
  auto X = x.declare(g, "X");
  auto Y = g.transpose(X, dg::TransposeAttr().set_permutation({1, 0}));
  y.describe(Y);
  ASSERT_TRUE(run_on_ref(g, {{X, x.data()}, {Y, y.data()}}).ok());
  std::vector<int64_t> got(6);
  std::memcpy(got.data(), y.data(), 48);
  for (size_t r = 0; r < 3; ++r)
    for (size_t c = 0; c < 2; ++c) EXPECT_EQ(got[r * 2 + c], values[c * 3 + r]);
}

}  // namespace
