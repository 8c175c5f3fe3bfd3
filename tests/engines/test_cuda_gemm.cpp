// cuda_gemm_wgmma_tma and cuda_gemm_mma_sync against ref. The NVRTC compile tests need no GPU
// (they run in CI wherever NVRTC loads); the GPU tests skip without one. GPU shapes are random,
// fit no tile, and mix operand majors, batch broadcast and fused epilogues.
#include <gtest/gtest.h>

#include <algorithm>
#include <functional>
#include <random>

#include "engines/cuda/gemm/gemm_wgmma_tma.hpp"
#include "engines/cuda/gemm/matmul_plan.hpp"
#include "engines/cuda/common/nvrtc_compile.hpp"
#include "engines/cuda/common/register_epilogue.hpp"
#include "gemm_test_util.hpp"
#include "runtime/handle_impl.hpp"

namespace {

namespace dg = dnngraph;
namespace gm = dnngraph::cuda::gemm;
using gemm_test::Dims;
using gemm_test::Expect;
using gemm_test::HostTensor;
using gemm_test::for_each_matmul;
using gemm_test::operand;
using M = dg::PointwiseMode;

constexpr const char* kWgmma = "cuda_gemm_wgmma_tma";
constexpr const char* kMmaSync = "cuda_gemm_mma_sync";

// ---- NVRTC compile tests (no GPU)

// matmul -> * alpha -> + bias -> GELU (or `activation`) -> + residual, stored as `out`, with AMAX of the result.
dg::TensorPtr fused_chain(dg::Graph& g, dg::TensorPtr y, dg::TensorPtr bias, dg::TensorPtr residual, double alpha_value,
                          M activation = M::GELU_FWD) {
  auto alpha = g.tensor(dg::TensorAttr().set_name("alpha").set_dim({1, 1, 1}).set_stride({1, 1, 1})
                            .set_data_type(dg::DataType::FLOAT));
  alpha->set_is_pass_by_value(true).set_value(alpha_value);
  y = g.scale(y, alpha);
  y = g.bias(y, bias);
  y = g.pointwise(y, dg::PointwiseAttr().set_mode(activation));
  if (residual) y = g.add(y, residual);
  return y;
}

struct CompileCase {
  dg::DataType in = dg::DataType::BFLOAT16;  // FLOAT: the graph allows TF32
  bool a_mn_major = false, b_k_major = false;
  dg::DataType out = dg::DataType::BFLOAT16;
  int64_t k = 72;  // 70: fp32 rows of 280 bytes, loaded element by element
};

void compile_case(const CompileCase& cc, const std::vector<gm::MatmulConfig>& configs, const std::string& arch) {
  dg::Graph g;
  g.set_io_data_type(cc.in).set_intermediate_data_type(dg::DataType::FLOAT).set_compute_data_type(dg::DataType::FLOAT);
  g.set_allow_tf32(cc.in == dg::DataType::FLOAT);
  const int64_t m = 96, n = 40, k = cc.k;
  auto a = g.tensor(dg::TensorAttr().set_name("A").set_dim({2, m, k})
                        .set_stride(cc.a_mn_major ? Dims{m * k, 1, m} : Dims{m * k, k, 1}));
  auto b = g.tensor(dg::TensorAttr().set_name("B").set_dim({1, k, n})
                        .set_stride(cc.b_k_major ? Dims{k * n, 1, k} : Dims{k * n, n, 1}));
  auto bias = g.tensor(dg::TensorAttr().set_name("bias").set_dim({1, 1, n}).set_stride({n, n, 1}));
  auto res = g.tensor(dg::TensorAttr().set_name("R").set_dim({2, m, n}).set_stride({m * n, n, 1}));
  auto y = fused_chain(g, g.matmul(a, b, dg::MatmulAttr()), bias, res, 0.5);
  y->set_output(true).set_data_type(cc.out);
  auto amax = g.reduction(y, dg::ReductionAttr().set_mode(dg::ReductionMode::AMAX));
  amax->set_dim({1, 1, 1}).set_output(true).set_data_type(dg::DataType::FLOAT);
  for_each_matmul(g, [&](const dg::Partition& p, gm::MatmulPieces& pieces, const gemm_test::Lowered& low) {
    std::string why;
    EXPECT_EQ(pieces.mp.a_k_major, !cc.a_mn_major);
    EXPECT_EQ(pieces.mp.b_k_major, cc.b_k_major);
    ASSERT_TRUE(dg::cuda::plan_epilogue(p, pieces.mp.axes, true, pieces.epi, why)) << why;
    for (const auto& c : configs) {
      const std::string src = gm::matmul_source(pieces.mp, c, pieces.epi, *low.ir);
      std::vector<uint8_t> cubin;
      ASSERT_TRUE(gemm_test::compiles_unserialized(src, "test_gemm.cu", arch.c_str(), &cubin)) << c.describe();
      EXPECT_GT(cubin.size(), 1000u);
    }
  });
}

gm::MatmulConfig mma(int bm, int bn, int stages, bool tf32 = false) {
  gm::MatmulConfig c;
  c.bm = bm, c.bn = bn, c.stages = stages, c.tf32 = tf32, c.bk = tf32 ? 16 : 32;
  return c;
}

gm::MatmulConfig wgmma(int bn, int stages, bool pingpong = false, bool tf32 = false, int splits = 1,
                       bool transpose = false, int cluster = 1) {
  gm::MatmulConfig c;
  c.cluster = cluster;
  c.transpose = transpose;
  c.core = gm::Core::WGMMA;
  c.bm = 128, c.bn = bn, c.bk = tf32 ? 32 : 64, c.stages = stages, c.threads = 384, c.pingpong = pingpong;
  c.tf32 = tf32;
  c.splits = splits;
  return c;
}

class CudaGemmCompile : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!dg::cuda::nvrtc()) GTEST_SKIP() << "NVRTC not available: " << dg::cuda::nvrtc_error();
  }
};

