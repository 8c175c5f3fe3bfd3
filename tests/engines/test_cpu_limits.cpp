// The CPU engines on shapes within the tensor limits (2^48 elements) whose workspaces or index
// tables would not fit: check() refuses them naming the node, the tensor and the limit, and
// build() refuses them the same way. Nothing is allocated: the graphs are only planned.
#include <gtest/gtest.h>

#include <string>

#include "cpu_test_util.hpp"
#include "engines/cpu/conv/conv_implicit_gemm.hpp"
#include "engines/cpu/conv/conv_winograd_f4x3.hpp"
#include "engines/cpu/gemm/cpu_gemm_packed.hpp"
#include "engines/cpu/pool/pool_direct.hpp"
#include "engines/cpu/sdpa/sdpa_flash.hpp"

namespace {

namespace dg = dnngraph;
using cpu_test::explain;
using cpu_test::expect_rejected;
using cpu_test::packed;

constexpr int64_t kTwo44 = int64_t{1} << 44;

// build() of the graph's first partition by `engine` on the CPU: refused, with `reason` in it.
void expect_build_refused(const dg::Engine& engine, dg::Graph& g, const std::string& reason) {
  std::vector<dg::Partition> parts;
  ASSERT_TRUE(dg::partition_graph(*impl_of(g).ir, parts).ok());
  dg::Handle cpu(dg::Device::cpu());
  dg::Target t;
  t.handle = &impl_of(cpu);
  std::unique_ptr<dg::Plan> plan;
  const dg::Status s = engine.build(parts.at(0), t, {}, plan);
  EXPECT_EQ(s.code(), dg::ErrorCode::GRAPH_NOT_SUPPORTED) << s.to_string();
  EXPECT_NE(s.message().find(std::string(engine.name()) + ": " + reason), std::string::npos) << s.message();
  EXPECT_EQ(plan, nullptr);
}

// B [2^44, 1]: packed whole, padded to the register tile's width (8 to 32 columns), it needs
// 2^49 to 2^51 bytes.
TEST(CpuLimits, GemmRefusesAPackedBAbove2To48Bytes) {
  dg::Graph g;
  auto c = g.matmul(packed(g, "A", {1, 1, kTwo44}), packed(g, "B", {1, kTwo44, 1}), dg::MatmulAttr().set_name("mm"));
  c->set_output(true);
  const std::string reason =
      "node 'mm', tensor 'B': packed whole for the GEMM it needs more than 2^48 bytes of workspace";
  expect_rejected("cpu_gemm_packed", explain(g), reason);
  expect_build_refused(dg::cpu::gemm_packed_engine(), g, reason);
}

// C = 2^42 input channels, one output channel, 3x3 (W: 2^47.2 bytes): U is 36 x C x (K padded to
// the tile, 8 to 32) floats, and the implicit GEMM packs all of W padded the same way.
TEST(CpuLimits, ConvEnginesRefuseWorkspacesAbove2To48Bytes) {
  dg::Graph g;
  const int64_t c = int64_t{1} << 42;
  auto y = g.conv_fprop(packed(g, "X", {1, c, 1, 1}), packed(g, "W", {1, c, 3, 3}),
                        dg::ConvFpropAttr().set_name("conv").set_padding({1, 1}).set_stride({1, 1}).set_dilation({1, 1}));
  y->set_output(true);
  const std::string e = explain(g);
  const std::string winograd =
      "node 'conv', tensor 'W': transformed (36 x C x K), with the per-thread tiles, it needs more than 2^48 bytes of "
      "workspace";
  const std::string implicit =
      "node 'conv', tensor 'W': packed whole for the GEMM it needs more than 2^48 bytes of workspace";
  expect_rejected("cpu_conv_winograd_f4x3", e, winograd);
  expect_rejected("cpu_conv_implicit_gemm", e, implicit);
  expect_build_refused(dg::cpu::conv_winograd_f4x3_engine(), g, winograd);
  expect_build_refused(dg::cpu::conv_implicit_gemm_engine(), g, implicit);
}

// Head dim 2^44: one thread's Q tile alone (a block of query rows x d floats) passes 2^48 bytes.
TEST(CpuLimits, SdpaRefusesTilesAbove2To48Bytes) {
  dg::Graph g;
  auto q = packed(g, "Q", {1, 1, 1, kTwo44});
  auto k = packed(g, "K", {1, 1, 1, kTwo44});
  auto v = packed(g, "V", {1, 1, 1, 1});
  g.sdpa(q, k, v, dg::SdpaAttr().set_name("attn"))[0]->set_output(true);
  const std::string reason = "node 'attn', tensor 'Q': head dim " + std::to_string(kTwo44) +
                             " (V's 1) needs more than 2^48 bytes of tiles per thread";
  expect_rejected("cpu_sdpa_flash", explain(g), reason);
  expect_build_refused(dg::cpu::sdpa_flash_engine(), g, reason);
}

// Nearest resize 2^40 -> 2^30: the index table's floor(o * in / out) would pass int64 at o ~ 2^23.
TEST(CpuLimits, ResizeRefusesIndexProductsBeyondInt64) {
  dg::Graph g;
  auto y = g.resample(packed(g, "X", {1, 1, int64_t{1} << 40}),
                      dg::ResampleAttr().set_name("resize").set_resampling_mode(dg::ResampleMode::NEAREST).set_scale({0x1p-10}));
  y->set_name("Y").set_output(true);
  const std::string reason = "node 'resize', tensor 'Y': spatial dim 0 of size " + std::to_string(int64_t{1} << 30) +
                             " from " + std::to_string(int64_t{1} << 40) +
                             " puts (out - 1) * in beyond int64 in the resize tables";
  expect_rejected("cpu_pool_direct", explain(g), reason);
  expect_build_refused(dg::cpu::pool_direct_engine(), g, reason);
}

}  // namespace
