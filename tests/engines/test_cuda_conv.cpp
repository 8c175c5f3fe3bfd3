// cuda_conv_implicit_gemm against ref: NVRTC compile and rejection tests need no GPU; the GPU
// tests run random 1D/2D/3D convolutions (stride, dilation, asymmetric padding, sizes that fit no
// tile) with fused epilogues, outputs poisoned before each run.
#include <gtest/gtest.h>

#include <random>

#include "engines/cuda/conv/conv_implicit_gemm.hpp"
#include "engines/cuda/conv/conv_problem.hpp"
#include "engines/cuda/common/nvrtc_compile.hpp"
#include "common/dims.hpp"
#include "cuda_conv_test_util.hpp"
#include "gemm_test_util.hpp"
#include "runtime/handle_impl.hpp"

namespace {

namespace dg = dnngraph;
namespace cv = dnngraph::cuda::conv;
using gemm_test::Expect;

using namespace cuda_conv_test;  // Dims, HostTensor, M and the graph builders

constexpr dg::DataType F = dg::DataType::FLOAT;  // the TF32 tests' inputs

// The anchor partition's describe() result for a conv of these channel counts.
bool describe(int64_t c, int64_t wc, std::string& why, dg::DataType t = dg::DataType::BFLOAT16, bool tf32 = false) {
  dg::Graph g;
  g.set_io_data_type(t).set_compute_data_type(dg::DataType::FLOAT).set_allow_tf32(tf32);
  auto x = declare(g, "X", {2, c, 9, 9}, t);
  auto w = declare(g, "W", {16, wc, 3, 3}, t);
  auto y = g.conv_fprop(x, w, dg::ConvFpropAttr().set_padding({1, 1}).set_name("conv"));
  y->set_output(true).set_stride(channels_last({2, 16, 9, 9}));
  std::vector<dg::Partition> parts;
  EXPECT_TRUE(anchored_partitions(g, parts));
  if (parts.empty()) return false;
  cv::ConvProblem cp;
  return cv::describe_conv_fprop(parts[0], cp, why);
}

TEST(CudaConvImplicitGemm, RejectsChannelsNotAMultipleOf8AndGroupsWithAReason) {
  std::string why;
  EXPECT_TRUE(describe(24, 24, why)) << why;
  EXPECT_FALSE(describe(12, 12, why));
  EXPECT_NE(why.find("tensor 'X': C=12 is not a multiple of 8"), std::string::npos) << why;
  EXPECT_FALSE(describe(32, 16, why));
  EXPECT_NE(why.find("grouped convolution (groups = 2)"), std::string::npos) << why;
}

// FLOAT takes 4 channels per 16-byte gather; it runs as TF32 where the graph allows it, else as
// 3xTF32 (test_cuda_conv_tf32x3.cpp: which plans, and the rules for the others).
TEST(CudaConvImplicitGemm, FloatInputsAreExactUnlessTheGraphAllowsTf32) {
  std::string why;
  EXPECT_TRUE(describe(12, 12, why, dg::DataType::FLOAT, false)) << why;
  EXPECT_TRUE(describe(12, 12, why, dg::DataType::FLOAT, true)) << why;
  EXPECT_FALSE(describe(10, 10, why, dg::DataType::FLOAT, true));
  EXPECT_NE(why.find("tensor 'X': C=10 is not a multiple of 4"), std::string::npos) << why;
}

// fprop, dgrad and wgrad with FLOAT inputs: the tf32 mma.sync kernels (both operand majors).
TEST(CudaConvImplicitGemm, Tf32KernelsCompileWithNvrtc) {
  if (!dg::cuda::nvrtc()) GTEST_SKIP() << "NVRTC not available: " << dg::cuda::nvrtc_error();
  for (const char* op : {"fprop", "dgrad", "wgrad"}) {
    dg::Graph g;
    set_types(g, F);
    g.set_allow_tf32(true);
    const std::string o = op;
    if (o == "fprop") {
      auto y = g.conv_fprop(declare(g, "X", {2, 12, 9, 9}, F), declare(g, "W", {20, 12, 3, 3}, F),
                            dg::ConvFpropAttr().set_padding({1, 1}));
      y = g.pointwise(g.bias(y, declare(g, "B", {1, 20, 1, 1}, F)), dg::PointwiseAttr().set_mode(M::RELU_FWD));
      y->set_output(true).set_stride(channels_last({2, 20, 9, 9}));
    } else if (o == "dgrad") {
      add_dgrad(g, {2, 20, 5, 5}, {20, 12, 3, 3}, {2, 12, 9, 9}, F,
                dg::ConvDgradAttr().set_padding({1, 1}).set_stride({2, 2}));
    } else {
      add_wgrad(g, {2, 20, 9, 9}, {2, 12, 9, 9}, {20, 12, 3, 3}, F, dg::ConvWgradAttr().set_padding({1, 1}));
    }
    ASSERT_NO_FATAL_FAILURE(for_each_anchored_partition(g, [&](const dg::Partition& p) {
      std::string src, why;
      ASSERT_TRUE(cv::fprop_source_for_test(p, 0, 128, 64, 4, src, why)) << why;
      EXPECT_TRUE(gemm_test::instantiates(src, "_mma_sync",
                                          {{"kDataType", "dg::DT_FLOAT"}, {"kTileM", "128"}, {"kTileN", "64"},
                                           {"kTileK", "16"}, {"kWarpsM", "2"}, {"kWarpsN", "2"}, {"kStages", "4"}}));
      for (const char* arch : {"sm_80", "sm_90a"})
        ASSERT_NO_FATAL_FAILURE(expect_compiles(src, "test_conv_tf32.cu", arch, o + " " + arch + ": "));
    }));
  }
}

// X [2, c, 9, 9] -> conv 3x3 (padding 1) with W [k, c, 3, 3] -> + bias -> + residual R -> ReLU, all
// channels-last in type t (FLOAT as TF32 where allowed): the tf32 wgmma compile and knob tests' graph.
void add_conv_bias_residual_relu(dg::Graph& g, int64_t c, int64_t k, dg::DataType t) {
  set_types(g, t);
  g.set_allow_tf32(true);
  auto y = g.conv_fprop(declare(g, "X", {2, c, 9, 9}, t), declare(g, "W", {k, c, 3, 3}, t),
                        dg::ConvFpropAttr().set_padding({1, 1}).set_name("conv"));
  y = g.add(g.bias(y, declare(g, "B", {1, k, 1, 1}, t)), declare(g, "R", {2, k, 9, 9}, t));
  y = g.pointwise(y, dg::PointwiseAttr().set_mode(M::RELU_FWD));
  y->set_output(true).set_stride(channels_last({2, k, 9, 9}));
}

// The wgmma core's tf32 instantiations (m64n64k8, m64n128k8, m64n256k8, split-K) with the fused
// bias + residual + ReLU epilogue, for sm_90a.
TEST(CudaConvImplicitGemm, Tf32WgmmaKernelsCompileWithNvrtc) {
  if (!dg::cuda::nvrtc()) GTEST_SKIP() << "NVRTC not available: " << dg::cuda::nvrtc_error();
  dg::Graph g;
  add_conv_bias_residual_relu(g, 12, 40, dg::DataType::FLOAT);
  std::vector<dg::Partition> parts;
  ASSERT_TRUE(anchored_partitions(g, parts));
  ASSERT_EQ(parts.size(), 1u);
  for (auto [bn, splits] : {std::pair{64, 1}, {128, 1}, {256, 1}, {128, 3}}) {
    std::string src, why;
    ASSERT_TRUE(cv::fprop_source_for_test(parts[0], 1, 128, bn, 4, src, why, splits)) << why;
    EXPECT_TRUE(gemm_test::instantiates(src, "conv_fprop_wgmma",
                                        {{"kDataType", "dg::DT_FLOAT"}, {"kTileN", std::to_string(bn)}, {"kStages", "4"},
                                         {"kSplitK", splits > 1 ? "true" : "false"}}));
    ASSERT_NO_FATAL_FAILURE(expect_compiles(src, "test_conv_tf32_wgmma.cu", "sm_90a",
                                            "tile_n " + std::to_string(bn) + " split_k " + std::to_string(splits) + ": "));
  }
}

// Knobs for FLOAT inputs (the graph allows TF32): on sm_90 the im2col TMA core (core=3) comes first,
// then the gathering wgmma core (core=1), every knob set carries tf32=1, split-K counted in 32-deep
// k steps; elsewhere mma.sync only.
// 16-bit inputs get no tf32 knob.
TEST(CudaConvImplicitGemm, Tf32WgmmaKnobsOnHopperOnlyForFloat) {
  dg::HandleImpl hopper, ampere;
  hopper.info.sm_version = 90;
  ampere.info.sm_version = 80;
  for (dg::HandleImpl* h : {&hopper, &ampere}) {
    h->info.peak_flops = 989e12;
    h->info.peak_bytes_per_s = 4.8e12;
    h->info.multiprocessors = 132;
  }
  dg::Target th, ta;
  th.handle = &hopper;
  ta.handle = &ampere;
  const dg::Engine& e = dg::cuda::conv_implicit_gemm_engine();
  for (dg::DataType t : {dg::DataType::FLOAT, dg::DataType::BFLOAT16}) {
    dg::Graph g;
    add_conv_bias_residual_relu(g, 256, 200, t);  // k = 2304: 72 tf32 k steps, split-K up to 8
    std::vector<dg::Partition> parts;
    ASSERT_TRUE(anchored_partitions(g, parts));
    const bool tf32 = t == dg::DataType::FLOAT;
    const auto kh = e.knob_space(parts[0], th);
    ASSERT_FALSE(kh.empty());
    EXPECT_EQ(kh[0].at("core"), 3) << dg::knobs_to_string(kh[0]);
    int wgmma = 0, im2col = 0, split8 = 0;
    for (const auto& k : kh) {
      EXPECT_EQ(k.count("tf32") ? k.at("tf32") : 0, tf32 ? 1 : 0) << dg::knobs_to_string(k);
      wgmma += k.at("core") == 1;
      im2col += k.at("core") == 3;
      split8 += k.count("split_k") && k.at("split_k") == 8;
    }
    EXPECT_EQ(wgmma, 10);  // tile_n 128 x 2, 256 x 2, split_k 2, 3, 4, 5, 6, 8
    // tile_n 256 x 2, 128, 128 ping-pong x 2, split_k 2, 3, 4, 6, 8, 64 and 64 ping-pong; bf16 also
    // clusters of 2 along N (128 and 64 ping-pong) and split clusters of 2, 3 and 4.
    EXPECT_EQ(im2col, tf32 ? 12 : 17);
    EXPECT_EQ(split8, 2);
    for (const auto& k : e.knob_space(parts[0], ta)) {
      EXPECT_EQ(k.at("core"), 0) << dg::knobs_to_string(k);
      EXPECT_EQ(k.count("tf32") ? k.at("tf32") : 0, tf32 ? 1 : 0) << dg::knobs_to_string(k);
    }
  }
}

TEST(CudaConvImplicitGemm, KernelsCompileWithNvrtc) {
  if (!dg::cuda::nvrtc()) GTEST_SKIP() << "NVRTC not available: " << dg::cuda::nvrtc_error();
  dg::Graph g;
  add_conv_bias_relu(g, 48, 32);
  for_each_anchored_partition(g, [](const dg::Partition& p) {
    std::string src, why;
    for (int core : {0, 1, 2, 3}) {  // 2: the wgmma core with split-K; 3: with 64-wide tiles
      ASSERT_TRUE(cv::fprop_source_for_test(p, core ? 1 : 0, 128, core == 3 ? 64 : 128, 4, src, why, core == 2 ? 3 : 1))
          << why;
      if (core == 2) {
        EXPECT_TRUE(gemm_test::instantiates(
            src, "conv_fprop_wgmma",
            {{"kDataType", "dg::DT_BFLOAT16"}, {"kTileN", "128"}, {"kStages", "4"}, {"kSplitK", "true"}}));
      }
      ASSERT_NO_FATAL_FAILURE(expect_compiles(src, "test_conv.cu", "sm_90a", "core " + std::to_string(core) + ": "));
    }
  });
}

TEST(CudaConvImplicitGemm, DgradKernelCompilesWithNvrtc) {
  if (!dg::cuda::nvrtc()) GTEST_SKIP() << "NVRTC not available: " << dg::cuda::nvrtc_error();
  dg::Graph g;
  set_types(g, dg::DataType::HALF);
  add_dgrad(g, {2, 24, 7, 7}, {24, 16, 3, 3}, {2, 16, 13, 13}, dg::DataType::HALF,
            dg::ConvDgradAttr().set_padding({1, 1}).set_stride({2, 2}));
  for_each_anchored_partition(g, [](const dg::Partition& p) {
    std::string src, why;
    ASSERT_TRUE(cv::fprop_source_for_test(p, 0, 64, 64, 3, src, why)) << why;
    EXPECT_NE(src.find("conv_dgrad_mma_sync"), std::string::npos);
    ASSERT_NO_FATAL_FAILURE(expect_compiles(src, "test_dgrad.cu", "sm_80"));
  });
}

// TF32 (FLOAT inputs where the graph allows it): inputs rounded to 10 mantissa bits make a k-term
// sum of uniform [-1, 1] products ~1.3e-4 sqrt(k) off (one sigma); 2e-3 relative with a sqrt(k)
// floor leaves 15 sigma (as in test_cuda_gemm.cpp).
constexpr double kTf32Tol = 2e-3;

// The window of a random 2D case: filters up to 3 x 3, padding, strides up to 2, a dilation along H.
void random_window(std::mt19937& rng, Case& c) {
  c.filt = {1 + int64_t(rng() % 3), 1 + int64_t(rng() % 3)};
  c.pre = {int64_t(rng() % 2), int64_t(rng() % 3)};
  c.post = {int64_t(rng() % 3), int64_t(rng() % 2)};
  c.stride = {1 + int64_t(rng() % 2), 1 + int64_t(rng() % 2)};
  c.dil = {1 + int64_t(rng() % 2), 1};
}

TEST(CudaConvImplicitGemm, Random2dConvolutionsMatchRef) {
  DG_REQUIRE_CUDA(gpu);
  std::mt19937 rng(71);
  for (int trial = 0; trial < 4; ++trial) {
    Case c;
    const int64_t n = 1 + rng() % 3, ch = 8 * (1 + rng() % 6), k = 1 + rng() % 70;
    c.x = {n, ch, 3 + int64_t(rng() % 20), 3 + int64_t(rng() % 20)};
    c.k = k;
    random_window(rng, c);
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

// bf16 conv + bias + ReLU cases (bf16 outputs), each against ref on its first `plans` plans; their
// data comes from one generator seeded `seed`.
void run_fused_bf16_cases(uint32_t seed, int plans, std::initializer_list<Case> cases) {
  std::mt19937 rng(seed);
  for (const Case& c : cases) run_case(c, dg::DataType::BFLOAT16, dg::DataType::BFLOAT16, true, rng, plans);
}

// The first eight knob settings (on Hopper: the four wgmma ones, then mma.sync), on a shape that fits no tile.
TEST(CudaConvImplicitGemm, EveryConfigurationMatchesRef) {
  DG_REQUIRE_CUDA(gpu);
  run_fused_bf16_cases(73, 8, {{{2, 64, 15, 13}, 136, {3, 3}, {1, 1}, {1, 1}, {1, 1}, {1, 1}}});
}

}  // namespace

namespace {

// conv_dgrad: DX (the case's x dims) from DY (the forward output's dims, c.k channels) and W.
void run_dgrad(const Case& c, dg::DataType t, bool relu, std::mt19937& rng) {
  Dims dyd = out_dims(c);
  Dims wd = filter_dims(c);
  HostTensor dy = nhwc(dyd, t), w = nhwc(wd, t);
  gemm_test::fill_random(dy, rng);
  gemm_test::fill_random(w, rng);
  int64_t taps = c.k;
  for (int64_t f : c.filt) taps *= f;
  const bool tf32 = t == dg::DataType::FLOAT;
  gemm_test::run_vs_ref(kConvEngine, {dy, w}, {nhwc(c.x, dg::DataType::FLOAT)},
                        [&](dg::Graph& g, const std::vector<dg::TensorPtr>& ts) {
                          set_fp32_compute(g);
                          g.set_allow_tf32(tf32);
                          auto dx = g.conv_dgrad(ts[0], ts[1], geometry<dg::ConvDgradAttr>(c));
                          dx->set_dim(c.x);
                          if (relu) dx = g.pointwise(dx, dg::PointwiseAttr().set_mode(M::RELU_FWD));
                          return std::vector<dg::TensorPtr>{dx};
                        },
                        {tf32 ? Expect{kTf32Tol, std::sqrt(double(taps))} : Expect{2e-5, std::sqrt(double(taps)) * 0.1}});
}

// Deep k (C=256 x 9 taps = 36 k steps of 64) on few tiles: the first plans are split-K 2..8 on the
// wgmma core (the partial sums fixed up by each tile's last split); each runs against ref. The
// second shape (k not a multiple of 64) reuses the first one's kernels (same types, dynamic shapes).
TEST(CudaConvImplicitGemm, SplitKMatchesRef) {
  DG_REQUIRE_CUDA(gpu);
  run_fused_bf16_cases(74, 9, {{{2, 256, 9, 7}, 200, {3, 3}, {1, 1}, {1, 1}, {1, 1}, {1, 1}},
                               {{1, 136, 6, 5}, 72, {3, 3}, {1, 0}, {0, 1}, {1, 1}, {1, 2}}});
}

// 40 output channels (off every tile width): the plans include the wgmma core's 64-wide tiles.
TEST(CudaConvImplicitGemm, NarrowTilesMatchRef) {
  DG_REQUIRE_CUDA(gpu);
  run_fused_bf16_cases(75, 8, {{{2, 64, 15, 13}, 40, {3, 3}, {1, 1}, {1, 1}, {1, 1}, {1, 1}},
                               {{3, 32, 9, 11}, 64, {1, 1}, {0, 0}, {0, 0}, {1, 1}, {1, 1}}});
}

TEST(CudaConvImplicitGemm, DgradMatchesRef) {
  DG_REQUIRE_CUDA(gpu);
  std::mt19937 rng(81);
  for (int trial = 0; trial < 4; ++trial) {
    Case c;
    c.x = {1 + int64_t(rng() % 2), 8 * (1 + int64_t(rng() % 5)), 4 + int64_t(rng() % 14), 4 + int64_t(rng() % 14)};
    c.k = 8 * (1 + int64_t(rng() % 5));
    c.filt = {1 + int64_t(rng() % 3), 1 + int64_t(rng() % 3)};
    c.pre = {int64_t(rng() % 2), int64_t(rng() % 2)};
    c.post = {int64_t(rng() % 2), int64_t(rng() % 2)};
    c.stride = {1 + int64_t(rng() % 2), 1 + int64_t(rng() % 2)};
    c.dil = {1, 1 + int64_t(rng() % 2)};
    SCOPED_TRACE("trial " + std::to_string(trial));
    run_dgrad(c, trial % 2 ? dg::DataType::HALF : dg::DataType::BFLOAT16, trial % 2 == 0, rng);
  }
}

}  // namespace

namespace {

// conv_wgrad: DW [K, C, R, S] (KRSC) from DY (NHWC, the forward output's dims) and X.
void run_wgrad(const Case& c, dg::DataType t, std::mt19937& rng) {
  const Dims dyd = out_dims(c);
  const Dims wd = filter_dims(c);
  HostTensor dy = nhwc(dyd, t), x = nhwc(c.x, t);
  gemm_test::fill_random(dy, rng);
  gemm_test::fill_random(x, rng);
  int64_t pixels = dyd[0];
  for (size_t i = 2; i < dyd.size(); ++i) pixels *= dyd[i];
  const bool tf32 = t == dg::DataType::FLOAT;
  gemm_test::run_vs_ref(kConvEngine, {dy, x}, {nhwc(wd, dg::DataType::FLOAT)},
                        [&](dg::Graph& g, const std::vector<dg::TensorPtr>& ts) {
                          set_fp32_compute(g);
                          g.set_allow_tf32(tf32);
                          auto dw = g.conv_wgrad(ts[0], ts[1], geometry<dg::ConvWgradAttr>(c));
                          dw->set_dim(wd);
                          return std::vector<dg::TensorPtr>{dw};
                        },
                        {tf32 ? Expect{kTf32Tol, std::sqrt(double(pixels))} : Expect{2e-5, std::sqrt(double(pixels)) * 0.1}});
}

TEST(CudaConvImplicitGemm, WgradKernelCompilesWithNvrtc) {
  if (!dg::cuda::nvrtc()) GTEST_SKIP() << "NVRTC not available: " << dg::cuda::nvrtc_error();
  dg::Graph g;
  set_types(g, dg::DataType::BFLOAT16);
  add_wgrad(g, {2, 24, 7, 7}, {2, 16, 7, 7}, {24, 16, 3, 3}, dg::DataType::BFLOAT16,
            dg::ConvWgradAttr().set_padding({1, 1}));
  for_each_anchored_partition(g, [](const dg::Partition& p) {
    std::string src, why;
    ASSERT_TRUE(cv::fprop_source_for_test(p, 0, 64, 128, 4, src, why)) << why;
    EXPECT_NE(src.find("conv_wgrad_mma_sync"), std::string::npos);
    ASSERT_NO_FATAL_FAILURE(expect_compiles(src, "test_wgrad.cu", "sm_90a"));
  });
}

// A random 2D case for the gradient tests: channel counts multiples of `unit` (one 16-byte chunk).
Case random_grad_case(std::mt19937& rng, int64_t unit) {
  Case c;
  c.x = {1 + int64_t(rng() % 2), unit * (1 + int64_t(rng() % 4)), 4 + int64_t(rng() % 12), 4 + int64_t(rng() % 12)};
  c.k = unit * (1 + int64_t(rng() % 9));
  c.filt = {1 + int64_t(rng() % 3), 1 + int64_t(rng() % 3)};
  c.pre = {int64_t(rng() % 2), int64_t(rng() % 2)};
  c.post = {int64_t(rng() % 2), int64_t(rng() % 2)};
  c.stride = {1 + int64_t(rng() % 2), 1};
  c.dil = {1, 1 + int64_t(rng() % 2)};
  return c;
}

TEST(CudaConvImplicitGemm, WgradMatchesRef) {
  DG_REQUIRE_CUDA(gpu);
  std::mt19937 rng(101);
  for (int trial = 0; trial < 4; ++trial) {
    const Case c = random_grad_case(rng, 8);
    SCOPED_TRACE("trial " + std::to_string(trial));
    run_wgrad(c, trial % 2 ? dg::DataType::HALF : dg::DataType::BFLOAT16, rng);
  }
}

}  // namespace

namespace {

// A random 2D fprop case for the TF32 tests: batch 1..3, C a multiple of 4 up to 4 * max_units,
// H and W in 3..2 + spatial, K in 1..max_k, and a random window, drawn in that order.
Case random_tf32_case(std::mt19937& rng, int64_t max_units, int64_t spatial, int64_t max_k) {
  Case c;
  c.x = {1 + int64_t(rng() % 3), 4 * (1 + int64_t(rng() % max_units)), 3 + int64_t(rng() % spatial),
         3 + int64_t(rng() % spatial)};
  c.k = 1 + int64_t(rng() % max_k);
  random_window(rng, c);
  return c;
}

// FLOAT convolutions as TF32: random 2D fprop (4-channel multiples, fused and not), a 3D one, every
// mma.sync tf32 configuration, dgrad and wgrad.
TEST(CudaConvImplicitGemm, Tf32ConvolutionsMatchRef) {
  DG_REQUIRE_CUDA(gpu);
  std::mt19937 rng(111);
  for (int trial = 0; trial < 4; ++trial) {
    const Case c = random_tf32_case(rng, 10, 20, 70);
    SCOPED_TRACE("fprop trial " + std::to_string(trial));
    run_case(c, F, trial % 3 ? F : dg::DataType::BFLOAT16, trial % 2 == 0, rng);
  }
  run_case({{1, 4, 5, 6, 7}, 12, {3, 3, 3}, {1, 1, 1}, {1, 0, 1}, {1, 2, 1}, {1, 1, 2}}, F, F, true, rng);
  run_case({{2, 64, 15, 13}, 136, {3, 3}, {1, 1}, {1, 1}, {1, 1}, {1, 1}}, F, F, true, rng, 8);
  for (int trial = 0; trial < 2; ++trial) {
    const Case c = random_grad_case(rng, 4);
    SCOPED_TRACE("dgrad/wgrad trial " + std::to_string(trial));
    run_dgrad(c, F, trial == 0, rng);
    run_wgrad(c, F, rng);
  }
}

}  // namespace

namespace {

// FLOAT convolutions on the wgmma core as TF32 (sm_90a, where its knobs come first): random shapes
// (4-channel multiples, output channels and pixels off every tile), conv alone, + bias + ReLU and +
// bias + residual + ReLU, fp32 or bf16 outputs; then every configuration of the engine on a fused
// residual chain, 40 output channels (the 64-wide tiles) and a deep k (split-K 2..8).
TEST(CudaConvImplicitGemm, Tf32WgmmaConvolutionsMatchRef) {
  DG_REQUIRE_CUDA(gpu);
  std::mt19937 rng(121);
  for (int trial = 0; trial < 6; ++trial) {
    const Case c = random_tf32_case(rng, 24, 24, 300);
    SCOPED_TRACE("trial " + std::to_string(trial) + " C=" + std::to_string(c.x[1]) + " K=" + std::to_string(c.k));
    run_case(c, F, trial % 3 == 2 ? dg::DataType::BFLOAT16 : F, trial % 3 != 0, rng, 2, trial % 2 == 1);
  }
  run_case({{2, 36, 17, 13}, 136, {3, 3}, {1, 1}, {1, 1}, {1, 1}, {1, 1}}, F, F, true, rng, 18, true);
  run_case({{2, 64, 15, 13}, 40, {3, 3}, {1, 1}, {1, 1}, {1, 1}, {1, 1}}, F, F, true, rng, 6, true);
  run_case({{2, 256, 9, 7}, 200, {3, 3}, {1, 1}, {1, 1}, {1, 1}, {1, 1}}, F, F, true, rng, 10, true);
}

}  // namespace

namespace {

// genstats (SUM and SQ_SUM of Y per channel) from the conv's epilogue against ref on the engine's
// first plans (cores 3, 1 and 0 with the staged epilogue, which serves reductions), bf16 and fp16,
// outputs NaN-poisoned. (A genstats of a plain tensor runs on ref and the CPU engines:
// cuda_pointwise_jit takes pointwise chains and reductions, not genstats.)
TEST(CudaGenstats, ConvEpilogueMatchesRef) {
  DG_REQUIRE_CUDA(gpu);
  std::mt19937 rng(161);
  for (dg::DataType t : {dg::DataType::BFLOAT16, dg::DataType::HALF}) {
    // 390 pixels (off every tile), 40 -> 24 channels; Y ~ 6 in magnitude: sums of a few hundred.
    const Case c{{2, 40, 15, 13}, 24, {3, 3}, {1, 1}, {1, 1}, {1, 1}, {1, 1}};
    const Dims yd = out_dims(c), sd{1, c.k, 1, 1};
    HostTensor x = nhwc(c.x, t), w = nhwc(filter_dims(c), t);
    gemm_test::fill_random(x, rng);
    gemm_test::fill_random(w, rng);
    SCOPED_TRACE("conv, " + std::string(dg::to_string(t)));
    // Y is rounded to 16 bits where it is stored; the sums may be of the values before that.
    gemm_test::run_vs_ref(kConvEngine, {x, w}, {nhwc(yd, t), nhwc(sd, F), nhwc(sd, F)},
                          [&](dg::Graph& g, const std::vector<dg::TensorPtr>& ts) {
                            set_fp32_compute(g);
                            auto y = g.conv_fprop(ts[0], ts[1], geometry<dg::ConvFpropAttr>(c));
                            auto stats = g.genstats(y, dg::GenstatsAttr().set_name("gs"));
                            return std::vector<dg::TensorPtr>{y, stats[0], stats[1]};
                          },
                          {Expect{1.2e-2, 2.0}, Expect{1e-2, 100.0}, Expect{1e-2, 1000.0}}, 6);
  }
}

}  // namespace