TEST_F(CudaGemmCompile, MmaSyncKernelsCompileForAmpereAndHopper) {
  compile_case({dg::DataType::BFLOAT16, false, false, dg::DataType::FP8_E4M3}, {mma(128, 128, 4)}, "sm_80");
  compile_case({dg::DataType::HALF, true, true, dg::DataType::HALF}, {mma(64, 128, 3)}, "sm_90a");
}

// FLOAT x FLOAT as TF32 (m16n8k8): every operand major, 16-byte and element-by-element loads.
TEST_F(CudaGemmCompile, Tf32MmaSyncKernelsCompileForEveryOperandMajor) {
  const auto F = dg::DataType::FLOAT;
  compile_case({F, false, true, dg::DataType::BFLOAT16}, {mma(128, 128, 4, true), mma(64, 64, 3, true)}, "sm_80");
  compile_case({F, true, false, F}, {mma(128, 64, 4, true)}, "sm_90a");
  compile_case({F, false, false, dg::DataType::FP8_E4M3, 70}, {mma(64, 128, 4, true)}, "sm_90a");
  compile_case({F, true, true, F, 70}, {mma(128, 128, 3, true)}, "sm_80");
}

// Without Graph::set_allow_tf32(true), FLOAT inputs stay off the tensor cores, with the rule named.
TEST(CudaGemmTf32, FloatInputsNeedTheGraphToAllowTf32) {
  for (bool allow : {false, true}) {
    dg::Graph g;
    g.set_io_data_type(dg::DataType::FLOAT).set_compute_data_type(dg::DataType::FLOAT).set_allow_tf32(allow);
    auto a = g.tensor(dg::TensorAttr().set_name("A").set_dim({24, 40}).set_stride({40, 1}));
    auto b = g.tensor(dg::TensorAttr().set_name("B").set_dim({40, 16}).set_stride({16, 1}));
    g.matmul(a, b, dg::MatmulAttr().set_name("mm"))->set_output(true);
    gemm_test::Lowered low;
    ASSERT_TRUE(gemm_test::lower_graph(g, low));
    for (const auto& p : low.parts) {
      if (p.anchor < 0) continue;
      gm::MatmulProblem mp;
      std::string why;
      EXPECT_EQ(gm::describe_matmul_graph(p, mp, why), allow) << why;
      if (!allow) {
        EXPECT_NE(why.find("node 'mm', tensor 'A': FLOAT inputs run on tensor cores as TF32 only when the graph allows "
                           "it (Graph::set_allow_tf32(true))"),
                  std::string::npos)
            << why;
      }
    }
  }
}

TEST_F(CudaGemmCompile, WgmmaKernelsCompileForEveryOperandMajor) {
  compile_case({dg::DataType::BFLOAT16, false, false, dg::DataType::BFLOAT16}, {wgmma(256, 4)}, "sm_90a");
  compile_case({dg::DataType::HALF, true, true, dg::DataType::FP8_E5M2}, {wgmma(128, 6, true)}, "sm_90a");
  // TF32: K-major A and B only.
  compile_case({dg::DataType::FLOAT, false, true, dg::DataType::FLOAT},
               {wgmma(256, 4, false, true), wgmma(128, 6, true, true)}, "sm_90a");
}

// Split-K on the wgmma core (the fix-up of splitk_fixup.cuh before the fused epilogue with AMAX):
// 16-bit inputs of either major with bf16 / fp8 outputs, and TF32 K-major.
// The generated source of a plain A[64, 96] x B[96, 32] matmul (io type t; FLOAT as TF32) under
// each config, for the tests that check what a knob instantiates.
std::vector<std::string> plain_matmul_sources(dg::DataType t, const std::vector<gm::MatmulConfig>& configs) {
  dg::Graph g;
  g.set_io_data_type(t).set_compute_data_type(dg::DataType::FLOAT).set_allow_tf32(t == dg::DataType::FLOAT);
  auto a = g.tensor(dg::TensorAttr().set_name("A").set_dim({64, 96}).set_stride({96, 1}));
  auto b = g.tensor(dg::TensorAttr().set_name("B").set_dim({96, 32}).set_stride({32, 1}));
  g.matmul(a, b, dg::MatmulAttr())->set_output(true);
  std::vector<std::string> sources;
  for_each_matmul(g, [&](const dg::Partition& p, gm::MatmulPieces& pieces, const gemm_test::Lowered& low) {
    std::string why;
    ASSERT_TRUE(dg::cuda::plan_epilogue(p, pieces.mp.axes, true, pieces.epi, why)) << why;
    for (const auto& c : configs) sources.push_back(gm::matmul_source(pieces.mp, c, pieces.epi, *low.ir));
  });
  EXPECT_EQ(sources.size(), configs.size());
  return sources;
}

TEST_F(CudaGemmCompile, WgmmaSplitKKernelsCompile) {
  compile_case({dg::DataType::BFLOAT16, false, false, dg::DataType::BFLOAT16}, {wgmma(128, 5, false, false, 3)}, "sm_90a");
  compile_case({dg::DataType::HALF, true, true, dg::DataType::FP8_E4M3}, {wgmma(128, 4, false, false, 8)}, "sm_90a");
  compile_case({dg::DataType::FLOAT, false, true, dg::DataType::FLOAT}, {wgmma(128, 5, false, true, 2)}, "sm_90a");
  for (const auto& src : plain_matmul_sources(dg::DataType::BFLOAT16, {wgmma(128, 5, false, false, 4)}))
    EXPECT_TRUE(gemm_test::instantiates(src, "gemm_wgmma",
                                        {{"kDataType", "dg::DT_BFLOAT16"}, {"kTileN", "128"}, {"kStages", "5"},
                                         {"kAKMajor", "true"}, {"kBKMajor", "false"}, {"kPingpong", "false"},
                                         {"kSplitK", "true"}, {"kCluster", "1"}}));
}

