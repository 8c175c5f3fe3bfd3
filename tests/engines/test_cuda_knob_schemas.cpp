// The CUDA engines' knob schemas, without a GPU: on (fake) sm_90 and sm_80 targets every setting
// of an engine's knob_space passes its check_knobs (what a tuning DB record is checked with), an
// unknown knob and a value out of range are rejected with the engine, the knob and the range
// named, rules between knobs are named too, and build() reports a rejected setting under the code
// it always used.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "cuda_conv_test_util.hpp"
#include "engines/cuda/conv/conv_depthwise_direct.hpp"
#include "engines/cuda/conv/conv_implicit_gemm.hpp"
#include "engines/cuda/gemm/gemm_mma_sync.hpp"
#include "engines/cuda/gemm/gemm_wgmma_tma.hpp"
#include "engines/cuda/pointwise/pointwise_jit.hpp"
#include "engines/cuda/sdpa/sdpa_flash.hpp"
#include "engines/test_cuda_util.hpp"

namespace {

namespace dg = dnngraph;
using cuda_conv_test::declare;
using gemm_test::Dims;

// Every partition of g, lowered on the CPU.
std::vector<dg::Partition> partitions(dg::Graph& g) {
  dg::Handle cpu(dg::Device::cpu());
  EXPECT_TRUE(g.validate().ok());
  EXPECT_TRUE(g.build_operation_graph(cpu).ok());
  std::vector<dg::Partition> parts;
  EXPECT_TRUE(dg::partition_graph(*impl_of(g).ir, parts).ok());
  EXPECT_FALSE(parts.empty());
  return parts;
}

// Each setting e offers for each partition on both targets is one its check_knobs accepts; returns
// how many there were.
size_t expect_space_accepted(const dg::Engine& e, dg::Graph& g) {
  gemm_test::FakeHopper hopper;
  gemm_test::FakeAmpere ampere;
  size_t n = 0;
  for (const auto& p : partitions(g))
    for (const dg::Target* t : {&hopper.target, &ampere.target})
      for (const auto& k : e.knob_space(p, *t)) {
        const dg::Status s = e.check_knobs(k);
        EXPECT_TRUE(s.ok()) << e.name() << " [" << dg::knobs_to_string(k) << "]: " << s.to_string();
        ++n;
      }
  return n;
}

// check_knobs rejects k as INVALID_VALUE with a message holding `what` after the engine's name.
void expect_rejected(const dg::Engine& e, const dg::Knobs& k, const std::string& what) {
  const dg::Status s = e.check_knobs(k);
  EXPECT_EQ(s.code(), dg::ErrorCode::INVALID_VALUE) << dg::knobs_to_string(k);
  EXPECT_EQ(s.message().rfind(std::string(e.name()) + ": ", 0), 0u) << s.message();
  EXPECT_NE(s.message().find(what), std::string::npos) << s.message();
}

// build() on a target without a device reads the knobs first (depthwise after the partition) and
// reports a rejected setting under `code` with the schema's message.
void expect_build_rejects(const dg::Engine& e, const dg::Partition& p, const dg::Knobs& k, dg::ErrorCode code,
                          const std::string& what) {
  gemm_test::FakeHopper hopper;
  std::unique_ptr<dg::Plan> plan;
  const dg::Status s = e.build(p, hopper.target, k, plan);
  EXPECT_EQ(s.code(), code) << s.to_string();
  EXPECT_NE(s.message().find(what), std::string::npos) << s.message();
}

void add_matmul(dg::Graph& g, int64_t m, int64_t n, int64_t k, dg::DataType t, bool b_k_major = false) {
  g.set_io_data_type(t).set_compute_data_type(dg::DataType::FLOAT).set_allow_tf32(true);
  auto a = g.tensor(dg::TensorAttr().set_name("A").set_dim({m, k}).set_stride({k, 1}));
  auto b = g.tensor(dg::TensorAttr().set_name("B").set_dim({k, n}).set_stride(b_k_major ? Dims{1, k} : Dims{n, 1}));
  g.matmul(a, b, dg::MatmulAttr())->set_output(true);
}

TEST(CudaKnobSchemas, GemmMmaSync) {
  const dg::Engine& e = dg::cuda::gemm_mma_sync_engine();
  for (auto t : {dg::DataType::BFLOAT16, dg::DataType::FLOAT}) {
    dg::Graph g;
    add_matmul(g, 512, 256, 384, t);
    EXPECT_EQ(expect_space_accepted(e, g), 16u);
  }
  EXPECT_TRUE(e.check_knobs({{"tile_m", 64}, {"tile_n", 64}, {"stages", 2}, {"tf32", 1}}).ok());
  expect_rejected(e, {{"tile_k", 32}}, "no knob 'tile_k' (its knobs: tile_m, tile_n, stages, tf32)");
  expect_rejected(e, {{"tile_m", 96}}, "knob tile_m=96 is not one of 64, 128");
  expect_rejected(e, {{"stages", 7}}, "knob stages=7 is not in 2..6");
  expect_rejected(e, {{"tf32", 2}}, "knob tf32=2 is not in 0..1");
  dg::Graph g;
  add_matmul(g, 64, 64, 64, dg::DataType::BFLOAT16);
  expect_build_rejects(e, partitions(g).at(0), {{"stages", 7}}, dg::ErrorCode::GRAPH_EXECUTION_PLAN_CREATION_FAILED,
                       "cuda_gemm_mma_sync: knob stages=7 is not in 2..6");
}

TEST(CudaKnobSchemas, GemmWgmmaTma) {
  const dg::Engine& e = dg::cuda::gemm_wgmma_tma_engine();
  struct Shape {
    int64_t m, n, k;
    dg::DataType t;
    bool b_k_major;
    size_t settings;  // on both targets
  };
  // Clusters (big 16-bit), split-K on Hopper (deep k, few tiles; the fake A100 has fewer SMs), TF32
  // with and without transpose; every whole-tile setting of a 16-bit output again with epilogue=1;
  // 4096^2's 128 x 256 tiles (3.9 waves of 132) also as stream_k twins of the cooperative ones.
  for (const Shape sh : {Shape{4096, 4096, 1024, dg::DataType::BFLOAT16, false, 48},
                         Shape{1024, 1024, 16384, dg::DataType::BFLOAT16, false, 34},
                         Shape{512, 256, 384, dg::DataType::FLOAT, false, 12},
                         Shape{512, 256, 384, dg::DataType::FLOAT, true, 12}}) {
    dg::Graph g;
    add_matmul(g, sh.m, sh.n, sh.k, sh.t, sh.b_k_major);
    EXPECT_EQ(expect_space_accepted(e, g), sh.settings) << sh.m << "x" << sh.n << "x" << sh.k;
  }
  expect_rejected(e, {{"tile_m", 128}}, "no knob 'tile_m'");
  expect_rejected(e, {{"tile_n", 64}}, "knob tile_n=64 is not one of 128, 256");
  expect_rejected(e, {{"split_k", 17}}, "knob split_k=17 is not in 1..16");
  expect_rejected(e, {{"cluster", 4}}, "knob cluster=4 is not in 1..2");
  expect_rejected(e, {{"stages", 9}}, "knob stages=9 is not in 2..8");
  // The rules between knobs.
  expect_rejected(e, {{"tile_n", 256}, {"pingpong", 1}}, "knobs pingpong=1,tile_n=256: pingpong=1 takes tile_n 128");
  expect_rejected(e, {{"tile_n", 256}, {"split_k", 2}}, "split_k above 1 goes only with cooperative 128-wide tiles");
  expect_rejected(e, {{"tile_n", 128}, {"tf32", 1}, {"cluster", 2}}, "cluster 2 goes only with cooperative whole tiles");
  expect_rejected(e, {{"tile_n", 256}, {"stages", 5}}, "bytes of shared memory exceed 227 KB");
  dg::Graph g;
  add_matmul(g, 64, 64, 64, dg::DataType::BFLOAT16);
  const auto p = partitions(g).at(0);
  expect_build_rejects(e, p, {{"tile_n", 96}}, dg::ErrorCode::GRAPH_EXECUTION_PLAN_CREATION_FAILED,
                       "cuda_gemm_wgmma_tma: knob tile_n=96 is not one of 128, 256");
  dg::ByteReader empty(nullptr, 0);
  std::unique_ptr<dg::Plan> plan;
  gemm_test::FakeHopper hopper;
  EXPECT_EQ(e.deserialize(p, hopper.target, {{"tile_n", 96}}, empty, plan).code(), dg::ErrorCode::SERIALIZATION_FAILED);
}

TEST(CudaKnobSchemas, ConvImplicitGemm) {
  const dg::Engine& e = dg::cuda::conv_implicit_gemm_engine();
  using cuda_conv_test::channels_last;
  const auto B = dg::DataType::BFLOAT16;
  {  // fprop, 64 output channels (64-wide wgmma tiles) and 256 input channels (every split-K on Hopper)
    dg::Graph g;
    cuda_conv_test::set_types(g, B);
    g.conv_fprop(declare(g, "X", {2, 256, 7, 7}, B), declare(g, "W", {64, 256, 3, 3}, B),
                 dg::ConvFpropAttr().set_padding({1, 1}))
        ->set_output(true)
        .set_stride(channels_last({2, 64, 7, 7}));
    // + core=3: 64-wide tiles with 6, 4 and 8 stages and ping-pong, 128-wide split-K 2, 3, 4, 6, 8,
    // split clusters of 2, 3 and 4, and those again with the register epilogue (epilogue=1)
    EXPECT_EQ(expect_space_accepted(e, g), (2u + 4u + 6u + 8u) + 8u + 9u + 4u + 5u + 2u * 3u);
  }
  {  // FLOAT as TF32
    dg::Graph g;
    cuda_conv_test::set_types(g, dg::DataType::FLOAT);
    g.set_allow_tf32(true);
    g.conv_fprop(declare(g, "X", {2, 12, 9, 9}, dg::DataType::FLOAT), declare(g, "W", {40, 12, 3, 3}, dg::DataType::FLOAT),
                 dg::ConvFpropAttr().set_padding({1, 1}))
        ->set_output(true)
        .set_stride(channels_last({2, 40, 9, 9}));
    EXPECT_GT(expect_space_accepted(e, g), 16u);
  }
  {  // dgrad: core 3's phases (16 DX channels: four 64-wide settings and resident filters) and the
     // mma.sync core's 16
    dg::Graph g;
    cuda_conv_test::set_types(g, B);
    auto dx = g.conv_dgrad(declare(g, "DY", {2, 24, 5, 5}, B), declare(g, "W", {24, 16, 3, 3}, B),
                           dg::ConvDgradAttr().set_padding({1, 1}).set_stride({2, 2}));
    dx->set_dim({2, 16, 9, 9}).set_stride(channels_last({2, 16, 9, 9})).set_output(true);
    EXPECT_EQ(expect_space_accepted(e, g), 21u);
  }
  expect_rejected(e, {{"tile_k", 32}},
                  "no knob 'tile_k' (its knobs: core, tile_m, tile_n, stages, split_k, tf32, pingpong, resident_b, "
                  "cluster, cluster_n, epilogue, split_cluster, tf32x3)");
  expect_rejected(e, {{"core", 5}}, "knob core=5 is not in 0..4");
  expect_rejected(e, {{"core", 3}, {"split_cluster", 1}}, "split_cluster=1 goes only with core=3, split_k 2 to 4");
  expect_rejected(e, {{"core", 3}, {"split_k", 6}, {"split_cluster", 1}}, "split_cluster=1 goes only with core=3, split_k 2 to 4");
  expect_rejected(e, {{"core", 2}, {"tf32x3", 1}}, "tf32x3=1 (3xTF32) goes only with core=3, tf32 0, tile_n 64 or 128");
  expect_rejected(e, {{"core", 3}, {"tf32", 1}, {"tf32x3", 1}}, "tf32x3=1 (3xTF32) goes only with core=3, tf32 0");
  expect_rejected(e, {{"core", 3}, {"tile_n", 256}, {"tf32x3", 1}}, "tile_n 64 or 128");
  expect_rejected(e, {{"cluster_n", 3}}, "knob cluster_n=3 is not one of 1, 2, 4, 8");
  expect_rejected(e, {{"core", 3}, {"cluster_n", 2}, {"split_k", 2}},
                  "cluster_n above 1 goes only with core=3, cluster 1 and whole tiles of 16-bit inputs");
  expect_rejected(e, {{"tile_n", 96}}, "knob tile_n=96 is not one of 64, 128, 256");
  expect_rejected(e, {{"split_k", 2}}, "split_k above 1 runs on the wgmma cores (core=1..3) only");
  expect_rejected(e, {{"core", 0}, {"tile_n", 256}}, "the mma.sync core (core=0) takes tile_n 64 or 128");
  expect_rejected(e, {{"core", 1}, {"tile_m", 64}}, "the wgmma cores (core=1..4) take tile_m 128");
  expect_rejected(e, {{"core", 1}, {"tile_n", 256}, {"stages", 5}}, "bytes of shared memory for these stages exceed 227 KB");
  expect_rejected(e, {{"core", 2}, {"tile_n", 256}, {"pingpong", 1}},
                  "pingpong=1 goes only with core=2 or 3, tile_n 64 or 128 and split_k 1");
  expect_rejected(e, {{"core", 3}, {"tile_n", 256}, {"split_k", 2}}, "split_k above 1 on core=2 or 3 takes tile_n 128 (or 64 in core=3's split clusters)");
  expect_rejected(e, {{"core", 2}, {"resident_b", 1}}, "resident_b=1 goes only with core=3 and pingpong 0");
  expect_rejected(e, {{"core", 1}, {"epilogue", 1}}, "epilogue=1 (registers + TMA store) goes only with core=2 to 4");
  expect_rejected(e, {{"core", 3}, {"tile_n", 64}, {"stages", 4}, {"resident_b", 1}, {"epilogue", 1}},
                  "epilogue=1 (registers + TMA store) goes only with core=2 to 4 and streamed filter tiles");
  dg::Graph g;
  cuda_conv_test::add_conv_bias_relu(g, 64, 32);
  std::vector<dg::Partition> parts;
  ASSERT_TRUE(cuda_conv_test::anchored_partitions(g, parts));
  expect_build_rejects(e, parts.at(0), {{"stages", 1}}, dg::ErrorCode::GRAPH_EXECUTION_PLAN_CREATION_FAILED,
                       "cuda_conv_implicit_gemm: knob stages=1 is not in 2..8");
}

TEST(CudaKnobSchemas, ConvDepthwiseDirect) {
  const dg::Engine& e = dg::cuda::conv_depthwise_direct_engine();
  {  // 3x3: the strip kernel (strips of 4, 2 and 8)
    dg::Graph g;
    cuda_conv_test::add_conv_bias_relu(g, 32, 1);
    EXPECT_EQ(expect_space_accepted(e, g), 6u);
  }
  {  // 3D filters: the per-pixel kernel only
    dg::Graph g;
    const auto B = dg::DataType::BFLOAT16;
    cuda_conv_test::set_types(g, B);
    g.conv_fprop(declare(g, "X", {1, 16, 4, 6, 6}, B), declare(g, "W", {16, 1, 3, 3, 3}, B),
                 dg::ConvFpropAttr().set_padding({1, 1, 1}))
        ->set_output(true)
        .set_stride(cuda_conv_test::channels_last({1, 16, 4, 6, 6}));
    EXPECT_EQ(expect_space_accepted(e, g), 2u);
  }
  expect_rejected(e, {{"strips", 4}}, "no knob 'strips' (its knobs: strip)");
  expect_rejected(e, {{"strip", 9}}, "knob strip=9 is not in 0..8");
  expect_rejected(e, {{"strip", -1}}, "knob strip=-1 is not in 0..8");
  dg::Graph g;
  cuda_conv_test::add_conv_bias_relu(g, 32, 1);
  std::vector<dg::Partition> parts;
  ASSERT_TRUE(cuda_conv_test::anchored_partitions(g, parts));
  // The partition is checked first (a CUDA handle); the fake target has none.
  gemm_test::FakeHopper hopper;
  std::unique_ptr<dg::Plan> plan;
  EXPECT_EQ(e.build(parts.at(0), hopper.target, {{"strip", 9}}, plan).code(), dg::ErrorCode::GRAPH_NOT_SUPPORTED);
}

TEST(CudaKnobSchemas, SdpaFlash) {
  const dg::Engine& e = dg::cuda::sdpa_flash_engine();
  for (int64_t d : {64, 128, 256}) {
    dg::Graph g;
    g.set_io_data_type(dg::DataType::BFLOAT16).set_compute_data_type(dg::DataType::FLOAT);
    const Dims dims{2, 4, 256, d}, strides{4 * 256 * d, 256 * d, d, 1};
    auto q = g.tensor(dg::TensorAttr().set_name("Q").set_dim(dims).set_stride(strides));
    auto k = g.tensor(dg::TensorAttr().set_name("K").set_dim(dims).set_stride(strides));
    auto v = g.tensor(dg::TensorAttr().set_name("V").set_dim(dims).set_stride(strides));
    auto [o, stats] = g.sdpa(q, k, v, dg::SdpaAttr().set_name("attn").set_is_inference(true));
    o->set_output(true);
    // Head dim 64 also takes two blocks an SM; three-stage rings fit up to head dim 128.
    EXPECT_EQ(expect_space_accepted(e, g), d == 64 ? 9u : d == 128 ? 8u : 6u) << "head dim " << d;
  }
  expect_rejected(e, {{"tile_m", 2}}, "no knob 'tile_m' (its knobs: core, overlap, blocks_per_sm, pingpong, persistent, stages)");
  expect_rejected(e, {{"core", 1}, {"stages", 4}}, "knob stages=4 is not in 2..3");
  expect_rejected(e, {{"core", 1}, {"persistent", 2}}, "knob persistent=2 is not in 0..1");
  expect_rejected(e, {{"core", 1}, {"pingpong", 2}}, "knob pingpong=2 is not in 0..1");
  expect_rejected(e, {{"core", 0}, {"blocks_per_sm", 3}}, "knob blocks_per_sm=3 is not in 1..2");
  expect_rejected(e, {{"core", 2}}, "knob core=2 is not in 0..1");
  expect_rejected(e, {{"core", 1}, {"overlap", 3}}, "knob overlap=3 is not in 0..1");
}

TEST(CudaKnobSchemas, PointwiseJit) {
  using dnngraph::cuda::testing::input;
  const dg::Engine& e = dg::cuda::pointwise_jit_engine();
  {  // no reduction: unroll only
    dg::Graph g;
    dnngraph::cuda::testing::pw(g, dg::PointwiseMode::RELU_FWD, input(g, "X", {64, 128}, dg::DataType::FLOAT))
        ->set_output(true);
    EXPECT_EQ(expect_space_accepted(e, g), 6u);
  }
  {  // a full sum: deterministic 0 or 1 with each unroll (unless DNNGRAPH_DETERMINISTIC decides)
    dg::Graph g;
    auto y = dnngraph::cuda::testing::pw(g, dg::PointwiseMode::RELU_FWD, input(g, "X", {64, 128}, dg::DataType::FLOAT));
    y->set_output(true);
    dnngraph::cuda::testing::reduce(g, dg::ReductionMode::ADD, y, {1, 1})->set_output(true);
    EXPECT_GE(expect_space_accepted(e, g), 6u);
  }
  expect_rejected(e, {{"vec", 4}}, "no knob 'vec' (its knobs: deterministic, unroll)");
  expect_rejected(e, {{"unroll", 0}}, "knob unroll=0 is not in 1..8");
  expect_rejected(e, {{"deterministic", 2}}, "knob deterministic=2 is not in 0..1");
}

}  // namespace
