// cuda_conv_implicit_gemm against ref: NVRTC compile and rejection tests need no GPU; the GPU
// tests run random 1D/2D/3D convolutions (stride, dilation, asymmetric padding, sizes that fit no
// tile) with fused epilogues, outputs poisoned before each run.
#include <gtest/gtest.h>

#include <random>

#include "engines/cuda/conv/conv_problem.hpp"
#include "engines/cuda/nvrtc_compile.hpp"
#include "gemm_test_util.hpp"

namespace {

namespace dg = dnngraph;
namespace cv = dnngraph::cuda::conv;
using gemm_test::Dims;
using gemm_test::Expect;
using gemm_test::HostTensor;
using M = dg::PointwiseMode;

constexpr const char* kEngine = "cuda_conv_implicit_gemm";

// Channels-last strides for [N, C, spatial...] (and KRSC for filters [K, C, spatial...]).
Dims channels_last(const Dims& d) {
  Dims s(d.size());
  int64_t running = d[1];
  s[1] = 1;
  for (size_t i = d.size(); i-- > 2;) {
    s[i] = running;
    running *= d[i];
  }
  s[0] = running;
  return s;
}

HostTensor nhwc(const Dims& d, dg::DataType t) { return ref_test::make_tensor(d, channels_last(d), t); }

dg::TensorPtr declare(dg::Graph& g, const std::string& name, const Dims& d, dg::DataType t) {
  return g.tensor(dg::TensorAttr().set_name(name).set_dim(d).set_stride(channels_last(d)).set_data_type(t));
}

// The anchor partition's describe() result for a conv of these channel counts.
bool describe(int64_t c, int64_t wc, std::string& why) {
  dg::Graph g;
  g.set_io_data_type(dg::DataType::BFLOAT16).set_compute_data_type(dg::DataType::FLOAT);
  auto x = declare(g, "X", {2, c, 9, 9}, dg::DataType::BFLOAT16);
  auto w = declare(g, "W", {16, wc, 3, 3}, dg::DataType::BFLOAT16);
  auto y = g.conv_fprop(x, w, dg::ConvFpropAttr().set_padding({1, 1}));
  y->set_output(true).set_stride(channels_last({2, 16, 9, 9}));
  gemm_test::Lowered low;
  EXPECT_TRUE(gemm_test::lower_graph(g, low));
  for (const auto& p : low.parts) {
    if (p.anchor < 0) continue;
    cv::ConvProblem cp;
    return cv::describe_conv_fprop(p, cp, why);
  }
  return false;
}

TEST(CudaConvImplicitGemm, RejectsChannelsNotAMultipleOf8AndGroupsWithAReason) {
  std::string why;
  EXPECT_TRUE(describe(24, 24, why)) << why;
  EXPECT_FALSE(describe(12, 12, why));
  EXPECT_NE(why.find("tensor 'X': C=12 is not a multiple of 8"), std::string::npos) << why;
  EXPECT_FALSE(describe(32, 16, why));
  EXPECT_NE(why.find("grouped convolution (groups = 2)"), std::string::npos) << why;
}

TEST(CudaConvImplicitGemm, KernelCompilesWithNvrtc) {
  if (!dg::cuda::nvrtc()) GTEST_SKIP() << "NVRTC not available: " << dg::cuda::nvrtc_error();
  dg::Graph g;
  g.set_io_data_type(dg::DataType::BFLOAT16).set_intermediate_data_type(dg::DataType::FLOAT)
      .set_compute_data_type(dg::DataType::FLOAT);
  auto x = declare(g, "X", {2, 32, 14, 14}, dg::DataType::BFLOAT16);
  auto w = declare(g, "W", {48, 32, 3, 3}, dg::DataType::BFLOAT16);
  auto b = declare(g, "B", {1, 48, 1, 1}, dg::DataType::BFLOAT16);
  auto y = g.conv_fprop(x, w, dg::ConvFpropAttr().set_padding({1, 1}));
  y = g.pointwise(g.bias(y, b), dg::PointwiseAttr().set_mode(M::RELU_FWD));
  y->set_output(true).set_stride(channels_last({2, 48, 14, 14}));
  gemm_test::Lowered low;
  ASSERT_TRUE(gemm_test::lower_graph(g, low));
  for (const auto& p : low.parts) {
    if (p.anchor < 0) continue;
    std::string src, why;
    ASSERT_TRUE(cv::fprop_source_for_test(p, 128, 128, 4, src, why)) << why;
    std::vector<uint8_t> cubin;
    auto s = dg::cuda::nvrtc_compile(src, "test_conv.cu", "sm_90a", cubin);
    ASSERT_TRUE(s.ok()) << s.to_string() << "\n---- source:\n" << src;
  }
}

struct Case {
  Dims x;     // N, C, spatial...
  int64_t k;  // output channels
  Dims filt, pre, post, stride, dil;
};

Dims out_dims(const Case& c) {
  Dims y{c.x[0], c.k};
  for (size_t i = 0; i < c.filt.size(); ++i)
    y.push_back((c.x[2 + i] + c.pre[i] + c.post[i] - c.dil[i] * (c.filt[i] - 1) - 1) / c.stride[i] + 1);
  return y;
}

// conv -> + bias -> ReLU (or conv alone), stored channels-last in `out`.
void run_case(const Case& c, dg::DataType t, dg::DataType out, bool fused, std::mt19937& rng, int plans = 1) {
  Dims wd{c.k, c.x[1]};
  for (int64_t f : c.filt) wd.push_back(f);
  Dims bd(c.x.size(), 1);
  bd[1] = c.k;
  HostTensor x = nhwc(c.x, t), w = nhwc(wd, t), b = nhwc(bd, dg::DataType::FLOAT);
  gemm_test::fill_random(x, rng);
  gemm_test::fill_random(w, rng);
  gemm_test::fill_random(b, rng);
  const Dims yd = out_dims(c);
  int64_t taps = c.x[1];
  for (int64_t f : c.filt) taps *= f;
  std::vector<HostTensor> in{x, w};
  if (fused) in.push_back(b);
  const double tol = out == dg::DataType::FLOAT ? 2e-5 : 1.2e-2;
  gemm_test::run_vs_ref(kEngine, in, {nhwc(yd, out)},
                        [&](dg::Graph& g, const std::vector<dg::TensorPtr>& ts) {
                          g.set_intermediate_data_type(dg::DataType::FLOAT).set_compute_data_type(dg::DataType::FLOAT);
                          auto y = g.conv_fprop(ts[0], ts[1], dg::ConvFpropAttr()
                                                                  .set_pre_padding(c.pre)
                                                                  .set_post_padding(c.post)
                                                                  .set_stride(c.stride)
                                                                  .set_dilation(c.dil));
                          if (fused) y = g.pointwise(g.bias(y, ts[2]), dg::PointwiseAttr().set_mode(M::RELU_FWD));
                          return std::vector<dg::TensorPtr>{y};
                        },
                        {Expect{tol, std::sqrt(double(taps)) * 0.1}}, plans);
}

TEST(CudaConvImplicitGemm, Random2dConvolutionsMatchRef) {
  DG_REQUIRE_CUDA(gpu);
  std::mt19937 rng(71);
  for (int trial = 0; trial < 4; ++trial) {
    Case c;
    const int64_t n = 1 + rng() % 3, ch = 8 * (1 + rng() % 6), k = 1 + rng() % 70;
    c.x = {n, ch, 3 + int64_t(rng() % 20), 3 + int64_t(rng() % 20)};
    c.k = k;
    c.filt = {1 + int64_t(rng() % 3), 1 + int64_t(rng() % 3)};
    c.pre = {int64_t(rng() % 2), int64_t(rng() % 3)};
    c.post = {int64_t(rng() % 3), int64_t(rng() % 2)};
    c.stride = {1 + int64_t(rng() % 2), 1 + int64_t(rng() % 2)};
    c.dil = {1 + int64_t(rng() % 2), 1};
    SCOPED_TRACE("trial " + std::to_string(trial));
    run_case(c, trial % 2 ? dg::DataType::HALF : dg::DataType::BFLOAT16, trial % 3 ? dg::DataType::BFLOAT16 : dg::DataType::FLOAT,
             trial % 2 == 0, rng);
  }
}

TEST(CudaConvImplicitGemm, Conv1dAnd3dMatchRef) {
  DG_REQUIRE_CUDA(gpu);
  std::mt19937 rng(72);
  run_case({{2, 16, 37}, 20, {5}, {2}, {1}, {2}, {1}}, dg::DataType::BFLOAT16, dg::DataType::FLOAT, true, rng);
  run_case({{1, 8, 5, 6, 7}, 12, {3, 3, 3}, {1, 1, 1}, {1, 0, 1}, {1, 2, 1}, {1, 1, 2}}, dg::DataType::BFLOAT16,
           dg::DataType::BFLOAT16, true, rng);
}

// The first four knob settings, on a shape that fits no tile.
TEST(CudaConvImplicitGemm, EveryConfigurationMatchesRef) {
  DG_REQUIRE_CUDA(gpu);
  std::mt19937 rng(73);
  run_case({{2, 64, 15, 13}, 136, {3, 3}, {1, 1}, {1, 1}, {1, 1}, {1, 1}}, dg::DataType::BFLOAT16,
           dg::DataType::BFLOAT16, true, rng, 4);
}

}  // namespace