// Clusters of 2 along M with B multicast (remote mbarrier arrives, cluster barriers): K-major B
// (half-height boxes) and MN-major B (half the boxes), bf16 / fp8 outputs with the fused chain and
// AMAX, 256- and 128-wide tiles.
TEST_F(CudaGemmCompile, WgmmaClusterKernelsCompile) {
  const gm::MatmulConfig c256 = wgmma(256, 4, false, false, 1, false, 2), c128 = wgmma(128, 5, false, false, 1, false, 2);
  compile_case({dg::DataType::BFLOAT16, false, false, dg::DataType::BFLOAT16}, {c256, c128}, "sm_90a");
  compile_case({dg::DataType::HALF, true, true, dg::DataType::FP8_E4M3}, {c256, c128}, "sm_90a");
  const auto sources = plain_matmul_sources(dg::DataType::BFLOAT16, {c256, wgmma(256, 4)});
  ASSERT_EQ(sources.size(), 2u);
  EXPECT_NE(sources[0].find("__cluster_dims__(2, 1, 1)"), std::string::npos) << sources[0];
  EXPECT_TRUE(gemm_test::instantiates(sources[0], "gemm_wgmma",
                                      {{"kDataType", "dg::DT_BFLOAT16"}, {"kTileN", "256"}, {"kStages", "4"},
                                       {"kAKMajor", "true"}, {"kBKMajor", "false"}, {"kPingpong", "false"},
                                       {"kSplitK", "false"}, {"kCluster", "2"}}));
  EXPECT_EQ(sources[1].find("__cluster_dims__"), std::string::npos);
}

// A batched matmul x 0.5 + bias -> `activation` with AMAX, stored as `out`, and its register
// epilogue's kernels on cooperative 128x256, ping-pong 128x128 and clustered 128x256 tiles:
// `check_epilogue` sees the laid-out epilogue first; each source instantiates kEpilogue = `mode`,
// passes `check_source` and compiles for sm_90a.
void register_epilogue_kernels_compile(M activation, dg::DataType out, const std::string& mode,
                                       const std::function<void(const dg::cuda::EpiloguePlan&)>& check_epilogue,
                                       const std::function<void(const std::string&)>& check_source) {
  auto reg = [](gm::MatmulConfig c) {
    c.register_epilogue = true;
    return c;
  };
  const std::vector<gm::MatmulConfig> configs{reg(wgmma(256, 4)), reg(wgmma(128, 6, true)),
                                              reg(wgmma(256, 4, false, false, 1, false, 2))};
  dg::Graph g;
  g.set_io_data_type(dg::DataType::BFLOAT16).set_intermediate_data_type(dg::DataType::FLOAT)
      .set_compute_data_type(dg::DataType::FLOAT);
  const int64_t m = 96, n = 40, k = 72;
  auto a = g.tensor(dg::TensorAttr().set_name("A").set_dim({2, m, k}).set_stride({m * k, k, 1}));
  auto b = g.tensor(dg::TensorAttr().set_name("B").set_dim({1, k, n}).set_stride({k * n, n, 1}));
  auto bias = g.tensor(dg::TensorAttr().set_name("bias").set_dim({1, 1, n}).set_stride({n, n, 1}));
  auto y = fused_chain(g, g.matmul(a, b, dg::MatmulAttr()), bias, nullptr, 0.5, activation);
  y->set_output(true).set_data_type(out);
  auto amax = g.reduction(y, dg::ReductionAttr().set_mode(dg::ReductionMode::AMAX));
  amax->set_dim({1, 1, 1}).set_output(true).set_data_type(dg::DataType::FLOAT);
  int compiled = 0;
  for_each_matmul(g, [&](const dg::Partition& p, gm::MatmulPieces& pieces, const gemm_test::Lowered& low) {
    std::string why;
    ASSERT_TRUE(dg::cuda::plan_epilogue(p, pieces.mp.axes, true, pieces.epi, why)) << why;
    ASSERT_NO_FATAL_FAILURE(check_epilogue(pieces.epi));
    for (const auto& c : configs) {
      const std::string src = gm::matmul_source(pieces.mp, c, pieces.epi, *low.ir);
      check_source(src);
      EXPECT_TRUE(gemm_test::instantiates(src, "gemm_wgmma", {{"kEpilogue", mode}})) << c.describe();
      ASSERT_TRUE(gemm_test::compiles_unserialized(src, "test_gemm.cu", "sm_90a")) << c.describe();
      ++compiled;
    }
  });
  EXPECT_EQ(compiled, 3);
}

// The register epilogue (epilogue=1): x alpha + bias + ReLU with AMAX applied to the accumulators, a 3D TMA
// store per 64-column box (batch as the third coordinate), on cooperative 256- and 128-wide tiles,
// ping-pong and clusters; the generated functor has apply_regs and the kernel an output map.
TEST_F(CudaGemmCompile, WgmmaRegisterEpilogueKernelsCompile) {
  register_epilogue_kernels_compile(
      M::RELU_FWD, dg::DataType::HALF, "1",
      [](const dg::cuda::EpiloguePlan& epi) {
        std::string why;
        ASSERT_TRUE(dg::cuda::register_epilogue(epi, why)) << why;
      },
      [](const std::string& src) {
        EXPECT_NE(src.find("apply_regs"), std::string::npos);
        EXPECT_NE(src.find("dg::TmaDesc my"), std::string::npos);
      });
}

