// cuda_conv_implicit_gemm's 3xTF32 plans (knob tf32x3, kernels/tf32x3_split.cuh): FLOAT convolutions
// in graphs that do not allow TF32 run on core 3 as three TF32 products per product, held to the
// tolerance of exact fp32 engines (TF32 alone misses it by two orders of magnitude). What is offered
// and refused (with the rule), NVRTC compiles without a GPU, and on a GPU every setting against ref
// with NaN-poisoned outputs.
#include <gtest/gtest.h>

#include <algorithm>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "cuda_conv_tma_test_util.hpp"
#include "engines/cuda/common/nvrtc_compile.hpp"
#include "engines/cuda/conv/conv_implicit_gemm.hpp"
#include "engines/cuda/conv/conv_kernel_source.hpp"
#include "planning/described_target.hpp"
#include "planning/knobs.hpp"

namespace {

namespace cv = dnngraph::cuda::conv;
using namespace cuda_conv_test;
using F = dg::DataType;

// The case's FLOAT graph (conv -> bias -> ReLU) with TF32 allowed or not, and its anchor partition.
std::unique_ptr<Built> float_partition(const Case& c, bool allow_tf32) {
  auto b = std::make_unique<Built>();
  add_conv(b->g, c, channels_last(c.x), F::FLOAT);
  b->g.set_allow_tf32(allow_tf32);
  EXPECT_TRUE(anchored_partitions(b->g, b->parts));
  return b;
}

dg::Knobs x3_knobs(int64_t bn, int64_t stages, int64_t split_k = 1, int64_t pingpong = 0) {
  dg::Knobs k{{"core", 3}, {"tile_m", 128}, {"tile_n", bn}, {"stages", stages}, {"tf32x3", 1}};
  if (split_k > 1) k["split_k"] = split_k;
  if (pingpong) k["pingpong"] = 1;
  return k;
}

const Case kNarrow{{2, 64, 14, 14}, 64, {3, 3}, {1, 1}, {1, 1}, {1, 1}, {1, 1}};
const Case kWide{{2, 96, 9, 9}, 160, {3, 3}, {1, 1}, {1, 1}, {1, 1}, {1, 1}};

// Exact FLOAT: only core 3's 3xTF32 settings (every other core would round to TF32), each within
// 227 KB; with TF32 allowed, none of them (TF32 is three times faster).
TEST(CudaConvTf32x3, OfferedOnlyWhereTheGraphKeepsFloatExact) {
  gemm_test::FakeHopper hopper;
  const dg::Engine& e = dg::cuda::conv_implicit_gemm_engine();
  for (const Case& c : {kNarrow, kWide}) {
    const auto space = e.knob_space(float_partition(c, false)->p(), hopper.target);
    ASSERT_FALSE(space.empty());
    for (const dg::Knobs& k : space) {
      EXPECT_EQ(k.at("core"), 3) << dg::knobs_to_string(k);
      EXPECT_EQ(k.at("tf32x3"), 1) << dg::knobs_to_string(k);
      EXPECT_EQ(k.count("tf32"), 0u) << dg::knobs_to_string(k);
      EXPECT_LE(k.at("tile_n"), 128) << dg::knobs_to_string(k);
    }
    for (const dg::Knobs& k : e.knob_space(float_partition(c, true)->p(), hopper.target))
      EXPECT_EQ(k.count("tf32x3"), 0u) << dg::knobs_to_string(k);
    // Tensor cores, but the inputs are not rounded to TF32 (deselecting TENSOR_CORE drops the plans).
    const auto notes = e.numerical_notes(float_partition(c, false)->p(), hopper.target, space[0]);
    EXPECT_NE(std::find(notes.begin(), notes.end(), dg::NumericalNote::TENSOR_CORE), notes.end());
    EXPECT_EQ(std::find(notes.begin(), notes.end(), dg::NumericalNote::DOWN_CONVERT_INPUTS), notes.end());
  }
}

// Refusals name the node, the tensor and the rule: TF32 knobs on an exact graph, 3xTF32 beside a
// cluster or past 227 KB, and exact FLOAT on a GPU without wgmma (described GPUs: no CUDA needed).
TEST(CudaConvTf32x3, RefusalsNameTheRule) {
  const dg::Engine& e = dg::cuda::conv_implicit_gemm_engine();
  auto h200 = dg::describe_handle();
  dg::Target hopper;
  hopper.handle = h200.get();
  const auto exact = float_partition(kWide, false);
  std::unique_ptr<dg::Plan> plan;
  dg::Knobs tf32{{"core", 3}, {"tile_m", 128}, {"tile_n", 128}, {"stages", 5}, {"tf32", 1}};
  dg::Status s = e.build(exact->p(), hopper, tf32, plan);
  EXPECT_EQ(s.code(), dg::ErrorCode::GRAPH_EXECUTION_PLAN_CREATION_FAILED) << s.message();
  EXPECT_NE(s.message().find("node 'conv', tensor 'X': the graph does not allow TF32, so FLOAT inputs take tf32x3=1"),
            std::string::npos)
      << s.message();
  dg::Knobs clustered = x3_knobs(128, 3);
  clustered["cluster_n"] = 2;
  s = e.build(exact->p(), hopper, clustered, plan);
  EXPECT_NE(s.message().find("tf32x3=1 (3xTF32) goes only with core=3"), std::string::npos) << s.message();
  s = e.build(exact->p(), hopper, x3_knobs(128, 3, 1, 1), plan);  // ping-pong's two step sums: 64-wide only
  EXPECT_NE(s.message().find("(ping-pong: 64)"), std::string::npos) << s.message();
  s = e.build(exact->p(), hopper, x3_knobs(128, 4), plan);  // 4 stages of 64 KB
  EXPECT_NE(s.message().find("exceed 227 KB"), std::string::npos) << s.message();
  dg::DescribedGpu a100;
  a100.sm_major = 8;
  auto ampere_handle = dg::describe_handle(a100);
  dg::Target ampere;
  ampere.handle = ampere_handle.get();
  const dg::Support support = e.check(exact->p(), ampere);
  EXPECT_FALSE(support.ok) << support.reason;
  EXPECT_NE(support.reason.find("node 'conv', tensor 'X': FLOAT inputs without TF32 run as 3xTF32 on core=3 (sm_90a)"),
            std::string::npos)
      << support.reason;
  EXPECT_TRUE(e.knob_space(exact->p(), ampere).empty());
}

TEST(CudaConvTf32x3, KernelsCompileWithNvrtc) {
  if (!dg::cuda::nvrtc()) GTEST_SKIP() << "NVRTC not available: " << dg::cuda::nvrtc_error();
  const Case three{{1, 8, 5, 6, 7}, 12, {3, 3, 3}, {1, 1, 1}, {1, 0, 1}, {1, 2, 1}, {1, 1, 2}};
  struct Setting {
    int bn, stages, splits;
    bool pingpong;
  };
  for (const Case& c : {kWide, three}) {
    const auto built = float_partition(c, false);
    for (Setting s : {Setting{64, 4, 1, false}, {64, 4, 1, true}, {128, 3, 1, false}, {128, 3, 2, false}}) {
      std::string src, why;
      ASSERT_TRUE(cv::fprop_source_for_test(built->p(), 3, 128, s.bn, s.stages, src, why, s.splits, s.pingpong, false, 1, 0,
                                            1, false))
          << why;
      EXPECT_NE(src.find("kTf32x3"), std::string::npos);
      ASSERT_NO_FATAL_FAILURE(expect_compiles(src, "test_conv_tf32x3.cu", "sm_90a",
                                              "tf32x3 tile_n " + std::to_string(s.bn) + (s.pingpong ? " pingpong: " : ": ")));
    }
  }
}

// Every setting against ref at exact fp32's tolerance (2e-5 relative; TF32's truncation errs ~1e-3),
// outputs NaN-poisoned: channel blocks zero-filled past C, tiles off the pixel and channel counts,
// split-K, ping-pong, the residual, strides and dilation, 3D.
TEST(CudaConvTf32x3, ConvolutionsMatchRefAtFp32Tolerance) {
  DG_REQUIRE_CUDA(gpu);
  if (impl_of(*gpu).info.sm_version != 90) GTEST_SKIP() << "tf32x3 runs on core=3 (sm_90a)";
  std::mt19937 rng(93);
  const std::vector<dg::Knobs> all{x3_knobs(64, 4), x3_knobs(64, 4, 1, 1), x3_knobs(128, 3), x3_knobs(128, 3, 3)};
  Case c{{2, 36, 11, 9}, 40, {3, 3}, {1, 1}, {1, 1}, {1, 1}, {1, 1}};
  run_knobs_vs_ref(*gpu, c, F::FLOAT, F::FLOAT, true, channels_last(c.x), all, rng, 0, M::RELU_FWD, true);
  c = {{2, 136, 17, 19}, 200, {3, 3}, {1, 0}, {0, 2}, {2, 1}, {1, 2}};
  run_knobs_vs_ref(*gpu, c, F::FLOAT, F::FLOAT, false, channels_last(c.x), all, rng, 0, M::RELU_FWD, true);
  c = {{1, 8, 5, 6, 7}, 12, {3, 3, 3}, {1, 1, 1}, {1, 0, 1}, {1, 2, 1}, {1, 1, 2}};
  run_knobs_vs_ref(*gpu, c, F::FLOAT, F::FLOAT, true, channels_last(c.x), {all[0], all[2]}, rng, 0, M::RELU_FWD, true);
}

}  // namespace
