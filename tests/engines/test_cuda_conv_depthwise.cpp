// cuda_conv_depthwise_direct against ref: NVRTC compile tests need no GPU; the GPU test runs random
// depthwise convolutions (channels multiples of 8 or not, filters, strides, dilations) with bias +
// ReLU, outputs poisoned before each run.
#include <gtest/gtest.h>

#include <random>

#include "cuda_conv_test_util.hpp"
#include "engines/cuda/conv/conv_depthwise_direct.hpp"
#include "engines/cuda/conv/conv_problem.hpp"
#include "runtime/handle_impl.hpp"

namespace {

namespace cv = dnngraph::cuda::conv;
using namespace cuda_conv_test;
using gemm_test::Expect;

constexpr const char* kDepthwise = "cuda_conv_depthwise_direct";

TEST(CudaConvDepthwise, KernelCompilesWithNvrtc) {
  if (!dg::cuda::nvrtc()) GTEST_SKIP() << "NVRTC not available: " << dg::cuda::nvrtc_error();
  dg::Graph g;
  add_conv_bias_relu(g, 32, 1);
  for_each_anchored_partition(g, [](const dg::Partition& p) {
    for (int strip : {0, 2, 4, 8}) {
      std::string src, why;
      ASSERT_TRUE(cv::depthwise_source_for_test(p, strip, src, why)) << why;
      ASSERT_NO_FATAL_FAILURE(expect_compiles(src, "test_depthwise.cu", "sm_90a", "strip " + std::to_string(strip) + ": "));
    }
  });
}

// The strip kernel with W stride and dilation 2, channels not a multiple of 8 (scalar loads), half.
TEST(CudaConvDepthwise, StridedStripKernelCompilesWithNvrtc) {
  if (!dg::cuda::nvrtc()) GTEST_SKIP() << "NVRTC not available: " << dg::cuda::nvrtc_error();
  dg::Graph g;
  set_types(g, dg::DataType::HALF);
  auto x = declare(g, "X", {2, 20, 15, 17}, dg::DataType::HALF);
  auto w = declare(g, "W", {20, 1, 3, 3}, dg::DataType::HALF);
  auto y = g.conv_fprop(x, w, dg::ConvFpropAttr().set_padding({1, 1}).set_stride({2, 2}).set_dilation({1, 2}));
  y = g.pointwise(y, dg::PointwiseAttr().set_mode(M::RELU_FWD));
  y->set_output(true).set_stride(channels_last({2, 20, 8, 8}));
  for_each_anchored_partition(g, [](const dg::Partition& p) {
    std::string src, why;
    ASSERT_TRUE(cv::depthwise_source_for_test(p, 4, src, why)) << why;
    EXPECT_TRUE(gemm_test::instantiates(src, "conv_depthwise_strip",
                                        {{"kDataType", "dg::DT_HALF"}, {"kVecLoads", "false"}, {"kVecFilters", "false"},
                                         {"kFilterH", "3"}, {"kFilterW", "3"}, {"kStrideW", "2"}, {"kDilationW", "2"},
                                         {"kStrip", "4"}}));
    ASSERT_NO_FATAL_FAILURE(expect_compiles(src, "test_depthwise_strided.cu", "sm_90a"));
  });
}

// Depthwise: random channels (multiples of 8 or not), filters, strides, dilations, with bias + ReLU.
TEST(CudaConvDepthwise, RandomShapesMatchRef) {
  DG_REQUIRE_CUDA(gpu);
  std::mt19937 rng(91);
  for (int trial = 0; trial < 5; ++trial) {
    const int64_t ch = trial % 2 ? 8 * (1 + rng() % 8) : 1 + rng() % 40;
    const bool big = trial == 4;  // a 5x5 filter: taps beyond the register cache
    Case c;
    c.x = {1 + int64_t(rng() % 2), ch, 3 + int64_t(rng() % 16), 3 + int64_t(rng() % 16)};
    c.k = ch;
    c.filt = {big ? 5 : 1 + int64_t(rng() % 3), big ? 5 : 1 + int64_t(rng() % 3)};
    c.pre = {int64_t(rng() % 2), int64_t(rng() % 2)};
    c.post = {int64_t(rng() % 2), int64_t(rng() % 2) + (big ? 4 : 0)};
    c.stride = {1 + int64_t(rng() % 2), 1 + int64_t(trial % 2)};
    c.dil = {1, 1 + int64_t(rng() % 2)};
    c.x[2] += 4, c.x[3] += 4;
    Dims wd{ch, 1, c.filt[0], c.filt[1]};
    Dims bd{1, ch, 1, 1};
    const dg::DataType t = trial % 3 == 0 ? dg::DataType::FLOAT : trial % 3 == 1 ? dg::DataType::BFLOAT16 : dg::DataType::HALF;
    HostTensor x = nhwc(c.x, t), w = nhwc(wd, t), b = nhwc(bd, dg::DataType::FLOAT);
    gemm_test::fill_random(x, rng);
    gemm_test::fill_random(w, rng);
    gemm_test::fill_random(b, rng);
    SCOPED_TRACE("trial " + std::to_string(trial) + " C=" + std::to_string(ch));
    gemm_test::run_vs_ref(kDepthwise, {x, w, b}, {nhwc(out_dims(c), dg::DataType::FLOAT)},
                          [&](dg::Graph& g, const std::vector<dg::TensorPtr>& ts) {
                            set_fp32_compute(g);
                            auto y = g.conv_fprop(ts[0], ts[1], geometry<dg::ConvFpropAttr>(c));
                            y = g.pointwise(g.bias(y, ts[2]), dg::PointwiseAttr().set_mode(M::RELU_FWD));
                            return std::vector<dg::TensorPtr>{y};
                          },
                          {Expect{2e-5, 1}}, 3);  // every strip (4, 2, 8), or the per-pixel kernel
  }
}

}  // namespace