// The boxed register epilogue (a chain too long to unroll: x alpha + bias + GELU with AMAX): the
// kernel takes kEpilogue 4 on cooperative, ping-pong and cluster tiles and compiles.
TEST_F(CudaGemmCompile, WgmmaBoxedRegisterEpilogueKernelsCompile) {
  register_epilogue_kernels_compile(
      M::GELU_FWD, dg::DataType::BFLOAT16, "4",
      [](const dg::cuda::EpiloguePlan& epi) {
        std::string why;
        EXPECT_TRUE(dg::cuda::register_epilogue(epi, why)) << why;
        EXPECT_EQ(dg::cuda::register_epilogue_mode(epi), dg::cuda::kEpiTmaStoreBoxed);
      },
      [](const std::string&) {});
}

// TF32 with MN-major operands: the transpose pass (gemm_transpose.cuh) in the same module, the
// wgmma core instantiated K-major for the copies.
TEST_F(CudaGemmCompile, Tf32WgmmaTransposeKernelsCompile) {
  const auto F = dg::DataType::FLOAT;
  compile_case({F, false, false, F}, {wgmma(256, 4, false, true, 1, true), wgmma(128, 5, false, true, 3, true)},
               "sm_90a");
  compile_case({F, true, true, dg::DataType::BFLOAT16, 70}, {wgmma(128, 6, true, true, 1, true)}, "sm_90a");
  for (const auto& src : plain_matmul_sources(F, {wgmma(256, 4, false, true, 1, true)})) {
    EXPECT_TRUE(gemm_test::instantiates(src, "gemm_wgmma",
                                        {{"kDataType", "dg::DT_FLOAT"}, {"kTileN", "256"}, {"kStages", "4"},
                                         {"kAKMajor", "true"}, {"kBKMajor", "true"}, {"kPingpong", "false"},
                                         {"kSplitK", "false"}, {"kCluster", "1"}}));
    EXPECT_NE(src.find(gm::kTransposeKernel), std::string::npos) << src;
  }
}

TEST_F(CudaGemmCompile, EpilogueLayoutCollapsesOnlyNestedStrides) {
  dg::Graph g;
  g.set_io_data_type(dg::DataType::BFLOAT16).set_compute_data_type(dg::DataType::FLOAT);
  auto a = g.tensor(dg::TensorAttr().set_name("A").set_dim({16, 8}).set_stride({8, 1}));
  auto b = g.tensor(dg::TensorAttr().set_name("B").set_dim({8, 16}).set_stride({16, 1}));
  auto y = g.pointwise(g.matmul(a, b, dg::MatmulAttr()), dg::PointwiseAttr().set_mode(M::RELU_FWD));
  y->set_output(true).set_stride({1, 16});  // column-major output
  for_each_matmul(g, [&](const dg::Partition& p, gm::MatmulPieces& pieces, const gemm_test::Lowered&) {
    std::string why;
    // Both output axes folded into one row index: column-major strides do not nest that way.
    dg::cuda::EpilogueAxes folded{{}, {0, 1}, {}};
    EXPECT_FALSE(dg::cuda::plan_epilogue(p, folded, false, pieces.epi, why));
    EXPECT_NE(why.find("do not walk the GEMM rows and columns"), std::string::npos) << why;
    ASSERT_TRUE(dg::cuda::plan_epilogue(p, pieces.mp.axes, false, pieces.epi, why)) << why;
    ASSERT_EQ(pieces.epi.L.rank(), 2);
    EXPECT_EQ(pieces.epi.L.vec, 4);
    const auto& out = pieces.epi.L.operands.back();
    EXPECT_EQ(out.strides, (std::vector<int64_t>{1, 16}));
    EXPECT_EQ(out.inner, dg::cuda::codegen::Access::STRIDED);
  });
}

// ---- GPU: every engine against ref

// TF32 tolerance: each input is rounded to 10 mantissa bits (relative error <= 2^-11), so a product
// of two uniform [-1, 1] inputs is off by ~1.3e-4 (one sigma) and a k-term sum by ~1.3e-4 sqrt(k):
// 2e-3 relative above sqrt(k), absolute 2e-3 sqrt(k) below it, leaves 15 sigma (DESIGN.md's ~1e-3
// relative is for outputs of the sqrt(k) scale the sums have).
constexpr double kTf32Tol = 2e-3;
// wgmma reads fp32 from shared memory as TF32 by dropping the low 13 mantissa bits (no rounding
// step there): each input shrinks by 2^-11 on average, so sums carry a ~1e-3 relative bias on top.
constexpr double kTf32TruncTol = 3e-3;

// tf32: FLOAT inputs; k_major: A [m, k] and B stored [n, k] (what tf32 wgmma reads), else random.
void random_plain_cases(const std::string& engine, uint32_t seed, int trials, bool pad, bool tf32 = false,
                        bool k_major = false) {
  std::mt19937 rng(seed);
  for (int trial = 0; trial < trials; ++trial) {
    const int64_t m = 1 + rng() % 300, n = 1 + rng() % 300, k = 1 + rng() % 200;
    const bool at = k_major ? false : rng() % 2, bt = k_major ? true : rng() % 2;
    const dg::DataType t = tf32 ? dg::DataType::FLOAT : rng() % 2 ? dg::DataType::BFLOAT16 : dg::DataType::HALF;
    Dims batch = rng() % 2 ? Dims{} : Dims{1 + int64_t(rng() % 3)};
    auto a = operand(batch, m, k, at, t, rng, pad);
    auto b = operand(batch, k, n, bt, t, rng, pad);
    Dims cd = batch;
    cd.push_back(m);
    cd.push_back(n);
    SCOPED_TRACE("trial " + std::to_string(trial) + ": m=" + std::to_string(m) + " n=" + std::to_string(n) +
                 " k=" + std::to_string(k) + (at ? " A^T" : "") + (bt ? " B^T" : "") + " " + std::string(dg::to_string(t)));
    gemm_test::run_vs_ref(engine, {a, b}, {gemm_test::packed(cd, dg::DataType::FLOAT)},
                          [&](dg::Graph& g, const std::vector<dg::TensorPtr>& in) {
                            g.set_compute_data_type(dg::DataType::FLOAT).set_allow_tf32(tf32);
                            return std::vector<dg::TensorPtr>{g.matmul(in[0], in[1], dg::MatmulAttr())};
                          },
                          {Expect{tf32 ? (k_major || engine == kWgmma ? kTf32TruncTol : kTf32Tol) : 1e-5,
                                  std::sqrt(double(k))}});
  }
}

