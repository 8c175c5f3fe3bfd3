// Programmatic dependent launches (runtime/cuda/driver_ext.hpp's LaunchOrder::PROGRAMMATIC): the
// wgmma conv and GEMM kernels may be scheduled while the kernel before them drains, and wait in
// pdl_start (kernels/gemm_wgmma.cuh) before they touch memory. Two dependent conv partitions (the
// second reads what the first wrote; on the next call the first overwrites it) run back to back
// with alternating inputs into distinct outputs, then as a captured CUDA graph, against a host
// reference with NaN-poisoned outputs: a kernel that started reading too early would differ. Its
// CTAs run 9 k steps each, so they launch programmatically (launch_order.hpp).
#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <string>
#include <vector>

#include "engines/cuda/common/launch_order.hpp"
#include "engines/test_cuda_util.hpp"

namespace dnngraph::cuda {
namespace {

using namespace testing;
using T = DataType;

constexpr int64_t kN = 2, kC = 64, kHW = 16;
constexpr int64_t kPixels = kN * kHW * kHW;

std::vector<int64_t> nhwc_strides(int64_t c, int64_t hw) { return {c * hw * hw, 1, hw * c, c}; }

// Y = relu(conv3x3(relu(conv3x3(X, W1)), W2)), bf16 NHWC, pad 1: two conv partitions.
struct Chain {
  dg::Graph g;
  dg::TensorPtr x, w1, w2, y;
  Chain() {
    g.set_io_data_type(T::BFLOAT16).set_intermediate_data_type(T::BFLOAT16).set_compute_data_type(T::FLOAT);
    x = input(g, "X", {kN, kC, kHW, kHW}, T::BFLOAT16, nhwc_strides(kC, kHW));
    w1 = input(g, "W1", {kC, kC, 3, 3}, T::BFLOAT16, nhwc_strides(kC, 3));
    w2 = input(g, "W2", {kC, kC, 3, 3}, T::BFLOAT16, nhwc_strides(kC, 3));
    const auto conv = dg::ConvFpropAttr().set_padding({1, 1}).set_stride({1, 1}).set_dilation({1, 1});
    auto t = g.relu(g.conv_fprop(x, w1, conv));
    y = g.relu(g.conv_fprop(t, w2, conv));
    y->set_output(true).set_stride(nhwc_strides(kC, kHW));
  }
};

std::vector<uint16_t> random_bf16(size_t n, float scale, uint32_t seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> u(-scale, scale);
  std::vector<uint16_t> v(n);
  for (auto& e : v) e = dtype::float_to_bf16(u(rng));
  return v;
}

// relu(conv3x3(x, w)) on NHWC / KRSC bf16 values, in double, rounded to bf16 as the chain stores it.
std::vector<double> conv_relu(const std::vector<double>& x, const std::vector<uint16_t>& w) {
  std::vector<double> y(static_cast<size_t>(kPixels * kC));
  for (int64_t n = 0; n < kN; ++n)
    for (int64_t p = 0; p < kHW; ++p)
      for (int64_t q = 0; q < kHW; ++q)
        for (int64_t k = 0; k < kC; ++k) {
          double acc = 0;
          for (int64_t r = 0; r < 3; ++r)
            for (int64_t s = 0; s < 3; ++s) {
              const int64_t h = p + r - 1, v = q + s - 1;
              if (h < 0 || h >= kHW || v < 0 || v >= kHW) continue;
              for (int64_t c = 0; c < kC; ++c)
                acc += x[static_cast<size_t>(((n * kHW + h) * kHW + v) * kC + c)] *
                       dtype::bf16_to_float(w[static_cast<size_t>(((k * 3 + r) * 3 + s) * kC + c)]);
            }
          y[static_cast<size_t>(((n * kHW + p) * kHW + q) * kC + k)] = dtype::round_to(T::BFLOAT16, std::max(0.0, acc));
        }
  return y;
}

std::vector<double> reference(const std::vector<uint16_t>& x, const std::vector<uint16_t>& w1,
                              const std::vector<uint16_t>& w2) {
  std::vector<double> xd(x.size());
  for (size_t i = 0; i < x.size(); ++i) xd[i] = dtype::bf16_to_float(x[i]);
  return conv_relu(conv_relu(xd, w1), w2);
}

void expect_matches(HandleImpl& h, const memory::Buffer& y, const std::vector<double>& want, const std::string& what) {
  std::vector<uint16_t> got(want.size());
  ASSERT_TRUE(memory::copy_to_host(h, got.data(), y.get(), got.size() * 2).ok());
  double peak = 0;
  for (double v : want) peak = std::max(peak, std::fabs(v));
  for (size_t i = 0; i < got.size(); ++i) {
    const double g = dtype::bf16_to_float(got[i]);
    ASSERT_NEAR(g, want[i], 2e-2 * std::fabs(want[i]) + 1e-2 * peak) << what << ", element " << i;
  }
}

// Programmatic launches go where a CTA's whole share is short (launch_order.hpp's measurements).
TEST(CudaLaunchOrder, ShortSharesLaunchProgrammatically) {
  EXPECT_EQ(launch_order_for(8, 8, 9), LaunchOrder::PROGRAMMATIC);     // RN50 3x3 C64 32² N1: 8 tiles of 9 k steps
  EXPECT_EQ(launch_order_for(64, 64, 9), LaunchOrder::PROGRAMMATIC);   // the same at N8
  EXPECT_EQ(launch_order_for(128, 128, 16), LaunchOrder::PROGRAMMATIC);
  EXPECT_EQ(launch_order_for(98, 98, 36), LaunchOrder::STREAM);        // C256 14²: one wave of 36 k steps
  EXPECT_EQ(launch_order_for(784, 132, 9), LaunchOrder::STREAM);       // C64 56²: 6 tiles a CTA
  EXPECT_EQ(launch_order_for(3, 0, 1), LaunchOrder::PROGRAMMATIC);     // no grid: taken as one CTA
}

// Persistent grids hold only as many clusters as the device keeps resident at once (an H100: 30 of 4
// CTAs of 200+ KB, not 132 / 4), so no cluster waits for a second wave.
TEST(CudaLaunchOrder, PersistentGridsFitTheClustersHeldAtOnce) {
  EXPECT_EQ(persistent_grid(784, 1, 132, 0), 132);
  EXPECT_EQ(persistent_grid(10, 1, 132, 0), 10);
  EXPECT_EQ(persistent_grid(10, 2, 132, 66), 10);
  EXPECT_EQ(persistent_grid(784, 2, 132, 66), 132);
  EXPECT_EQ(persistent_grid(784, 4, 132, 30), 120);  // was 132: 3 clusters in a second wave
  EXPECT_EQ(persistent_grid(784, 8, 132, 15), 120);
  EXPECT_EQ(persistent_grid(104, 4, 132, 30), 104);  // fewer units than clusters held
  EXPECT_EQ(persistent_grid(784, 4, 132, 0), 132);   // the driver could not say: SMs / cluster
}

TEST(CudaLaunchOrder, DependentWgmmaConvsBackToBackMatchRef) {
  DG_REQUIRE_CUDA(h);
  HandleImpl& hi = impl_of(*h);
  if (hi.info.sm_version != 90) GTEST_SKIP() << "the wgmma conv cores (and programmatic launches) are sm_90";
  void* stream = nullptr;
  ASSERT_TRUE(create_stream(hi, &stream).ok());
  ASSERT_TRUE(h->set_stream(stream).ok());
  Chain ch;
  ch.g.select_engines({"cuda_conv_implicit_gemm"});
  for (const Status& s : {ch.g.validate(), ch.g.build_operation_graph(*h), ch.g.create_execution_plans({dg::HeurMode::A}),
                          ch.g.check_support(*h), ch.g.build_plans(*h)})
    ASSERT_TRUE(s.ok()) << s.to_string();
  ASSERT_NE(ch.g.explain().find("core=3"), std::string::npos) << ch.g.explain();  // a wgmma core

  const size_t xs = static_cast<size_t>(kPixels * kC), ws_count = static_cast<size_t>(kC * kC * 9);
  const std::vector<std::vector<uint16_t>> x{random_bf16(xs, 1.0f, 1), random_bf16(xs, 1.0f, 2)};
  const auto w1 = random_bf16(ws_count, 0.06f, 3), w2 = random_bf16(ws_count, 0.06f, 4);
  const std::vector<std::vector<double>> want{reference(x[0], w1, w2), reference(x[1], w1, w2)};
  std::vector<memory::Buffer> xb, yb;
  for (const auto& v : x) {
    xb.emplace_back(hi, v.size() * 2);
    ASSERT_TRUE(memory::copy_to_device(hi, xb.back().get(), v.data(), v.size() * 2).ok());
  }
  memory::Buffer w1b(hi, ws_count * 2), w2b(hi, ws_count * 2);
  ASSERT_TRUE(memory::copy_to_device(hi, w1b.get(), w1.data(), ws_count * 2).ok());
  ASSERT_TRUE(memory::copy_to_device(hi, w2b.get(), w2.data(), ws_count * 2).ok());
  const std::vector<uint16_t> nan(xs, 0x7fc0);
  constexpr int kCalls = 12;
  for (int i = 0; i < kCalls; ++i) {
    yb.emplace_back(hi, xs * 2);
    ASSERT_TRUE(memory::copy_to_device(hi, yb.back().get(), nan.data(), xs * 2).ok());
  }
  int64_t ws = 0;
  ASSERT_TRUE(ch.g.get_workspace_size(ws).ok());
  memory::Buffer workspace(hi, static_cast<size_t>(std::max<int64_t>(ws, 1)));
  ASSERT_TRUE(memory::synchronize(hi).ok());
  // Back to back, no host synchronization: call i reads X[i % 2] and writes Y[i].
  for (int i = 0; i < kCalls; ++i) {
    const Status s = ch.g.execute(*h, {{ch.x, xb[i % 2].get()}, {ch.w1, w1b.get()}, {ch.w2, w2b.get()}, {ch.y, yb[i].get()}},
                                  workspace.get());
    ASSERT_TRUE(s.ok()) << s.to_string();
  }
  ASSERT_TRUE(memory::synchronize(hi).ok());
  for (int i = 0; i < kCalls; ++i) expect_matches(hi, yb[i], want[i % 2], "call " + std::to_string(i));

  // The same as a captured CUDA graph (programmatic edges between the kernel nodes), replayed.
  const DriverApi& d = *driver();
  CUgraph graph = nullptr;
  ASSERT_TRUE(check(d.cuGraphCreate(&graph, 0), "cuGraphCreate").ok());
  ASSERT_TRUE(memory::copy_to_device(hi, yb[0].get(), nan.data(), xs * 2).ok());
  const dg::VariantPack pack{{ch.x, xb[1].get()}, {ch.w1, w1b.get()}, {ch.w2, w2b.get()}, {ch.y, yb[0].get()}};
  const Status s = ch.g.populate_cuda_graph(*h, pack, workspace.get(), graph);
  ASSERT_TRUE(s.ok()) << s.to_string();
  CUgraphExec exec = nullptr;
  ASSERT_TRUE(check(d.cuGraphInstantiateWithFlags(&exec, graph, 0), "cuGraphInstantiate").ok());
  for (int i = 0; i < 3; ++i) ASSERT_TRUE(check(d.cuGraphLaunch(exec, stream_of(hi)), "cuGraphLaunch").ok());
  ASSERT_TRUE(memory::synchronize(hi).ok());
  expect_matches(hi, yb[0], want[1], "graph replay");
  d.cuGraphExecDestroy(exec);
  d.cuGraphDestroy(graph);
  (void)h->set_stream(nullptr);
  destroy_stream(hi, stream);
}

}  // namespace
}  // namespace dnngraph::cuda
