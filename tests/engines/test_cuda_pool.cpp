// cuda_pool_direct: its module compiles with NVRTC for every architecture it serves (no GPU needed),
// the GPU gate offers it, and on a GPU (skipped without one)
// max and average pooling (padding included and excluded) and nearest and linear resizing over 1-3
// spatial dims, NHWC, NCHW and random layouts, fp32/fp16/bf16 in and out, match ref on seeded
// random shapes with NaN-poisoned outputs; NaN propagates through max pooling, windows cut by
// the padding as ref. (The kernel's logic and the rejections are also checked
// without a GPU: test_cuda_pool_emulated.cpp.)
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <random>

#include "common/scoped_env.hpp"
#include "engines/cuda/common/gpu_checked.hpp"
#include "engines/cuda/common/nvrtc_compile.hpp"
#include "engines/cuda/pool/pool_direct.hpp"
#include "engines/ref_test_util.hpp"
#include "engines/test_cuda_util.hpp"
#include "pool_test_util.hpp"

namespace dnngraph::cuda {
namespace {

using namespace testing;
using T = DataType;
using RM = ResampleMode;
using Dims = std::vector<int64_t>;
using test_env::ScopedEnv;
using pool_test::Layout;
using pool_test::pooled;
using pool_test::strides_of;
using ref_test::random_float_type;
constexpr const char* kEngine = "cuda_pool_direct";

TEST(CudaPoolBuild, ModuleCompilesForEveryArchitecture) {
  if (!nvrtc()) GTEST_SKIP() << nvrtc_error();
  for (const char* arch : {"sm_80", "sm_90a"}) {
    std::vector<uint8_t> cubin;
    const Status s = nvrtc_compile(pool_direct_module_source(), "pool_direct.cu", arch, cubin);
    EXPECT_TRUE(s.ok()) << arch << ": " << s.to_string();
    EXPECT_FALSE(cubin.empty()) << arch;
  }
}

// CudaPool.* passed on a GPU (2026-12-06), so the gate no longer holds it back.
TEST(CudaPoolBuild, OfferedWithoutListing) {
  ScopedEnv env("DNNGRAPH_UNCHECKED_ENGINES", nullptr);
  std::string why;
  EXPECT_TRUE(checked_on_gpu(kEngine, "", why)) << why;
}

// On a CPU handle it says it needs a CUDA one.
TEST(CudaPoolBuild, RejectsCpuHandles) {
  dg::Graph g;
  g.resample(input(g, "X", {1, 2, 4, 4}, T::FLOAT),
             ResampleAttr().set_resampling_mode(RM::MAXPOOL).set_window({2, 2}).set_stride({2, 2}))->set_output(true);
  dg::Handle cpu(dg::Device::cpu());
  ASSERT_TRUE(g.validate().ok());
  ASSERT_TRUE(g.build_operation_graph(cpu).ok());
  (void)g.create_execution_plans({HeurMode::FALLBACK});
  EXPECT_NE(g.explain().find("cuda_pool_direct: rejected: runs on CUDA handles; this one is cpu"), std::string::npos)
      << g.explain();
}

class CudaPool : public ::testing::Test {
 protected:
  void SetUp() override {
    h_ = cuda_handle(skip_);
    DG_SKIP_WITHOUT_GPU(h_, skip_);
  }
  // resample(X) with X and Y of these dims, layouts and types, on cuda_pool_direct and on ref.
  void expect_resample(const Dims& x, const Dims& y, Layout lx, Layout ly, T tx, T ty, const ResampleAttr& attr,
                       uint32_t seed) {
    std::mt19937 rng(seed);
    const Dims xs = strides_of(x, lx, rng), ys = strides_of(y, ly, rng);
    RunOptions o;
    o.engine = kEngine;
    o.seed = seed;
    expect_matches_ref([&](dg::Graph& g) {
      auto Y = g.resample(input(g, "X", x, tx, xs), attr);
      Y->set_output(true).set_data_type(ty).set_dim(y).set_stride(ys);
    }, *h_, o);
  }
  std::string skip_;
  std::unique_ptr<dg::Handle> h_;
};

TEST_F(CudaPool, RandomPoolingMatchesRef) {
  std::mt19937 rng(402);
  const RM modes[] = {RM::MAXPOOL, RM::AVGPOOL_INCLUDE_PADDING, RM::AVGPOOL_EXCLUDE_PADDING};
  for (int trial = 0; trial < 36; ++trial) {
    const size_t spatial = 1 + rng() % 3;
    Dims x = {int64_t(1 + rng() % 3), int64_t(1 + rng() % 40)}, w, s, pre, post;
    for (size_t i = 0; i < spatial; ++i) {
      w.push_back(1 + rng() % 3);
      s.push_back(1 + rng() % 3);
      pre.push_back(rng() % w.back());
      post.push_back(rng() % w.back());
      x.push_back(std::max<int64_t>(w.back(), 1 + rng() % (spatial == 3 ? 7 : 15)));
    }
    const RM mode = modes[trial % 3];
    const Layout lx = static_cast<Layout>(trial % 3), ly = static_cast<Layout>((trial / 3) % 3);
    SCOPED_TRACE("trial " + std::to_string(trial) + " " + std::string(to_string(mode)));
    expect_resample(x, pooled(x, w, s, pre, post), lx, ly, random_float_type(rng), random_float_type(rng),
                    ResampleAttr().set_resampling_mode(mode).set_window(w).set_stride(s).set_pre_padding(pre).set_post_padding(post),
                    static_cast<uint32_t>(trial + 1));
  }
}

TEST_F(CudaPool, RandomResizingMatchesRef) {
  std::mt19937 rng(403);
  for (int trial = 0; trial < 24; ++trial) {
    const size_t spatial = 1 + rng() % 3;
    Dims x = {int64_t(1 + rng() % 3), int64_t(1 + rng() % 24)};
    for (size_t i = 0; i < spatial; ++i) x.push_back(1 + rng() % 9);
    Dims y = x;
    for (size_t i = 0; i < spatial; ++i) y[i + 2] = 1 + rng() % 13;  // up and down
    const RM mode = trial % 2 ? RM::NEAREST : RM::BILINEAR;
    SCOPED_TRACE("trial " + std::to_string(trial) + " " + std::string(to_string(mode)));
    expect_resample(x, y, static_cast<Layout>(trial % 3), static_cast<Layout>((trial / 2) % 3), random_float_type(rng),
                    random_float_type(rng), ResampleAttr().set_resampling_mode(mode), static_cast<uint32_t>(trial + 100));
  }
}

// 2-D resizes of channels-last tensors whose channels are whole 16-byte vectors: the channels-
// vector kernel (passed on an H100, 2026-12-07), up and down, nearest and bilinear.
TEST_F(CudaPool, ChannelsLastResizingMatchesRef) {
  std::mt19937 rng(404);
  for (int trial = 0; trial < 12; ++trial) {
    const Dims x = {int64_t(1 + rng() % 3), 8 * int64_t(1 + rng() % 4), int64_t(1 + rng() % 20), int64_t(1 + rng() % 20)};
    Dims y = x;
    y[2] = trial % 3 == 0 ? 2 * x[2] : 1 + rng() % 30;
    y[3] = trial % 3 == 0 ? 2 * x[3] : 1 + rng() % 30;
    const RM mode = trial % 2 ? RM::NEAREST : RM::BILINEAR;
    SCOPED_TRACE("trial " + std::to_string(trial) + " " + std::string(to_string(mode)));
    expect_resample(x, y, Layout::NHWC, Layout::NHWC, random_float_type(rng), random_float_type(rng),
                    ResampleAttr().set_resampling_mode(mode), static_cast<uint32_t>(trial + 200));
  }
}

// ResNet's stem pooling and a U-Net's 2x upsampling at network sizes (a grid-stride walk of
// several steps per thread), and windows cut by padding on every side.
TEST_F(CudaPool, NetworkShapesAndPaddedWindowsMatchRef) {
  const auto stem = ResampleAttr().set_resampling_mode(RM::MAXPOOL).set_window({3, 3}).set_stride({2, 2}).set_padding({1, 1});
  expect_resample({8, 64, 112, 112}, {8, 64, 56, 56}, Layout::NHWC, Layout::NHWC, T::BFLOAT16, T::BFLOAT16, stem, 1);
  expect_resample({2, 64, 112, 112}, {2, 64, 56, 56}, Layout::NCHW, Layout::NCHW, T::FLOAT, T::FLOAT, stem, 2);
  expect_resample({2, 32, 40, 40}, {2, 32, 80, 80}, Layout::NHWC, Layout::NHWC, T::HALF, T::HALF,
                  ResampleAttr().set_resampling_mode(RM::BILINEAR), 3);
  // Channels-last 2-D pooling by vectors of channels (pool2d_channels), output types unlike X's.
  const auto avg2 = ResampleAttr().set_resampling_mode(RM::AVGPOOL_INCLUDE_PADDING).set_window({2, 2}).set_stride({2, 2});
  expect_resample({2, 256, 28, 28}, {2, 256, 14, 14}, Layout::NHWC, Layout::NHWC, T::FLOAT, T::FLOAT, avg2, 5);
  expect_resample({2, 64, 30, 30}, {2, 64, 15, 15}, Layout::NHWC, Layout::NHWC, T::BFLOAT16, T::FLOAT, stem, 6);
  expect_resample({1, 16, 9, 9}, {1, 16, 5, 5}, Layout::NHWC, Layout::NHWC, T::FLOAT, T::BFLOAT16,
                  ResampleAttr().set_resampling_mode(RM::AVGPOOL_EXCLUDE_PADDING).set_window({3, 3}).set_stride({2, 2}).set_padding({1, 1}),
                  7);
  for (RM mode : {RM::MAXPOOL, RM::AVGPOOL_EXCLUDE_PADDING, RM::AVGPOOL_INCLUDE_PADDING})
    expect_resample({1, 3, 3, 2}, pooled({1, 3, 3, 2}, {3, 3}, {2, 1}, {2, 2}, {2, 2}), Layout::NCHW, Layout::NCHW,
                    T::FLOAT, T::FLOAT,
                    ResampleAttr().set_resampling_mode(mode).set_window({3, 3}).set_stride({2, 1}).set_padding({2, 2}), 4);
}

TEST_F(CudaPool, MaxPoolingPropagatesNaN) {
  dg::Graph g;
  auto Y = g.resample(input(g, "X", {1, 1, 2, 4}, T::FLOAT),
                      ResampleAttr().set_resampling_mode(RM::MAXPOOL).set_window({2, 2}).set_stride({2, 2}));
  Y->set_output(true).set_data_type(T::FLOAT);
  g.select_engines({kEngine});
  ASSERT_TRUE(g.validate().ok());
  ASSERT_TRUE(g.build_operation_graph(*h_).ok());
  ASSERT_TRUE(g.create_execution_plans({HeurMode::FALLBACK}).ok()) << g.explain();
  ASSERT_TRUE(g.build_plans(*h_).ok()) << g.explain();
  const float nan = std::nanf("");
  const float x[8] = {1, nan, 5, 6, -1, 2, 7, 8};  // window 0 holds a NaN, window 1 does not
  std::vector<int32_t> bits(8);
  std::memcpy(bits.data(), x, sizeof(x));
  DeviceRig rig(*h_, g, 1, {{"X", bits}});
  ASSERT_TRUE(execute_in_workspace(g, *h_, rig.pack));
  const Outputs got = rig.read();
  ASSERT_EQ(got.size(), 1u);
  float y[2];
  std::memcpy(y, got.begin()->second.data(), sizeof(y));
  EXPECT_TRUE(std::isnan(y[0])) << y[0];
  EXPECT_EQ(y[1], 8.0f);
}

}  // namespace
}  // namespace dnngraph::cuda