TEST(CudaGemm, WgmmaRandomShapesAndMajorsMatchRef) {
  DG_REQUIRE_CUDA(gpu);
  random_plain_cases(kWgmma, 31, 4, true);
}
TEST(CudaGemm, MmaSyncRandomShapesAndMajorsMatchRef) {
  DG_REQUIRE_CUDA(gpu);
  random_plain_cases(kMmaSync, 32, 4, true);
}
TEST(CudaGemm, MmaSyncUnalignedStridesMatchRef) {
  DG_REQUIRE_CUDA(gpu);
  random_plain_cases(kMmaSync, 33, 2, false);
}
TEST(CudaGemm, Tf32RandomShapesMajorsAndBatchesMatchRef) {
  DG_REQUIRE_CUDA(gpu);
  random_plain_cases(kMmaSync, 34, 6, true, true);
  random_plain_cases(kMmaSync, 35, 2, false, true);  // element-by-element loads
}

// Every knob setting of each engine on one shape that fits no tile (a 48 KB mma.sync config once
// failed to launch, unseen while only the first four were run here).
TEST(CudaGemm, EveryConfigurationMatchesRef) {
  DG_REQUIRE_CUDA(gpu);
  for (const char* engine : {kWgmma, kMmaSync}) {
    std::mt19937 rng(41);
    auto a = operand({2}, 200, 136, false, dg::DataType::BFLOAT16, rng);
    auto b = operand({2}, 136, 264, false, dg::DataType::BFLOAT16, rng);
    SCOPED_TRACE(engine);
    gemm_test::run_vs_ref(engine, {a, b}, {gemm_test::packed({2, 200, 264}, dg::DataType::FLOAT)},
                          [](dg::Graph& g, const std::vector<dg::TensorPtr>& in) {
                            return std::vector<dg::TensorPtr>{g.matmul(in[0], in[1], dg::MatmulAttr())};
                          },
                          {Expect{1e-5, 12}}, 1000);
  }
}

// Batch dims that broadcast: A [3, 1, m, k] x B [1, 2, k, n].
TEST(CudaGemm, BroadcastBatchMatchesRef) {
  DG_REQUIRE_CUDA(gpu);
  for (const char* engine : {kWgmma, kMmaSync}) {
    std::mt19937 rng(51);
    auto a = operand({3, 1}, 70, 48, false, dg::DataType::HALF, rng);
    auto b = operand({1, 2}, 48, 90, true, dg::DataType::HALF, rng);
    SCOPED_TRACE(engine);
    gemm_test::run_vs_ref(engine, {a, b}, {gemm_test::packed({3, 2, 70, 90}, dg::DataType::FLOAT)},
                          [](dg::Graph& g, const std::vector<dg::TensorPtr>& in) {
                            return std::vector<dg::TensorPtr>{g.matmul(in[0], in[1], dg::MatmulAttr())};
                          },
                          {Expect{1e-5, 7}});
  }
}

// x alpha + bias -> GELU (+ residual), AMAX of the result, outputs in bf16 / fp8 / fp32.
// deep_k > 0: k in deep_k .. deep_k + 999 (the split-K cases), every plan up to max_plans.
void fused_case(const std::string& engine, uint32_t seed, dg::DataType out_type, bool residual,
                dg::DataType in_type = dg::DataType::BFLOAT16, int64_t deep_k = 0, int max_plans = 1,
                int64_t min_mn = 0) {
  std::mt19937 rng(seed);
  const bool tf32 = in_type == dg::DataType::FLOAT;
  const int64_t bt = 2, m = min_mn + 1 + rng() % 200, n = min_mn + 1 + rng() % 200;
  const int64_t k = deep_k > 0 ? deep_k + rng() % 1000 : 1 + rng() % 150;
  std::vector<HostTensor> in{operand({bt}, m, k, false, in_type, rng),
                             operand({1}, k, n, rng() % 2, in_type, rng),
                             gemm_test::packed({1, 1, n}, dg::DataType::FLOAT)};
  gemm_test::fill_random(in[2], rng);
  if (residual) {
    in.push_back(gemm_test::packed({bt, m, n}, dg::DataType::BFLOAT16));
    gemm_test::fill_random(in[3], rng);
  }
  // fp32 outputs of a deep k (another summation order than ref's over thousands of terms): 5x.
  const double out_tol = out_type == dg::DataType::FP8_E4M3 ? 0.13
                         : out_type == dg::DataType::FLOAT ? (tf32 ? (engine == kWgmma ? kTf32TruncTol : kTf32Tol) : 2e-5) *
                                                                 (deep_k > 0 ? 5 : 1)
                                                           : 1.2e-2;
  SCOPED_TRACE(engine + " seed " + std::to_string(seed) + " m=" + std::to_string(m) + " n=" + std::to_string(n) +
               " k=" + std::to_string(k));
  gemm_test::run_vs_ref(engine, in,
                        {gemm_test::packed({bt, m, n}, out_type), gemm_test::packed({1, 1, 1}, dg::DataType::FLOAT)},
                        [&](dg::Graph& g, const std::vector<dg::TensorPtr>& t) {
                          g.set_intermediate_data_type(dg::DataType::FLOAT).set_compute_data_type(dg::DataType::FLOAT);
                          g.set_allow_tf32(tf32);
                          auto y = fused_chain(g, g.matmul(t[0], t[1], dg::MatmulAttr()), t[2],
                                               residual ? t[3] : nullptr, 0.75);
                          auto amax = g.reduction(y, dg::ReductionAttr().set_mode(dg::ReductionMode::AMAX));
                          return std::vector<dg::TensorPtr>{y, amax};
                        },
                        {Expect{out_tol, std::sqrt(double(k)) * (tf32 ? 1.0 : 0.1)},
                         Expect{out_tol < 1e-3 ? (deep_k > 0 ? 5e-5 : 1e-5) : out_tol, tf32 ? std::sqrt(double(k)) : 1.0}},
                        max_plans);
}

