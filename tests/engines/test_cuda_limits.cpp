// The CUDA engines' geometry against the kernels' 32-bit index math, through check() alone (no
// GPU: a Hopper target whose context was never opened). Shapes that validate (below 2^48
// elements) but whose sizes, window reach or tile counts do not fit a 32-bit int are rejected with
// the node, the tensor, the value and the limit; shapes that fit are not.
#include <gtest/gtest.h>

#include <memory>
#include <string>

#include "cuda_conv_test_util.hpp"
#include "engines/cuda/conv/conv_depthwise_direct.hpp"
#include "engines/cuda/conv/conv_implicit_gemm.hpp"
#include "engines/cuda/gemm/gemm_mma_sync.hpp"
#include "engines/cuda/gemm/gemm_wgmma_tma.hpp"
#include "gemm_test_util.hpp"
#include "runtime/cuda/context.hpp"
#include "runtime/handle_impl.hpp"

namespace {

namespace dg = dnngraph;
using cuda_conv_test::declare;
using cuda_conv_test::set_types;
using gemm_test::Dims;

constexpr int64_t kBeyondInt32 = (int64_t{1} << 31) + 64;
constexpr const char* kLimit = "; the kernel indexes it with a 32-bit int (at most 2147483647)";

// An sm_90 CUDA handle as check() sees one; nothing is ever launched on it.
struct HopperTarget {
  dg::HandleImpl handle;
  dg::Target target;
  HopperTarget() {
    handle.device = dg::Device::cuda();
    handle.cuda = std::make_shared<dg::cuda::Context>();
    handle.info.sm_version = 90;
    handle.info.multiprocessors = 132;
    target.handle = &handle;
  }
};

// check()'s answer for g's anchored partition.
dg::Support check(const dg::Engine& e, dg::Graph& g) {
  std::vector<dg::Partition> parts;
  EXPECT_TRUE(cuda_conv_test::anchored_partitions(g, parts));
  if (parts.empty()) return dg::Support::no("no partition");
  HopperTarget h;
  return e.check(parts[0], h.target);
}

void expect_rejected(const dg::Support& s, const std::string& reason) {
  EXPECT_FALSE(s.ok);
  EXPECT_NE(s.reason.find(reason), std::string::npos) << s.reason;
}

void expect_no_limit(const dg::Support& s) {
  // Without NVRTC the answer is no for that reason; never for an index limit.
  EXPECT_EQ(s.reason.find("32-bit"), std::string::npos) << s.reason;
}

// bf16 conv_fprop X [1, 8, w] * W [8, 8, 3] with padding 1 (plus dilation and more padding where
// given), channels-last.
void add_conv1d(dg::Graph& g, int64_t w, int64_t dilation = 1, int64_t padding = 1) {
  set_types(g, dg::DataType::BFLOAT16);
  auto y = g.conv_fprop(declare(g, "X", {1, 8, w}, dg::DataType::BFLOAT16),
                        declare(g, "W", {8, 8, 3}, dg::DataType::BFLOAT16),
                        dg::ConvFpropAttr().set_padding({padding}).set_dilation({dilation}).set_name("conv"));
  y->set_output(true).set_stride(cuda_conv_test::channels_last({1, 8, w}));
}

TEST(CudaLimits, ConvSpatialDimBeyondInt32) {
  dg::Graph g;
  add_conv1d(g, kBeyondInt32);
  const std::string why = "node 'conv', tensor 'X': dim 2 is " + std::to_string(kBeyondInt32) + kLimit;
  expect_rejected(check(dg::cuda::conv_implicit_gemm_engine(), g), why);
}

TEST(CudaLimits, ConvWindowReachBeyondInt32) {
  // 16 outputs: dilation 2^30 over 3 taps is cancelled by padding 2^30 on each side, but the
  // gathers' coordinates reach (16 - 1) + 2^30 + 16 + 2 x 2^30 = 3221225503.
  dg::Graph g;
  add_conv1d(g, 16, int64_t{1} << 30, int64_t{1} << 30);
  expect_rejected(check(dg::cuda::conv_implicit_gemm_engine(), g),
                  "node 'conv', tensor 'X': the window reach along dim 2 (padding, stride and dilation) is 3221225503" +
                      std::string(kLimit));
}

TEST(CudaLimits, DepthwiseConvSpatialDimBeyondInt32) {
  dg::Graph g;
  set_types(g, dg::DataType::BFLOAT16);
  auto y = g.conv_fprop(declare(g, "X", {1, 8, kBeyondInt32}, dg::DataType::BFLOAT16),
                        declare(g, "W", {8, 1, 3}, dg::DataType::BFLOAT16),
                        dg::ConvFpropAttr().set_padding({1}).set_name("dw"));
  y->set_output(true).set_stride(cuda_conv_test::channels_last({1, 8, kBeyondInt32}));
  expect_rejected(check(dg::cuda::conv_depthwise_direct_engine(), g),
                  "node 'dw', tensor 'X': dim 2 is " + std::to_string(kBeyondInt32) + kLimit);
}

TEST(CudaLimits, ConvThatFitsIsNotRejectedForALimit) {
  dg::Graph g;
  add_conv1d(g, 4096);
  expect_no_limit(check(dg::cuda::conv_implicit_gemm_engine(), g));
}

// bf16 A [m, k] x B [k, n], row-major.
void add_matmul(dg::Graph& g, int64_t m, int64_t n, int64_t k) {
  set_types(g, dg::DataType::BFLOAT16);
  auto a = g.tensor(dg::TensorAttr().set_name("A").set_dim({m, k}).set_stride({k, 1}));
  auto b = g.tensor(dg::TensorAttr().set_name("B").set_dim({k, n}).set_stride({n, 1}));
  g.matmul(a, b, dg::MatmulAttr().set_name("mm"))->set_output(true);
}

TEST(CudaLimits, MatmulKBeyondInt32) {
  for (const dg::Engine* e : {&dg::cuda::gemm_mma_sync_engine(), &dg::cuda::gemm_wgmma_tma_engine()}) {
    dg::Graph g;
    add_matmul(g, 16, 8, kBeyondInt32);
    SCOPED_TRACE(std::string(e->name()));
    expect_rejected(check(*e, g), "node 'mm', tensor 'A': K is " + std::to_string(kBeyondInt32) + kLimit);
  }
}

TEST(CudaLimits, MatmulTileCountBeyondInt32) {
  // 2^22 x 2^22: 2^32 tiles of 64 x 64, each size itself well within 32 bits.
  dg::Graph g;
  add_matmul(g, int64_t{1} << 22, int64_t{1} << 22, 8);
  const dg::Support s = check(dg::cuda::gemm_mma_sync_engine(), g);
  EXPECT_FALSE(s.ok);
  EXPECT_EQ(s.reason.find("node 'mm', tensor '"), 0u) << s.reason;  // the output, by its generated name
  EXPECT_NE(s.reason.find("': the count of 64 x 64 output tiles over the batch is 4294967296" + std::string(kLimit)),
            std::string::npos)
      << s.reason;
}

TEST(CudaLimits, MatmulThatFitsIsNotRejectedForALimit) {
  dg::Graph g;
  add_matmul(g, 1 << 16, 1 << 14, 4096);
  expect_no_limit(check(dg::cuda::gemm_mma_sync_engine(), g));
}

}  // namespace
