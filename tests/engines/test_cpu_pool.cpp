// cpu_pool_direct against ref: max and average pooling (padding included and excluded) and nearest and
// bilinear resizing over 1-3 spatial dims, NHWC, NCHW and random layouts, fp32/bf16/fp16, NaN
// propagation, blocks longer than the accumulator, every ISA plan; the kernels directly; and
// every rejection reason.
#include <gtest/gtest.h>

#include <random>

#include "cpu_test_util.hpp"
#include "engines/cpu/pool/pool_direct.hpp"
#include "engines/cpu/pool/pool_kernels.hpp"
#include "pool_test_util.hpp"

namespace {

namespace dg = dnngraph;
using ref_test::Dims;
using ref_test::HostTensor;
using RM = dg::ResampleMode;
constexpr const char* kEngine = "cpu_pool_direct";
using pool_test::Layout;
using pool_test::pooled;
using pool_test::strides_of;

// Runs resample(x, attr) on ref and on cpu_pool_direct (every plan index), and compares.
void check_vs_ref(const HostTensor& x, const HostTensor& y_like, const dg::ResampleAttr& attr) {
  cpu_test::check_engine_vs_ref(kEngine, {x}, {y_like}, [&](dg::Graph& g, const std::vector<dg::TensorPtr>& in) {
    return std::vector<dg::TensorPtr>{g.resample(in[0], attr)};
  }, -1.0, 1.0);
}

HostTensor tensor_in(const Dims& dims, Layout l, dg::DataType t, std::mt19937& rng) {
  HostTensor h = ref_test::make_tensor(dims, strides_of(dims, l, rng), t);
  h.randomize(rng, -2, 2);
  return h;
}
HostTensor tensor_out(const Dims& dims, Layout l, dg::DataType t, std::mt19937& rng) {
  return ref_test::make_tensor(dims, strides_of(dims, l, rng), t);
}

// ---- kernels

TEST(CpuPoolKernels, MatchPlainLoopsOnEveryIsa) {
  std::mt19937 rng(301);
  std::uniform_real_distribution<float> u(-3, 3);
  cpu_test::for_each_isa([&](dg::cpu::Isa isa) {
    const auto& k = dg::cpu::pool::pool_kernels(isa);
    for (int64_t n : {1, 9, 16, 37}) {
      std::vector<std::vector<float>> r(3, std::vector<float>(static_cast<size_t>(n)));
      std::vector<float> acc(n), f(n);
      for (int64_t i = 0; i < n; ++i) acc[i] = u(rng), f[i] = u(rng), r[0][i] = u(rng), r[1][i] = u(rng), r[2][i] = u(rng);
      r[1][static_cast<size_t>(n / 2)] = std::nanf("");
      const float* rows[3] = {r[0].data(), r[1].data(), r[2].data()};
      auto m = acc;
      k.max_rows(m.data(), rows, 3, n);
      for (int64_t i = 0; i < n; ++i) {
        if (i == n / 2) EXPECT_TRUE(std::isnan(m[i]));
        else EXPECT_EQ(m[i], std::max({acc[i], r[0][i], r[1][i], r[2][i]}));
      }
      auto again = m;  // a NaN already in the accumulator stays
      k.max_rows(again.data(), rows, 1, n);
      EXPECT_TRUE(std::isnan(again[n / 2]));
      r[1][static_cast<size_t>(n / 2)] = 1.0f;
      const float w[3] = {0.5f, -1.0f, 2.0f};
      auto a = acc;
      k.sum_rows(a.data(), rows, nullptr, 3, n);
      for (int64_t i = 0; i < n; ++i) EXPECT_NEAR(a[i], acc[i] + r[0][i] + r[1][i] + r[2][i], 1e-5);
      a = acc;
      k.sum_rows(a.data(), rows, w, 3, n);
      for (int64_t i = 0; i < n; ++i) EXPECT_NEAR(a[i], acc[i] + 0.5f * r[0][i] - r[1][i] + 2.0f * r[2][i], 1e-5);
      a = acc;
      k.mul_row(a.data(), f.data(), n);
      for (int64_t i = 0; i < n; ++i) EXPECT_FLOAT_EQ(a[i], acc[i] * f[i]);
      std::vector<float> pairs(static_cast<size_t>(2 * n)), even(n), odd(n);
      for (auto& v : pairs) v = u(rng);
      k.deinterleave2(pairs.data(), n, even.data(), odd.data());
      for (int64_t j = 0; j < n; ++j) {
        EXPECT_EQ(even[j], pairs[static_cast<size_t>(2 * j)]);
        EXPECT_EQ(odd[j], pairs[static_cast<size_t>(2 * j + 1)]);
      }
    }
  });
}

// ---- graphs vs ref

TEST(CpuPool, RandomPoolingMatchesRef) {
  std::mt19937 rng(302);
  const RM modes[] = {RM::MAXPOOL, RM::AVGPOOL_INCLUDE_PADDING, RM::AVGPOOL_EXCLUDE_PADDING};
  for (int trial = 0; trial < 30; ++trial) {
    const size_t spatial = 1 + rng() % 3;
    Dims x = {int64_t(1 + rng() % 3), int64_t(1 + rng() % 12)};
    Dims w, s, pre, post;
    for (size_t i = 0; i < spatial; ++i) {
      w.push_back(1 + rng() % 3);
      s.push_back(1 + rng() % 3);
      pre.push_back(rng() % w.back());
      post.push_back(rng() % w.back());
      x.push_back(std::max<int64_t>(w.back(), 1 + rng() % (spatial == 3 ? 6 : 11)));
    }
    const Layout l = static_cast<Layout>(trial % 3);
    const auto mode = modes[trial % 3 == 0 ? (trial / 3) % 3 : trial % 3];
    SCOPED_TRACE("trial " + std::to_string(trial) + " " + std::string(dg::to_string(mode)));
    check_vs_ref(tensor_in(x, l, ref_test::random_float_type(rng), rng),
                 tensor_out(pooled(x, w, s, pre, post), l, ref_test::random_float_type(rng), rng),
                 dg::ResampleAttr().set_resampling_mode(mode).set_window(w).set_stride(s).set_pre_padding(pre).set_post_padding(post));
  }
}

TEST(CpuPool, RandomResizingMatchesRef) {
  std::mt19937 rng(303);
  for (int trial = 0; trial < 20; ++trial) {
    const size_t spatial = 1 + rng() % 3;
    Dims x = {int64_t(1 + rng() % 3), int64_t(1 + rng() % 10)}, y;
    for (size_t i = 0; i < spatial; ++i) x.push_back(1 + rng() % 9);
    y = x;
    for (size_t i = 0; i < spatial; ++i) y[i + 2] = 1 + rng() % 13;  // up and down
    const Layout l = static_cast<Layout>(trial % 3);
    const auto mode = trial % 2 ? RM::NEAREST : RM::BILINEAR;
    SCOPED_TRACE("trial " + std::to_string(trial) + " " + std::string(dg::to_string(mode)));
    check_vs_ref(tensor_in(x, l, ref_test::random_float_type(rng), rng),
                 tensor_out(y, l, ref_test::random_float_type(rng), rng), dg::ResampleAttr().set_resampling_mode(mode));
  }
}

TEST(CpuPool, MaxPoolingPropagatesNaN) {
  std::mt19937 rng(304);
  for (Layout l : {Layout::NHWC, Layout::NCHW}) {
    HostTensor x = tensor_in({1, 3, 6, 6}, l, dg::DataType::FLOAT, rng);
    x.set({0, 1, 2, 3}, std::nan(""));
    check_vs_ref(x, tensor_out({1, 3, 3, 3}, l, dg::DataType::FLOAT, rng),
                 dg::ResampleAttr().set_resampling_mode(RM::MAXPOOL).set_window({2, 2}).set_stride({2, 2}));
  }
}

// Channel and row blocks longer than the accumulator (512), over several threads' items.
TEST(CpuPool, LongChannelsAndRowsMatchRef) {
  std::mt19937 rng(305);
  const auto pool3 = dg::ResampleAttr().set_resampling_mode(RM::AVGPOOL_EXCLUDE_PADDING).set_window({3, 3}).set_stride({1, 2}).set_padding({1, 1});
  check_vs_ref(tensor_in({2, 600, 3, 4}, Layout::NHWC, dg::DataType::BFLOAT16, rng),
               tensor_out(pooled({2, 600, 3, 4}, {3, 3}, {1, 2}, {1, 1}, {1, 1}), Layout::NHWC, dg::DataType::FLOAT, rng), pool3);
  check_vs_ref(tensor_in({1, 2, 3, 1300}, Layout::NCHW, dg::DataType::HALF, rng),
               tensor_out(pooled({1, 2, 3, 1300}, {3, 3}, {1, 2}, {1, 1}, {1, 1}), Layout::NCHW, dg::DataType::HALF, rng), pool3);
  for (int64_t w : {45, 46})  // stride 2 over fp32 rows: the SIMD deinterleave, odd and even widths
    check_vs_ref(tensor_in({2, 3, 5, w}, Layout::NCHW, dg::DataType::FLOAT, rng),
                 tensor_out(pooled({2, 3, 5, w}, {3, 3}, {2, 2}, {1, 1}, {1, 1}), Layout::NCHW, dg::DataType::FLOAT, rng),
                 dg::ResampleAttr().set_resampling_mode(RM::MAXPOOL).set_window({3, 3}).set_stride({2, 2}).set_padding({1, 1}));
  check_vs_ref(tensor_in({1, 2, 2, 700}, Layout::NCHW, dg::DataType::FLOAT, rng),
               tensor_out({1, 2, 3, 1100}, Layout::NCHW, dg::DataType::FLOAT, rng),
               dg::ResampleAttr().set_resampling_mode(RM::BILINEAR));
}

// ---- rejections

using cpu_test::explain;
using cpu_test::packed;

void expect_rejected(const std::string& explain, const std::string& reason) {
  cpu_test::expect_rejected(kEngine, explain, reason);
}

dg::ResampleAttr maxpool(size_t spatial) {
  return dg::ResampleAttr().set_name("pool").set_resampling_mode(RM::MAXPOOL).set_window(Dims(spatial, 1)).set_stride(Dims(spatial, 1));
}

TEST(CpuPool, RejectsOtherPartitions) {
  dg::Graph g;
  g.relu(packed(g, "X", {2, 2}))->set_output(true);
  expect_rejected(explain(g), "takes a partition of one resample node; this one has 1 node(s), the first 'pointwise_0' (pointwise)");
}

TEST(CpuPool, RejectsUnsupportedTypesAndRanks) {
  dg::Graph g;
  g.resample(packed(g, "X", {1, 2, 4, 4}, dg::DataType::DOUBLE), maxpool(2))->set_output(true);
  expect_rejected(explain(g), "node 'pool', tensor 'X': data type DOUBLE is not supported (FLOAT, HALF and BFLOAT16 are)");
  dg::Graph h;
  h.resample(packed(h, "X", Dims(9, 2)), maxpool(7))->set_output(true);
  expect_rejected(explain(h), "node 'pool', tensor 'X': rank 9 is above 8");
}

TEST(CpuPool, RejectsNonCpuHandlesAndUnsupportedIsaKnobs) {
  dg::Graph g;
  g.resample(packed(g, "X", {1, 2, 4, 4}), maxpool(2))->set_output(true);
  cpu_test::expect_cpu_only(dg::cpu::pool_direct_engine(), g, true);
}

}  // namespace