TEST(CudaGemm, FusedEpiloguesMatchRef) {
  DG_REQUIRE_CUDA(gpu);
  for (const char* engine : {kWgmma, kMmaSync}) {
    fused_case(engine, 61, dg::DataType::BFLOAT16, true);
    fused_case(engine, 62, dg::DataType::FP8_E4M3, false);
    fused_case(engine, 63, dg::DataType::FLOAT, true);
  }
}

// Split-K on the wgmma core: deep k (4100..5099, 65+ k steps of 64, never a whole number of them)
// on outputs of at most 12 tiles of 128 x 128, where the engine's first five plans are split_k 2,
// 3, 4, 6 and 8 (the estimate ranks them above whole tiles that leave 120 of 132 SMs idle); random
// majors, batches; then the fused chain with AMAX and bf16 / fp8 / fp32 outputs. fp32 sums of
// ~5000 terms in another order than ref's: 1e-4 of sqrt(k).
TEST(CudaGemm, WgmmaSplitKMatchesRef) {
  DG_REQUIRE_CUDA(gpu);
  std::mt19937 rng(91);
  for (int trial = 0; trial < 4; ++trial) {
    const int64_t m = 1 + rng() % 260, n = 8 + rng() % 250;
    int64_t k = 4100 + rng() % 1000;
    if (k % 64 == 0) k += 8;
    const bool tf32 = trial == 3;  // FLOAT as TF32: K-major operands only
    const bool at = tf32 ? false : rng() % 2, bt = tf32 ? true : rng() % 2;
    const dg::DataType t = tf32 ? dg::DataType::FLOAT : trial % 2 ? dg::DataType::HALF : dg::DataType::BFLOAT16;
    Dims batch = trial == 1 ? Dims{2} : Dims{};
    auto a = operand(batch, m, k, at, t, rng);
    auto b = operand(batch, k, n, bt, t, rng);
    Dims cd = batch;
    cd.push_back(m);
    cd.push_back(n);
    SCOPED_TRACE("trial " + std::to_string(trial) + ": m=" + std::to_string(m) + " n=" + std::to_string(n) +
                 " k=" + std::to_string(k) + (at ? " A^T" : "") + (bt ? " B^T" : ""));
    gemm_test::run_vs_ref(kWgmma, {a, b}, {gemm_test::packed(cd, dg::DataType::FLOAT)},
                          [&](dg::Graph& g, const std::vector<dg::TensorPtr>& in) {
                            g.set_compute_data_type(dg::DataType::FLOAT).set_allow_tf32(tf32);
                            return std::vector<dg::TensorPtr>{g.matmul(in[0], in[1], dg::MatmulAttr())};
                          },
                          {Expect{tf32 ? kTf32TruncTol : 1e-4, std::sqrt(double(k))}}, 5);
  }
  fused_case(kWgmma, 92, dg::DataType::BFLOAT16, true, dg::DataType::BFLOAT16, 4100, 5);
  fused_case(kWgmma, 93, dg::DataType::FP8_E4M3, false, dg::DataType::BFLOAT16, 4100, 5);
  fused_case(kWgmma, 94, dg::DataType::FLOAT, true, dg::DataType::HALF, 4100, 5);
}

// Clusters of 2 along M (B multicast): every plan of shapes >= 2048 that fit no tile, among them
// the two cluster=2 ones; odd m tile counts (a CTA without a partner tile in the last pairs) and
// odd n tile counts, both majors, a batch, then the fused chain with AMAX (bf16 / fp8 outputs).
TEST(CudaGemm, WgmmaClusterMatchesRef) {
  DG_REQUIRE_CUDA(gpu);
  std::mt19937 rng(95);
  struct Case {
    int64_t m, n, k;
    bool at, bt;
    Dims batch;
    dg::DataType t;
  };
  for (const Case& c : {Case{2100, 2200, 136, false, false, {}, dg::DataType::BFLOAT16},  // 17 x 9 tiles of 128 x 256 (17 x 18 of 128 x 128)
                       Case{2060, 2090, 72, true, true, {2}, dg::DataType::HALF},      // 17 x 9 (17 x 17), batched
                       Case{2304, 2312, 200, false, true, {}, dg::DataType::BFLOAT16}}) {  // 18 x 10 (18 x 19)
    auto a = operand(c.batch, c.m, c.k, c.at, c.t, rng);
    auto b = operand(c.batch, c.k, c.n, c.bt, c.t, rng);
    Dims cd = c.batch;
    cd.push_back(c.m);
    cd.push_back(c.n);
    SCOPED_TRACE("m=" + std::to_string(c.m) + " n=" + std::to_string(c.n) + " k=" + std::to_string(c.k) +
                 (c.at ? " A^T" : "") + (c.bt ? " B^T" : ""));
    gemm_test::run_vs_ref(kWgmma, {a, b}, {gemm_test::packed(cd, dg::DataType::FLOAT)},
                          [](dg::Graph& g, const std::vector<dg::TensorPtr>& in) {
                            g.set_compute_data_type(dg::DataType::FLOAT);
                            return std::vector<dg::TensorPtr>{g.matmul(in[0], in[1], dg::MatmulAttr())};
                          },
                          {Expect{1e-5, std::sqrt(double(c.k))}}, 1000);
  }
  fused_case(kWgmma, 96, dg::DataType::BFLOAT16, true, dg::DataType::BFLOAT16, 0, 1000, 2048);
  fused_case(kWgmma, 97, dg::DataType::FP8_E4M3, false, dg::DataType::BFLOAT16, 0, 1000, 2048);
}

