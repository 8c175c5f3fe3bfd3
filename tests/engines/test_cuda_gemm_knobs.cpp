// The wgmma GEMM engine's search space on a (fake) sm_90 target, without a GPU: which knob sets
// (split_k, cluster, tf32 with transpose) are offered for which problems, how the estimate ranks
// them, and that rejected combinations name their rule.
#include <gtest/gtest.h>

#include "engines/cuda/common/register_epilogue.hpp"
#include "engines/cuda/gemm/gemm_wgmma_tma.hpp"
#include "gemm_test_util.hpp"

namespace {

namespace dg = dnngraph;
namespace gm = dnngraph::cuda::gemm;
using gemm_test::Dims;
using gemm_test::for_each_matmul;

// On a (fake) sm_90 target: cluster=2 is offered for 16-bit GEMMs with M and N >= 2048, with
// cooperative tiles only (tile_n 256 or 128, never with ping-pong or split-K: ping-pong pairs ran
// slower than without on an H100, 2026-12-05); not for smaller ones or FLOAT inputs; rejected knob
// sets name the rule (estimate 1e9).
TEST(CudaGemmCluster, KnobsForBigCooperativeGemms) {
  gemm_test::FakeHopper hopper;
  const dg::Target& t = hopper.target;
  const dg::Engine& e = dg::cuda::gemm_wgmma_tma_engine();
  struct Shape {
    int64_t m, n;
    dg::DataType dt;
    int clusters;
  };
  for (const Shape sh : {Shape{4096, 4096, dg::DataType::BFLOAT16, 2}, Shape{2100, 8192, dg::DataType::HALF, 2},
                         Shape{1024, 8192, dg::DataType::BFLOAT16, 0}, Shape{8192, 2000, dg::DataType::BFLOAT16, 0},
                         Shape{4096, 4096, dg::DataType::FLOAT, 0}}) {
    dg::Graph g;
    g.set_io_data_type(sh.dt).set_compute_data_type(dg::DataType::FLOAT).set_allow_tf32(true);
    const int64_t k = 1024;
    auto a = g.tensor(dg::TensorAttr().set_name("A").set_dim({sh.m, k}).set_stride({k, 1}));
    auto b = g.tensor(dg::TensorAttr().set_name("B").set_dim({k, sh.n}).set_stride({1, k}));
    g.matmul(a, b, dg::MatmulAttr())->set_output(true);
    SCOPED_TRACE(std::to_string(sh.m) + "x" + std::to_string(sh.n) + " " + std::string(dg::to_string(sh.dt)));
    for_each_matmul(g, [&](const dg::Partition& p, gm::MatmulPieces&, const gemm_test::Lowered&) {
      int clusters = 0;
      for (const auto& kn : e.knob_space(p, t)) {
        if (!kn.count("cluster") || kn.count("epilogue")) continue;  // (each again with epilogue=1)
        ++clusters;
        EXPECT_EQ(kn.at("cluster"), 2) << dg::knobs_to_string(kn);
        EXPECT_EQ(kn.count("pingpong") + kn.count("split_k"), 0u) << dg::knobs_to_string(kn);
        EXPECT_LT(e.estimate_seconds(p, t, kn), 1e8) << dg::knobs_to_string(kn);
      }
      EXPECT_EQ(clusters, sh.clusters);
      EXPECT_GE(e.estimate_seconds(p, t, {{"tile_n", 128}, {"pingpong", 1}, {"cluster", 2}}), 1e8);
      EXPECT_GE(e.estimate_seconds(p, t, {{"tile_n", 128}, {"split_k", 2}, {"cluster", 2}}), 1e8);
      EXPECT_GE(e.estimate_seconds(p, t, {{"tile_n", 256}, {"cluster", 4}}), 1e8);
      EXPECT_GE(e.estimate_seconds(p, t, {{"tile_n", 256}, {"tf32", 1}, {"cluster", 2}}), 1e8);
    });
  }
}

// On a (fake) sm_90 target with 132 multiprocessors, split_k 2..8 (tile_n 128, never with
// ping-pong) is offered where 128 x 128 tiles under-fill the machine and k is deep, and the
// estimate ranks a split first for 1024 x 1024 x 16384; a 4096 x 4096 output or a shallow k gets none.
TEST(CudaGemmSplitK, KnobsWhereTilesUnderFillAndKIsDeep) {
  gemm_test::FakeHopper hopper;
  const dg::Target& t = hopper.target;
  const dg::Engine& e = dg::cuda::gemm_wgmma_tma_engine();
  struct Shape {
    int64_t m, n, k;
    int splits;  // split knob sets expected
  };
  for (const Shape sh : {Shape{1024, 1024, 16384, 5}, Shape{1024, 2048, 8200, 5}, Shape{4096, 4096, 16384, 0},
                         Shape{1024, 1024, 640, 0}}) {
    dg::Graph g;
    g.set_io_data_type(dg::DataType::BFLOAT16).set_compute_data_type(dg::DataType::FLOAT);
    auto a = g.tensor(dg::TensorAttr().set_name("A").set_dim({sh.m, sh.k}).set_stride({sh.k, 1}));
    auto b = g.tensor(dg::TensorAttr().set_name("B").set_dim({sh.k, sh.n}).set_stride({sh.n, 1}));
    g.matmul(a, b, dg::MatmulAttr())->set_output(true);
    SCOPED_TRACE(std::to_string(sh.m) + "x" + std::to_string(sh.n) + "x" + std::to_string(sh.k));
    for_each_matmul(g, [&](const dg::Partition& p, gm::MatmulPieces&, const gemm_test::Lowered&) {
      const auto ks = e.knob_space(p, t);
      int splits = 0;
      for (const auto& k : ks) {
        if (!k.count("split_k")) continue;
        ++splits;
        EXPECT_EQ(k.at("tile_n"), 128) << dg::knobs_to_string(k);
        EXPECT_EQ(k.count("pingpong"), 0u) << dg::knobs_to_string(k);
        EXPECT_LT(e.estimate_seconds(p, t, k), 1e8) << dg::knobs_to_string(k);
      }
      EXPECT_EQ(splits, sh.splits);
      if (sh.m == 1024 && sh.k == 16384) {
        ASSERT_FALSE(ks.empty());
        EXPECT_EQ(ks[0].count("split_k"), 1u) << dg::knobs_to_string(ks[0]);
      }
      // Rejected knob sets name the rule.
      EXPECT_GE(e.estimate_seconds(p, t, {{"tile_n", 256}, {"split_k", 2}}), 1e8);
      EXPECT_GE(e.estimate_seconds(p, t, {{"tile_n", 128}, {"pingpong", 1}, {"split_k", 2}}), 1e8);
      EXPECT_GE(e.estimate_seconds(p, t, {{"tile_n", 128}, {"split_k", 17}}), 1e8);
    });
  }
}

// The register epilogue (epilogue=1) on a (fake) sm_90: offered first for a batched matmul +
// alpha + bias + ReLU + AMAX with a 16-bit output, beside every cooperative whole-tile setting
// (not ping-pong ones, as the epilogue reduces; split-K refused with its rule); with GELU in place
// of ReLU (the tutorial's chain, too many instructions to unroll) in its boxed form; not offered
// for a residual (it varies along the rows), an fp8 or fp32 output, or a column count that is not
// a multiple of 8 (row stride).
TEST(CudaGemmRegisterEpilogue, OfferedWhereTheEpilogueAllows) {
  gemm_test::FakeHopper hopper;
  const dg::Target& t = hopper.target;
  const dg::Engine& e = dg::cuda::gemm_wgmma_tma_engine();
  using PM = dg::PointwiseMode;
  struct Shape {
    int64_t n;
    bool residual;
    dg::DataType out;
    PM activation;
    bool offered;
  };
  const auto BF = dg::DataType::BFLOAT16;
  for (const Shape sh : {Shape{2048, false, BF, PM::RELU_FWD, true}, Shape{2048, false, dg::DataType::HALF, PM::RELU_FWD, true},
                         Shape{2048, false, BF, PM::GELU_FWD, true}, Shape{2048, true, BF, PM::RELU_FWD, false},
                         Shape{2048, false, dg::DataType::FP8_E4M3, PM::RELU_FWD, false},
                         Shape{2048, false, dg::DataType::FLOAT, PM::RELU_FWD, false},
                         Shape{2044, false, BF, PM::RELU_FWD, false}}) {
    dg::Graph g;
    g.set_io_data_type(dg::DataType::BFLOAT16).set_intermediate_data_type(dg::DataType::FLOAT)
        .set_compute_data_type(dg::DataType::FLOAT);
    const int64_t bt = 8, m = 2048, k = 2048, n = sh.n;
    auto a = g.tensor(dg::TensorAttr().set_name("A").set_dim({bt, m, k}).set_stride({m * k, k, 1}));
    auto b = g.tensor(dg::TensorAttr().set_name("B").set_dim({bt, k, n}).set_stride({k * n, n, 1}));
    auto bias = g.tensor(dg::TensorAttr().set_name("bias").set_dim({1, 1, n}).set_stride({n, n, 1}));
    auto alpha = g.tensor(dg::TensorAttr().set_name("alpha").set_dim({1, 1, 1}).set_stride({1, 1, 1})
                              .set_data_type(dg::DataType::FLOAT));
    alpha->set_is_pass_by_value(true).set_value(0.5);
    auto y = g.pointwise(g.bias(g.scale(g.matmul(a, b, dg::MatmulAttr()), alpha), bias),
                         dg::PointwiseAttr().set_mode(sh.activation));
    if (sh.residual)
      y = g.add(y, g.tensor(dg::TensorAttr().set_name("R").set_dim({bt, m, n}).set_stride({m * n, n, 1})));
    y->set_output(true).set_data_type(sh.out);
    g.reduction(y, dg::ReductionAttr().set_mode(dg::ReductionMode::AMAX))
        ->set_dim({1, 1, 1}).set_output(true).set_data_type(dg::DataType::FLOAT);
    SCOPED_TRACE(std::string(dg::to_string(sh.out)) + " n=" + std::to_string(n) + (sh.residual ? " residual" : "") +
                 " " + std::string(dg::to_string(sh.activation)));
    for_each_matmul(g, [&](const dg::Partition& p, gm::MatmulPieces& pieces, const gemm_test::Lowered&) {
      if (sh.activation == PM::GELU_FWD) {  // too long a chain to unroll: the boxed form
        std::string why;
        ASSERT_TRUE(dg::cuda::plan_epilogue(p, pieces.mp.axes, true, pieces.epi, why)) << why;
        EXPECT_TRUE(dg::cuda::register_epilogue(pieces.epi, why)) << why;
        EXPECT_EQ(dg::cuda::register_epilogue_mode(pieces.epi), dg::cuda::kEpiTmaStoreBoxed);
      }
      const auto ks = e.knob_space(p, t);
      ASSERT_FALSE(ks.empty());
      int registers = 0, whole = 0;
      for (const auto& kn : ks) {
        EXPECT_FALSE(kn.count("epilogue") && kn.count("pingpong")) << dg::knobs_to_string(kn) << ": AMAX";
        // Nor with the stream-K tail: ptxas serialized those kernels' wgmma (gemm_wgmma_tma.cpp).
        EXPECT_FALSE(kn.count("epilogue") && kn.count("stream_k")) << dg::knobs_to_string(kn) << ": AMAX";
        if (kn.count("epilogue")) ++registers;
        else if (!kn.count("split_k") && !kn.count("pingpong") && !kn.count("stream_k")) ++whole;
        EXPECT_LT(e.estimate_seconds(p, t, kn), 1e8) << dg::knobs_to_string(kn);
      }
      EXPECT_EQ(registers, sh.offered ? whole : 0);
      if (sh.offered) {
        EXPECT_EQ(ks[0].count("epilogue"), 1u) << dg::knobs_to_string(ks[0]);
      }
      EXPECT_GE(e.estimate_seconds(p, t, {{"tile_n", 128}, {"split_k", 2}, {"epilogue", 1}}), 1e8);
    });
  }
}

// FLOAT inputs on a (fake) sm_90: every wgmma knob set carries tf32=1, and transpose=1 exactly
// where an operand is MN-major.
TEST(CudaGemmTf32, TransposeKnobOnlyForMnMajorFloat) {
  gemm_test::FakeHopper hopper;
  const dg::Target& t = hopper.target;
  const dg::Engine& e = dg::cuda::gemm_wgmma_tma_engine();
  for (bool b_k_major : {false, true}) {
    dg::Graph g;
    g.set_io_data_type(dg::DataType::FLOAT).set_compute_data_type(dg::DataType::FLOAT).set_allow_tf32(true);
    auto a = g.tensor(dg::TensorAttr().set_name("A").set_dim({512, 256}).set_stride({256, 1}));
    auto b = g.tensor(dg::TensorAttr().set_name("B").set_dim({256, 384}).set_stride(b_k_major ? Dims{1, 256} : Dims{384, 1}));
    g.matmul(a, b, dg::MatmulAttr())->set_output(true);
    for_each_matmul(g, [&](const dg::Partition& p, gm::MatmulPieces&, const gemm_test::Lowered&) {
      const auto ks = e.knob_space(p, t);
      ASSERT_FALSE(ks.empty());
      for (const auto& k : ks) {
        EXPECT_EQ(k.count("tf32") ? k.at("tf32") : 0, 1) << dg::knobs_to_string(k);
        EXPECT_EQ(k.count("transpose") ? k.at("transpose") : 0, b_k_major ? 0 : 1) << dg::knobs_to_string(k);
      }
    });
  }
}

}  // namespace
