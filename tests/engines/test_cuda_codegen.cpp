// The CUDA code generator's decisions, on the CPU: dims merged, vector width, each operand's access,
// index width, workspace, and sources that do not change with sizes when dynamic shapes are on (so
// the kernel cache serves every batch size). Also cuda_pointwise_jit's answer on a CPU handle.
#include <gtest/gtest.h>

#include "engines/cuda/codegen/params.hpp"
#include "engines/cuda/pointwise/pointwise_jit.hpp"
#include "engines/test_cuda_util.hpp"
#include "planning/plan_set.hpp"

namespace dnngraph::cuda {
namespace {

using namespace testing;
using codegen::Access;
using M = PointwiseMode;
using R = ReductionMode;

codegen::Layout layout_of(dg::Graph& g, codegen::LayoutOptions o = {}) {
  Generated gen;
  EXPECT_TRUE(generate(g, o, gen));
  return gen.layouts.empty() ? codegen::Layout{} : gen.layouts[0];
}

TEST(CudaCodegen, ContiguousTensorsCollapseToOneDimWith16ByteVectors) {
  dg::Graph g;
  auto y = pw(g, M::ADD, input(g, "A", {8, 3, 16, 16}, dg::DataType::FLOAT), input(g, "B", {8, 3, 16, 16}, dg::DataType::FLOAT));
  y->set_output(true).set_data_type(dg::DataType::BFLOAT16);
  auto L = layout_of(g);
  EXPECT_EQ(L.dims, (std::vector<int64_t>{8 * 3 * 16 * 16}));
  EXPECT_EQ(L.vec, 4);  // 16 bytes of fp32
  for (const auto& op : L.operands) EXPECT_EQ(op.inner, Access::VEC);
  EXPECT_FALSE(L.wide_index);
  EXPECT_EQ(L.workspace_bytes, 0);
}

TEST(CudaCodegen, BroadcastDimsStaySeparateAndLoadOnce) {
  dg::Graph g;
  // Per-channel bias over NCHW: the bias has stride 0 along H*W (merged) and along N.
  auto y = pw(g, M::ADD, input(g, "X", {4, 6, 10, 10}, dg::DataType::HALF), input(g, "B", {1, 6, 1, 1}, dg::DataType::HALF));
  y->set_output(true);
  auto L = layout_of(g);
  EXPECT_EQ(L.dims, (std::vector<int64_t>{4, 6, 100}));
  EXPECT_EQ(L.vec, 4);  // 100 is not a multiple of 8 halves
  EXPECT_EQ(L.operands[static_cast<size_t>(L.operand_of(impl_of(g).tensor_id.at(y.get())))].inner, Access::VEC);
  bool bias_broadcast = false;
  for (const auto& op : L.operands) bias_broadcast |= op.inner == Access::BCAST;
  EXPECT_TRUE(bias_broadcast);
}

// Channels-last tensors are walked in memory order: C innermost, read in 16-byte vectors, the
// per-channel bias a vector too (not one strided element per thread along W).
TEST(CudaCodegen, ChannelsLastIsWalkedInMemoryOrder) {
  dg::Graph g;
  const std::vector<int64_t> nhwc{64 * 100, 1, 64 * 10, 64};
  auto y = pw(g, M::ADD, input(g, "X", {4, 64, 10, 10}, dg::DataType::BFLOAT16, nhwc),
              input(g, "B", {1, 64, 1, 1}, dg::DataType::BFLOAT16, {64, 1, 64, 64}));
  y = pw(g, M::RELU_FWD, y);
  y->set_output(true).set_stride(nhwc);
  auto L = layout_of(g);
  EXPECT_EQ(L.dims, (std::vector<int64_t>{400, 64}));
  EXPECT_EQ(L.vec, 8);  // 16 bytes of bf16
  for (const auto& op : L.operands) EXPECT_EQ(op.inner, Access::VEC) << "tensor " << op.tensor;
  // The logical axes still map to their collapsed dims (for generated indices).
  EXPECT_EQ(L.dim_of_axis, (std::vector<int>{0, 1, 0, 0}));
}

TEST(CudaCodegen, TransposedOperandsAreReadElementByElement) {
  dg::Graph g;
  auto y = pw(g, M::RELU_FWD, input(g, "X", {64, 32}, dg::DataType::FLOAT, {1, 64}));
  y->set_output(true).set_stride({32, 1});
  auto L = layout_of(g);
  ASSERT_EQ(L.rank(), 2);
  EXPECT_EQ(L.vec, 4);
  EXPECT_EQ(L.operands[0].inner, Access::STRIDED);  // X: stride 64 along the innermost dim
  EXPECT_EQ(L.operands[1].inner, Access::VEC);
}

TEST(CudaCodegen, VectorWidthFollowsTheWidestTypeAndTheInnerSize) {
  dg::Graph g;
  auto y = pw(g, M::IDENTITY, input(g, "X", {5, 96}, dg::DataType::FP8_E4M3));
  y->set_output(true).set_data_type(dg::DataType::FP8_E5M2);
  EXPECT_EQ(layout_of(g).vec, 16);
  dg::Graph g2;
  pw(g2, M::IDENTITY, input(g2, "X", {7, 7}, dg::DataType::FP8_E4M3))->set_output(true);
  EXPECT_EQ(layout_of(g2).vec, 1);  // 49 elements: no vector divides them
  // A broadcast fp32 scale is read once per vector: the bf16 tensors set the width.
  dg::Graph g3;
  pw(g3, M::MUL, input(g3, "X", {4, 256}, dg::DataType::BFLOAT16), input(g3, "S", {1, 1}, dg::DataType::FLOAT))
      ->set_output(true).set_data_type(dg::DataType::BFLOAT16);
  EXPECT_EQ(layout_of(g3).vec, 8);
}

TEST(CudaCodegen, ReductionsTheirAccumulatorsAndWorkspace) {
  dg::Graph g;
  auto x = pw(g, M::EXP, input(g, "X", {16, 64}, dg::DataType::FLOAT));
  reduce(g, R::AMAX, x, {1, 1})->set_output(true);                                     // fp32, in place
  reduce(g, R::ADD, x, {16, 1})->set_output(true).set_data_type(dg::DataType::HALF);  // workspace + finalize
  reduce(g, R::AVG, x, {1, 64})->set_output(true);                                     // needs finishing
  auto L = layout_of(g);
  ASSERT_EQ(L.reductions.size(), 3u);
  EXPECT_TRUE(L.reductions[0].full && L.reductions[0].in_output);
  EXPECT_FALSE(L.reductions[1].full || L.reductions[1].in_output);
  EXPECT_FALSE(L.reductions[2].in_output);
  EXPECT_DOUBLE_EQ(L.reductions[2].inv_count, 1.0 / 16);
  EXPECT_EQ(L.reductions[1].acc_offset, 0);
  EXPECT_EQ(L.reductions[2].acc_offset, 256);
  EXPECT_EQ(L.workspace_bytes, 512);
  EXPECT_TRUE(L.needs_finalize());
}

TEST(CudaCodegen, DeterministicFullReductionsUsePerBlockPartials) {
  dg::Graph g;
  auto x = pw(g, M::SQRT, input(g, "X", {16, 64}, dg::DataType::FLOAT));
  reduce(g, R::ADD, x, {1, 1})->set_output(true);
  codegen::LayoutOptions o;
  o.deterministic = true;
  o.grid = 100;
  auto L = layout_of(g, o);
  EXPECT_FALSE(L.reductions[0].in_output);
  EXPECT_EQ(L.partials_offset, 0);
  EXPECT_EQ(L.workspace_bytes, 512);  // 100 floats, 256-byte aligned
  // A deterministic sum over part of the dims is refused with the reason.
  dg::Graph g2;
  reduce(g2, R::ADD, pw(g2, M::SQRT, input(g2, "X", {16, 64}, dg::DataType::FLOAT)), {16, 1})->set_output(true);
  dg::Handle cpu(dg::Device::cpu());
  ASSERT_TRUE(g2.validate().ok());
  ASSERT_TRUE(g2.build_operation_graph(cpu).ok());
  std::vector<Partition> parts;
  ASSERT_TRUE(partition_graph(*impl_of(g2).ir, parts).ok());
  expr::Program prog;
  std::string why;
  ASSERT_TRUE(expr::lower(parts[0], -1, prog, why));
  codegen::Layout L2;
  EXPECT_FALSE(codegen::plan_layout(prog, *impl_of(g2).ir, o, L2, why));
  EXPECT_NE(why.find("deterministic"), std::string::npos) << why;
}

TEST(CudaCodegen, DynamicShapesGiveOneSourceForEveryBatchSize) {
  auto source_for = [](int64_t batch, int64_t heads, bool dynamic) {
    dg::Graph g;
    auto y = pw(g, M::GELU_FWD, pw(g, M::MUL, input(g, "X", {batch, heads, 64}, dg::DataType::BFLOAT16),
                                   input(g, "S", {1, heads, 64}, dg::DataType::BFLOAT16)));
    y->set_output(true);
    Generated gen;
    codegen::LayoutOptions o;
    o.dynamic = dynamic;
    EXPECT_TRUE(generate(g, o, gen));
    return gen.sources.at(0);
  };
  EXPECT_EQ(source_for(3, 12, true), source_for(40, 16, true));
  EXPECT_NE(source_for(3, 12, false), source_for(3, 16, false));  // static sizes are baked in...
  EXPECT_EQ(source_for(3, 12, false), source_for(40, 12, false));  // ...but the outermost only bounds the loop
}

TEST(CudaCodegen, FastDivisionMatchesIntegerDivision) {
  std::mt19937 rng(3);
  for (uint32_t d : {1u, 2u, 3u, 7u, 9u, 100u, 1000u, 4096u, 65535u, 1000003u, 2147483647u}) {
    const uint64_t m = codegen::fast_div_magic(d);
    for (int i = 0; i < 2000; ++i) {
      const uint32_t n = i < 1000 ? static_cast<uint32_t>(i) : rng() & 0x7fffffffu;
      const uint32_t t = static_cast<uint32_t>((uint64_t{n} * (m & 0xffffffffu)) >> 32);
      const uint32_t q = static_cast<uint32_t>((uint64_t{t} + n) >> (m >> 32));
      ASSERT_EQ(q, n / d) << n << " / " << d;
    }
  }
}

TEST(CudaCodegen, EngineSaysWhyNotOnTheCpu) {
  dg::Graph g;
  pw(g, M::RELU_FWD, input(g, "X", {4, 4}, dg::DataType::FLOAT))->set_output(true);
  dg::Handle cpu(dg::Device::cpu());
  ASSERT_TRUE(g.validate().ok());
  ASSERT_TRUE(g.build_operation_graph(cpu).ok());
  std::vector<Partition> parts;
  ASSERT_TRUE(partition_graph(*impl_of(g).ir, parts).ok());
  const Support s = pointwise_jit_engine().check(parts[0], make_target(impl_of(g), cpu));
  EXPECT_FALSE(s.ok);
  EXPECT_NE(s.reason.find("CUDA handles"), std::string::npos) << s.reason;
}

}  // namespace
}  // namespace dnngraph::cuda