// Every plan of the wgmma engine on (batch..., m, k) x (k, n) x 0.75 + bias -> `activation` with
// AMAX (B and the bias broadcast over the batch), 16-bit `out`, against ref with NaN-poisoned
// outputs; at least three of the plans run the register epilogue.
void register_epilogue_vs_ref(std::mt19937& rng, const Dims& batch, int64_t m, int64_t n, int64_t k, dg::DataType out,
                              bool b_k_major, M activation) {
  const Dims ones(batch.size(), 1);
  Dims bias_dims(batch.size() + 1, 1), amax_dims(batch.size() + 2, 1), cd = batch;
  bias_dims.push_back(n);
  cd.push_back(m);
  cd.push_back(n);
  std::vector<HostTensor> in{operand(batch, m, k, false, dg::DataType::BFLOAT16, rng),
                             operand(ones, k, n, b_k_major, dg::DataType::BFLOAT16, rng),
                             gemm_test::packed(bias_dims, dg::DataType::FLOAT)};
  gemm_test::fill_random(in[2], rng);
  SCOPED_TRACE("m=" + std::to_string(m) + " n=" + std::to_string(n) + " k=" + std::to_string(k));
  std::vector<std::string> names;
  gemm_test::run_vs_ref(kWgmma, in, {gemm_test::packed(cd, out), gemm_test::packed(amax_dims, dg::DataType::FLOAT)},
                        [&](dg::Graph& g, const std::vector<dg::TensorPtr>& t) {
                          g.set_intermediate_data_type(dg::DataType::FLOAT).set_compute_data_type(dg::DataType::FLOAT);
                          auto y = fused_chain(g, g.matmul(t[0], t[1], dg::MatmulAttr()), t[2], nullptr, 0.75,
                                               activation);
                          auto amax = g.reduction(y, dg::ReductionAttr().set_mode(dg::ReductionMode::AMAX));
                          return std::vector<dg::TensorPtr>{y, amax};
                        },
                        {Expect{1.2e-2, std::sqrt(double(k)) * 0.1}, Expect{1e-5, 1.0}}, 1000, &names);
  const auto registers = std::count_if(names.begin(), names.end(), [](const std::string& nm) {
    return nm.find("epilogue=1") != std::string::npos;
  });
  EXPECT_GE(registers, 3) << "the epilogue=1 plans did not run";
}

// The register epilogue (epilogue=1) on every plan of the engine: x alpha + bias -> ReLU with
// AMAX, 16-bit outputs; m that fits no tile (rows past M must stay out of AMAX and out of memory),
// n a multiple of 8 that fits no 64-column box, batches stored through the map's third coordinate,
// and (>= 2048) clusters of 2. NaN-poisoned outputs, every epilogue=1 plan checked to have run.
TEST(CudaGemm, RegisterEpilogueMatchesRef) {
  DG_REQUIRE_CUDA(gpu);
  std::mt19937 rng(98);
  const int64_t m = 1 + rng() % 300, n = 8 * (1 + rng() % 40), k = 1 + rng() % 300;
  register_epilogue_vs_ref(rng, {2}, m, n, k, dg::DataType::BFLOAT16, false, M::RELU_FWD);
  register_epilogue_vs_ref(rng, {3, 2}, 77, 136, 520, dg::DataType::HALF, true, M::RELU_FWD);
  register_epilogue_vs_ref(rng, {}, 2100, 2200, 136, dg::DataType::BFLOAT16, false, M::RELU_FWD);
}

// The boxed register epilogue on every epilogue=1 plan: x alpha + bias + GELU with AMAX, 16-bit outputs, an m that fits no
// tile, batches, and (2100 x 2200) clusters; NaN-poisoned outputs against ref.
TEST(CudaGemm, BoxedRegisterEpilogueMatchesRef) {
  DG_REQUIRE_CUDA(gpu);
  std::mt19937 rng(99);
  register_epilogue_vs_ref(rng, {2}, 77, 136, 520, dg::DataType::BFLOAT16, false, M::GELU_FWD);
  register_epilogue_vs_ref(rng, {}, 2100, 2200, 136, dg::DataType::HALF, false, M::GELU_FWD);
}

// epilogue=1 asked for by name where the epilogue does not allow it (an fp32 output): the build is
// refused with the node and the rule, before any kernel is compiled.
TEST(CudaGemm, RegisterEpilogueByNameIsRefusedWithTheRule) {
  DG_REQUIRE_CUDA(gpu);
  std::string why;
  auto handle = dnngraph::cuda::testing::cuda_handle(why);
  ASSERT_TRUE(handle) << why;
  if (impl_of(*handle).info.sm_version != 90) GTEST_SKIP() << "the wgmma engine needs sm_90a";
  dg::Graph g;
  g.set_io_data_type(dg::DataType::BFLOAT16).set_compute_data_type(dg::DataType::FLOAT);
  auto a = g.tensor(dg::TensorAttr().set_name("A").set_dim({128, 64}).set_stride({64, 1}));
  auto b = g.tensor(dg::TensorAttr().set_name("B").set_dim({64, 64}).set_stride({64, 1}));
  g.matmul(a, b, dg::MatmulAttr().set_name("mm"))->set_output(true).set_data_type(dg::DataType::FLOAT);
  for_each_matmul(g, [&](const dg::Partition& p, gm::MatmulPieces&, const gemm_test::Lowered&) {
    const dg::Engine& e = dg::cuda::gemm_wgmma_tma_engine();
    std::unique_ptr<dg::Plan> plan;
    dg::Target t;
    t.handle = &impl_of(*handle);
    const dg::Status st = e.build(p, t, {{"tile_n", 256}, {"epilogue", 1}}, plan);
    EXPECT_EQ(st.code(), dg::ErrorCode::GRAPH_EXECUTION_PLAN_CREATION_FAILED) << st.to_string();
    EXPECT_NE(st.message().find("node 'mm': epilogue=1 runs the epilogue in registers, but the output is FLOAT"),
              std::string::npos)
        << st.to_string();
  });
}

