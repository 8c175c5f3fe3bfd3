// cuda_gemm_wgmma_tma's 3xTF32 matmuls (knob tf32x3, kernels/tf32x3_split.cuh): FLOAT matmuls in
// graphs that do not allow TF32, three TF32 products per product on the wgmma core (offered since
// the GPU test below passed on an H100, 2026-12-07). What the knob space offers, the rules with
// their messages, NVRTC compiles without a GPU, and on a GPU every setting against ref at the exact
// fp32 tolerance.
#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <string>
#include <vector>

#include "engines/cuda/common/nvrtc_compile.hpp"
#include "engines/cuda/gemm/gemm_mma_sync.hpp"
#include "engines/cuda/gemm/gemm_wgmma_tma.hpp"
#include "engines/cuda/gemm/matmul_plan.hpp"
#include "gemm_test_util.hpp"
#include "planning/described_target.hpp"
#include "planning/knobs.hpp"
#include "test_cuda_util.hpp"

namespace {

namespace dg = dnngraph;
namespace gm = dnngraph::cuda::gemm;
using gemm_test::Dims;
using gemm_test::Expect;
using gemm_test::HostTensor;

// A[2, m, k] x B[k, n] of FLOAT (B stored [n, k] where b_k_major), TF32 allowed or not, lowered.
using FloatMatmul = gemm_test::LoweredMatmul;
void float_matmul(FloatMatmul& f, bool allow_tf32, bool b_k_major, int64_t m = 96, int64_t n = 40, int64_t k = 72) {
  f.g.set_io_data_type(dg::DataType::FLOAT).set_compute_data_type(dg::DataType::FLOAT).set_allow_tf32(allow_tf32);
  auto a = f.g.tensor(dg::TensorAttr().set_name("A").set_dim({2, m, k}).set_stride({m * k, k, 1}));
  auto b = f.g.tensor(dg::TensorAttr().set_name("B").set_dim({1, k, n}).set_stride(b_k_major ? Dims{k * n, 1, k}
                                                                                             : Dims{k * n, n, 1}));
  f.g.matmul(a, b, dg::MatmulAttr().set_name("mm"))->set_output(true);
  ASSERT_TRUE(gemm_test::lower_matmul(f));
}

dg::Target described_hopper(std::shared_ptr<dg::HandleImpl>& keep) {
  keep = dg::describe_handle();
  dg::Target t;
  t.handle = keep.get();
  return t;
}

// The engine offers exact FLOAT only as 3xTF32 settings (cooperative 128-wide tiles, at most 3
// stages of 64 KB, MN-major B through the transpose pass); the mma.sync engine refuses it with the
// TF32 rule.
TEST(CudaGemmTf32x3, OfferedOnlyForExactFloat) {
  if (!dg::cuda::nvrtc()) GTEST_SKIP() << "the CUDA engines need NVRTC: " << dg::cuda::nvrtc_error();
  std::shared_ptr<dg::HandleImpl> h;
  const dg::Target t = described_hopper(h);
  const dg::Engine& e = dg::cuda::gemm_wgmma_tma_engine();
  for (bool b_k_major : {true, false}) {
    FloatMatmul f;
    ASSERT_NO_FATAL_FAILURE(float_matmul(f, false, b_k_major));
    const dg::Support support = e.check(*f.p, t);
    EXPECT_TRUE(support.ok) << support.reason;
    const auto space = e.knob_space(*f.p, t);
    ASSERT_FALSE(space.empty());
    for (const dg::Knobs& k : space) {
      EXPECT_EQ(k.at("tf32x3"), 1) << dg::knobs_to_string(k);
      EXPECT_EQ(k.count("tf32"), 0u) << dg::knobs_to_string(k);
      EXPECT_EQ(k.at("tile_n"), 128) << dg::knobs_to_string(k);
      EXPECT_LE(k.at("stages"), 3) << dg::knobs_to_string(k);
      EXPECT_EQ(k.count("transpose"), b_k_major ? 0u : 1u) << dg::knobs_to_string(k);
    }
    const dg::Support mma = dg::cuda::gemm_mma_sync_engine().check(*f.p, t);
    EXPECT_FALSE(mma.ok);
    EXPECT_NE(mma.reason.find("as TF32 only when the graph allows it"), std::string::npos) << mma.reason;
  }
  FloatMatmul tf32;  // TF32 allowed: the TF32 settings, none of 3xTF32
  ASSERT_NO_FATAL_FAILURE(float_matmul(tf32, true, true));
  for (const dg::Knobs& k : e.knob_space(*tf32.p, t)) EXPECT_EQ(k.count("tf32x3"), 0u) << dg::knobs_to_string(k);
}

TEST(CudaGemmTf32x3, RulesNameTheKnobs) {
  const dg::Engine& e = dg::cuda::gemm_wgmma_tma_engine();
  for (const dg::Knobs& k : {dg::Knobs{{"tf32x3", 1}, {"tile_n", 256}}, dg::Knobs{{"tf32x3", 1}, {"tile_n", 128}, {"pingpong", 1}},
                             dg::Knobs{{"tf32x3", 1}, {"tile_n", 128}, {"tf32", 1}}}) {
    const dg::Status s = e.check_knobs(k);
    EXPECT_EQ(s.code(), dg::ErrorCode::INVALID_VALUE) << dg::knobs_to_string(k);
    EXPECT_NE(s.message().find("tf32x3=1 (3xTF32) goes only with tf32 0 and cooperative 128-wide tiles"),
              std::string::npos)
        << s.message();
  }
  const dg::Status big = e.check_knobs({{"tf32x3", 1}, {"tile_n", 128}, {"stages", 4}});
  EXPECT_NE(big.message().find("exceed 227 KB"), std::string::npos) << big.message();
}

gm::MatmulConfig x3_config(int splits, bool transpose) {
  gm::MatmulConfig c;
  c.core = gm::Core::WGMMA;
  c.bm = 128, c.bn = 128, c.bk = 32, c.stages = 3, c.threads = 384;
  c.tf32x3 = true;
  c.splits = splits;
  c.transpose = transpose;
  return c;
}

TEST(CudaGemmTf32x3, KernelsCompileWithNvrtc) {
  if (!dg::cuda::nvrtc()) GTEST_SKIP() << "NVRTC not available: " << dg::cuda::nvrtc_error();
  for (bool b_k_major : {true, false}) {
    FloatMatmul f;
    ASSERT_NO_FATAL_FAILURE(float_matmul(f, false, b_k_major));
    gm::MatmulPieces pieces;
    std::string why;
    ASSERT_TRUE(gm::describe_matmul_graph(*f.p, pieces.mp, why, {.exact_fp32 = true})) << why;
    EXPECT_TRUE(pieces.mp.exact_fp32);
    ASSERT_TRUE(dg::cuda::plan_epilogue(*f.p, pieces.mp.axes, true, pieces.epi, why)) << why;
    for (int splits : {1, 2}) {
      const gm::MatmulConfig c = x3_config(splits, !b_k_major);
      const std::string src = gm::matmul_source(pieces.mp, c, pieces.epi, *f.low.ir);
      EXPECT_TRUE(gemm_test::instantiates(src, "gemm_wgmma", {{"kDataType", "dg::DT_FLOAT"}, {"kTf32x3", "true"},
                                                              {"kAKMajor", "true"}, {"kBKMajor", "true"}}));
      std::vector<uint8_t> cubin;
      ASSERT_TRUE(gemm_test::compiles_unserialized(src, "test_gemm_tf32x3.cu", "sm_90a", &cubin)) << c.describe();
      EXPECT_GT(cubin.size(), 1000u);
    }
  }
}

// Every offered setting against ref at the exact fp32 tolerance (1e-5 relative above sqrt(k);
// TF32's truncation errs ~1e-3), outputs NaN-poisoned: shapes off the tiles, batches, both majors
// of B (MN-major through the transpose pass), deep k for split-K. Leading dimensions padded to 8
// elements (`operand`): TMA takes strides of 16-byte multiples, and the engine refuses others
// (the first GPU run of this test, with packed odd widths, stopped at check_support).
TEST(CudaGemmTf32x3, RandomShapesMatchRefAtFp32Tolerance) {
  DG_REQUIRE_CUDA(gpu);
  if (impl_of(*gpu).info.sm_version != 90) GTEST_SKIP() << "tf32x3 runs on the wgmma core (sm_90a)";
  std::mt19937 rng(97);
  for (int trial = 0; trial < 4; ++trial) {
    const int64_t m = 1 + rng() % 300, n = 1 + rng() % 300, k = trial == 3 ? 2048 : 1 + rng() % 400;
    const bool bt = trial % 2 == 0;
    const Dims batch = trial == 1 ? Dims{2} : Dims{};
    Dims cd = batch;
    cd.insert(cd.end(), {m, n});
    HostTensor a = gemm_test::operand(batch, m, k, false, dg::DataType::FLOAT, rng);
    HostTensor b = gemm_test::operand(batch, k, n, bt, dg::DataType::FLOAT, rng);
    SCOPED_TRACE("trial " + std::to_string(trial) + ": m=" + std::to_string(m) + " n=" + std::to_string(n) + " k=" +
                 std::to_string(k) + (bt ? " B stored [n, k]" : ""));
    gemm_test::run_vs_ref("cuda_gemm_wgmma_tma", {a, b}, {gemm_test::packed(cd, dg::DataType::FLOAT)},
                          [](dg::Graph& g, const std::vector<dg::TensorPtr>& in) {
                            g.set_compute_data_type(dg::DataType::FLOAT).set_allow_tf32(false);
                            return std::vector<dg::TensorPtr>{g.matmul(in[0], in[1], dg::MatmulAttr())};
                          },
                          {Expect{1e-5, std::sqrt(double(k))}}, 16);
  }
}

}  // namespace
