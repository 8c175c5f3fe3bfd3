// The reference resample against hand-worked cases (PyTorch's known outputs) and against
// independent computations on seeded random shapes: pooling by clipped window ranges, as PyTorch
// writes it, and resizing by PyTorch's per-dim source index and lambda formulas.
#include <gtest/gtest.h>

#include <limits>

#include "engines/ref_test_util.hpp"

namespace {

using namespace ref_test;
using R = dg::ResampleMode;

HostTensor run_resample(HostTensor x, const dg::ResampleAttr& attr, HostTensor y) {
  auto s = run_one_op_on_ref(x, y, [&](dg::Graph& g, const dg::TensorPtr& X) { return g.resample(X, attr); });
  EXPECT_TRUE(s.ok()) << s.to_string();
  return y;
}

HostTensor dense(const Dims& dims, const std::vector<double>& values) {
  HostTensor t = make_tensor(dims, test_dims::packed(dims), dg::DataType::FLOAT);
  size_t n = 0;
  for_each(dims, [&](const Dims& i) { t.set(i, values.empty() ? static_cast<double>(n++) : values[n++]); });
  return t;
}

void expect_values(const HostTensor& y, const std::vector<double>& want) {
  size_t n = 0;
  for_each(y.dims, [&](const Dims& i) {
    EXPECT_EQ(y.get(i), static_cast<double>(static_cast<float>(want[n]))) << "element " << n;  // y is FLOAT
    ++n;
  });
}

TEST(RefResample, HandWorkedPoolingAndResizing) {
  const HostTensor x4 = dense({1, 1, 4, 4}, {});  // 0..15
  auto pool = [](R m) { return dg::ResampleAttr().set_resampling_mode(m).set_window({2, 2}).set_stride({2, 2}); };
  expect_values(run_resample(x4, pool(R::MAXPOOL), dense({1, 1, 2, 2}, {0, 0, 0, 0})), {5, 7, 13, 15});
  expect_values(run_resample(x4, pool(R::AVGPOOL_INCLUDE_PADDING), dense({1, 1, 2, 2}, {0, 0, 0, 0})),
                {2.5, 4.5, 10.5, 12.5});
  // 3x3 windows, stride 2, padding 1: corner windows see 4 of 9 elements.
  auto padded = [](R m) {
    return dg::ResampleAttr().set_resampling_mode(m).set_window({3, 3}).set_stride({2, 2}).set_padding({1, 1});
  };
  const HostTensor out2 = dense({1, 1, 2, 2}, {0, 0, 0, 0});
  expect_values(run_resample(x4, padded(R::AVGPOOL_EXCLUDE_PADDING), out2), {2.5, 4, 8.5, 10});
  expect_values(run_resample(x4, padded(R::AVGPOOL_INCLUDE_PADDING), out2), {10.0 / 9, 24.0 / 9, 51.0 / 9, 10});
  expect_values(run_resample(x4, padded(R::MAXPOOL), out2), {5, 7, 13, 15});
  // Max pooling pads with -inf: an all-negative input never yields the padding.
  HostTensor neg = dense({1, 1, 2, 2}, {-4, -3, -2, -1});
  expect_values(run_resample(neg, padded(R::MAXPOOL).set_stride({1, 1}), out2), {-1, -1, -1, -1});
  // torch.nn.functional.interpolate([[1, 2], [3, 4]], size=(4, 4), mode='bilinear', align_corners=False)
  const HostTensor x2 = dense({1, 1, 2, 2}, {1, 2, 3, 4});
  const HostTensor out4 = dense({1, 1, 4, 4}, std::vector<double>(16, 0.0));
  expect_values(run_resample(x2, dg::ResampleAttr().set_resampling_mode(R::BILINEAR), out4),
                {1, 1.25, 1.75, 2, 1.5, 1.75, 2.25, 2.5, 2.5, 2.75, 3.25, 3.5, 3, 3.25, 3.75, 4});
  expect_values(run_resample(x2, dg::ResampleAttr().set_resampling_mode(R::NEAREST), out4),
                {1, 1, 2, 2, 1, 1, 2, 2, 3, 3, 4, 4, 3, 3, 4, 4});
}

// Pooling as PyTorch writes it: the window [o*s - pre, o*s - pre + k) clipped to the input.
double pooled(const HostTensor& x, const dg::ResampleAttr& a, const Dims& o) {
  const size_t spatial = x.dims.size() - 2;
  Dims lo(spatial), hi(spatial), box(spatial);
  double window = 1.0;
  for (size_t i = 0; i < spatial; ++i) {
    const int64_t start = o[i + 2] * a.get_stride()[i] - a.get_pre_padding()[i];
    lo[i] = std::max<int64_t>(start, 0);
    hi[i] = std::min(start + a.get_window()[i], x.dims[i + 2]);
    box[i] = hi[i] - lo[i];
    window *= static_cast<double>(a.get_window()[i]);
  }
  double sum = 0.0, max = -std::numeric_limits<double>::infinity();
  for_each(box, [&](const Dims& k) {
    Dims idx = o;
    for (size_t i = 0; i < spatial; ++i) idx[i + 2] = lo[i] + k[i];
    sum += x.get(idx);
    max = std::max(max, x.get(idx));
  });
  switch (a.get_resampling_mode()) {
    case R::MAXPOOL: return max;
    case R::AVGPOOL_INCLUDE_PADDING: return sum / window;
    default: return sum / static_cast<double>(volume(box));
  }
}

// PyTorch's linear interpolation along one dim (align_corners=False): the low source index, its
// neighbour (clamped) and the weight of the neighbour.
struct Linear {
  int64_t i0, i1;
  double lambda;
};
Linear linear(int64_t o, int64_t in, int64_t out) {
  const double scale = static_cast<double>(in) / static_cast<double>(out);
  const double real = std::max(scale * (static_cast<double>(o) + 0.5) - 0.5, 0.0);
  const auto i0 = static_cast<int64_t>(real);
  return {i0, i0 < in - 1 ? i0 + 1 : i0, real - static_cast<double>(i0)};
}

double resized(const HostTensor& x, R mode, const Dims& out, const Dims& o) {
  const size_t spatial = x.dims.size() - 2;
  if (mode == R::NEAREST) {
    Dims idx = o;
    for (size_t i = 2; i < o.size(); ++i)
      idx[i] = std::min(static_cast<int64_t>(std::floor(static_cast<double>(o[i] * x.dims[i]) / out[i])), x.dims[i] - 1);
    return x.get(idx);
  }
  double acc = 0.0;
  for (uint32_t corner = 0; corner < (1u << spatial); ++corner) {
    Dims idx = o;
    double w = 1.0;
    for (size_t i = 0; i < spatial; ++i) {
      const Linear l = linear(o[i + 2], x.dims[i + 2], out[i + 2]);
      const bool up = (corner >> i) & 1u;
      idx[i + 2] = up ? l.i1 : l.i0;
      w *= up ? l.lambda : 1.0 - l.lambda;
    }
    acc += w * x.get(idx);
  }
  return acc;
}

TEST(RefResample, RandomPooling) {
  std::mt19937 rng(41);
  const R modes[] = {R::MAXPOOL, R::AVGPOOL_INCLUDE_PADDING, R::AVGPOOL_EXCLUDE_PADDING};
  for (int trial = 0; trial < 60; ++trial) {
    const size_t spatial = 1 + rng() % 3;
    Dims xd = random_dims(rng, spatial + 2, 3);
    Dims window(spatial), stride(spatial), pre(spatial), post(spatial);
    for (size_t i = 0; i < spatial; ++i) {
      window[i] = 1 + rng() % 3;
      stride[i] = 1 + rng() % 3;
      pre[i] = static_cast<int64_t>(rng() % static_cast<uint32_t>(window[i]));
      post[i] = static_cast<int64_t>(rng() % static_cast<uint32_t>(window[i]));
      xd[i + 2] = std::max<int64_t>(1 + rng() % 7, window[i]);
    }
    auto attr = dg::ResampleAttr().set_resampling_mode(modes[trial % 3]).set_window(window).set_stride(stride)
                    .set_pre_padding(pre).set_post_padding(post);
    Dims yd = xd;
    for (size_t i = 0; i < spatial; ++i) yd[i + 2] = (xd[i + 2] + pre[i] + post[i] - window[i]) / stride[i] + 1;
    SCOPED_TRACE("trial " + std::to_string(trial));
    HostTensor x = random_tensor(xd, random_float_type(rng), rng);
    HostTensor y = run_resample(x, attr, make_tensor(yd, random_strides(yd, rng), random_float_type(rng)));
    expect_near(y, [&](const Dims& o) { return pooled(x, attr, o); });
  }
}

TEST(RefResample, RandomResizing) {
  std::mt19937 rng(42);
  for (int trial = 0; trial < 60; ++trial) {
    const R mode = trial % 2 ? R::NEAREST : R::BILINEAR;
    const size_t spatial = 1 + rng() % 3;
    const Dims xd = random_dims(rng, spatial + 2, 6);
    Dims yd = xd;
    auto attr = dg::ResampleAttr().set_resampling_mode(mode);
    const bool by_scale = trial % 3 == 0;
    std::vector<double> scale(spatial);
    for (size_t i = 0; i < spatial; ++i) {
      scale[i] = 0.5 * static_cast<double>(1 + rng() % 6);  // 0.5 .. 3
      if (xd[i + 2] * scale[i] < 1.0) scale[i] = 1.0;  // keeps the output at least 1 wide
      yd[i + 2] = by_scale ? static_cast<int64_t>(std::floor(xd[i + 2] * scale[i])) : 1 + static_cast<int64_t>(rng() % 9);
    }
    if (by_scale) attr.set_scale(scale);
    SCOPED_TRACE("trial " + std::to_string(trial));
    HostTensor x = random_tensor(xd, random_float_type(rng), rng);
    HostTensor y = make_tensor(yd, random_strides(yd, rng), random_float_type(rng));
    dg::Graph g;
    auto X = x.declare(g, "X");
    auto Y = g.resample(X, attr);
    if (by_scale) Y->set_stride(y.strides).set_data_type(y.dtype).set_output(true);
    else y.describe(Y);
    auto s = run_on_ref(g, {{X, x.data()}, {Y, y.data()}});
    ASSERT_TRUE(s.ok()) << s.to_string();
    ASSERT_EQ(Y->get_dim(), yd);
    expect_near(y, [&](const Dims& o) { return resized(x, mode, yd, o); });
  }
}

}  // namespace