// An output pointer that is not 16-byte aligned: the epilogue=1 plan refuses it, naming the tensor
// and TMA's rule, where the staged plan of the same list runs (element by element).
TEST(CudaGemm, RegisterEpilogueRefusesAMisalignedOutput) {
  DG_REQUIRE_CUDA(gpu);
  std::string why;
  auto handle = dnngraph::cuda::testing::cuda_handle(why);
  ASSERT_TRUE(handle) << why;
  dg::HandleImpl& h = impl_of(*handle);
  dg::Graph g;
  g.set_io_data_type(dg::DataType::BFLOAT16).set_compute_data_type(dg::DataType::FLOAT);
  const int64_t m = 128, n = 64, k = 64;
  auto a = g.tensor(dg::TensorAttr().set_name("A").set_dim({m, k}).set_stride({k, 1}));
  auto b = g.tensor(dg::TensorAttr().set_name("B").set_dim({k, n}).set_stride({n, 1}));
  auto y = g.matmul(a, b, dg::MatmulAttr());
  y->set_name("Y").set_output(true);
  g.select_engines({kWgmma});
  for (const dg::Status& st : {g.validate(), g.build_operation_graph(*handle),
                               g.create_execution_plans({dg::HeurMode::A}), g.check_support(*handle),
                               g.build_plans(*handle, dg::BuildPlanPolicy::ALL)})
    ASSERT_TRUE(st.ok()) << st.to_string();
  dg::memory::Buffer da(h, m * k * 2), db(h, k * n * 2), dy(h, m * n * 2 + 64), ws(h, 1 << 20);
  for (auto* buf : {&da, &db, &dy}) ASSERT_TRUE(buf->status().ok());
  const dg::VariantPack pack{{a, da.get()}, {b, db.get()}, {y, static_cast<char*>(dy.get()) + 2}};
  int registers = 0, staged = 0;
  for (int64_t i = 0; i < g.get_execution_plan_count(); ++i) {
    std::string name;
    ASSERT_TRUE(g.get_plan_name_at_index(i, name).ok());
    const dg::Status st = g.execute_plan_at_index(*handle, pack, ws.get(), i, 1 << 20);
    if (name.find("epilogue=1") != std::string::npos) {
      ++registers;
      EXPECT_EQ(st.code(), dg::ErrorCode::INVALID_VARIANT_PACK) << name;
      EXPECT_NE(st.message().find("tensor 'Y': the pointer is not 16-byte aligned, which the TMA store of epilogue=1"),
                std::string::npos)
          << st.to_string();
    } else {
      ++staged;
      EXPECT_TRUE(st.ok()) << name << ": " << st.to_string();
    }
  }
  EXPECT_GT(registers, 0);
  EXPECT_GT(staged, 0);
  EXPECT_TRUE(dg::memory::synchronize(h).ok());
}

}  // namespace

namespace {

// Every tf32 configuration of `engine` on a batched FLOAT shape that fits no tile (A and B
// transposed as given).
void tf32_every_config(const char* engine, uint32_t seed, bool a_t, bool b_t, double tol) {
  std::mt19937 rng(seed);
  auto a = operand({2}, 200, 136, a_t, dg::DataType::FLOAT, rng);
  auto b = operand({2}, 136, 264, b_t, dg::DataType::FLOAT, rng);
  SCOPED_TRACE(engine);
  gemm_test::run_vs_ref(engine, {a, b}, {gemm_test::packed({2, 200, 264}, dg::DataType::FLOAT)},
                        [](dg::Graph& g, const std::vector<dg::TensorPtr>& in) {
                          g.set_allow_tf32(true);
                          return std::vector<dg::TensorPtr>{g.matmul(in[0], in[1], dg::MatmulAttr())};
                        },
                        {Expect{tol, 12}}, 1000);
}

// TF32 with the fused chain (alpha, bias, GELU, residual, AMAX), fp32 / bf16 outputs, and every
// tf32 configuration of the mma.sync engine.
TEST(CudaGemm, Tf32FusedEpiloguesAndEveryConfigurationMatchRef) {
  DG_REQUIRE_CUDA(gpu);
  fused_case(kMmaSync, 64, dg::DataType::FLOAT, true, dg::DataType::FLOAT);
  fused_case(kMmaSync, 65, dg::DataType::BFLOAT16, false, dg::DataType::FLOAT);
  tf32_every_config(kMmaSync, 66, true, false, kTf32Tol);
}

// tf32 wgmma: K-major FLOAT operands (random shapes, batches), every configuration; MN-major ones
// through the transpose pass (transpose=1: plain row-major A x B, A^T x B^T, random majors and
// batches, the fused chain with AMAX).
TEST(CudaGemm, Tf32WgmmaMatchesRefForEveryOperandMajor) {
  DG_REQUIRE_CUDA(gpu);
  random_plain_cases(kWgmma, 36, 4, true, true, true);
  tf32_every_config(kWgmma, 67, false, true, kTf32TruncTol);
  tf32_every_config(kWgmma, 68, false, false, kTf32TruncTol);
  tf32_every_config(kWgmma, 69, true, false, kTf32TruncTol);
  random_plain_cases(kWgmma, 70, 4, true, true, false);
  fused_case(kWgmma, 71, dg::DataType::FLOAT, true, dg::DataType::FLOAT);
  fused_case(kWgmma, 72, dg::DataType::BFLOAT16, false, dg::DataType::FLOAT);
}

}  // namespace
