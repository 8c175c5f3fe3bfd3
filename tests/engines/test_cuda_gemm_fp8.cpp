// cuda_gemm_wgmma_tma's FP8 matmuls: e4m3 and e5m2, mixed or not, both operands K-major (wgmma's
// k32 form has no transposes), fp32 accumulation, the fused epilogue (descales, bias, AMAX) as for
// 16-bit inputs. Held back as `gemm_fp8` until the GPU test below passes. Without a GPU: which
// engine describes FP8 pairs and why the others refuse, the gate, the estimate at FP8's peak, and
// NVRTC compiles of every tile form with no wgmma serialized.
#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <string>
#include <vector>

#include "common/scoped_env.hpp"
#include "engines/cuda/common/nvrtc_compile.hpp"
#include "engines/cuda/gemm/gemm_wgmma_tma.hpp"
#include "engines/cuda/gemm/matmul_build.hpp"
#include "engines/cuda/gemm/matmul_plan.hpp"
#include "gemm_test_util.hpp"
#include "test_cuda_util.hpp"

namespace {

namespace dg = dnngraph;
namespace gm = dnngraph::cuda::gemm;
using gemm_test::Dims;
using gemm_test::Expect;
using gemm_test::HostTensor;
using test_env::ScopedEnv;
using T = dg::DataType;

dg::TensorPtr scalar(dg::Graph& g, const char* name) {
  return g.tensor(dg::TensorAttr().set_name(name).set_dim({1, 1, 1}).set_stride({1, 1, 1}).set_data_type(T::FLOAT));
}

// The FP8 GEMM of cuBLASLt's and the frontend's samples: A [m, k] (k contiguous) x B stored [n, k],
// times A's and B's descales, + bias, bf16 out, AMAX of it. `b_type`: B's type; `b_k_major` false
// stores B [k, n].
void fp8_matmul(gemm_test::LoweredMatmul& f, T a_type, T b_type, int64_t m, int64_t n, int64_t k,
                bool b_k_major = true) {
  f.g.set_io_data_type(T::BFLOAT16).set_intermediate_data_type(T::FLOAT).set_compute_data_type(T::FLOAT);
  auto a = f.g.tensor(
      dg::TensorAttr().set_name("A").set_dim({1, m, k}).set_stride({m * k, k, 1}).set_data_type(a_type));
  auto b = f.g.tensor(dg::TensorAttr().set_name("B").set_dim({1, k, n})
                          .set_stride(b_k_major ? Dims{k * n, 1, k} : Dims{k * n, n, 1}).set_data_type(b_type));
  auto bias = f.g.tensor(dg::TensorAttr().set_name("bias").set_dim({1, 1, n}).set_stride({n, n, 1}));
  auto y = f.g.bias(f.g.scale(f.g.scale(f.g.matmul(a, b, dg::MatmulAttr().set_name("mm")), scalar(f.g, "descale_a")),
                              scalar(f.g, "descale_b")),
                    bias);
  y->set_output(true);
  auto amax = f.g.reduction(y, dg::ReductionAttr().set_mode(dg::ReductionMode::AMAX));
  amax->set_dim({1, 1, 1}).set_output(true).set_data_type(T::FLOAT);
  ASSERT_TRUE(gemm_test::lower_matmul(f));
}

TEST(CudaGemmFp8, OnlyTheWgmmaEngineTakesKMajorPairs) {
  gemm_test::LoweredMatmul f;
  ASSERT_NO_FATAL_FAILURE(fp8_matmul(f, T::FP8_E4M3, T::FP8_E4M3, 256, 192, 128));
  gm::MatmulProblem mp;
  std::string why;
  // The mma.sync engine and the convolutions describe with the default inputs: no FP8.
  EXPECT_FALSE(gm::describe_matmul_graph(*f.p, mp, why));
  EXPECT_EQ(why, "node 'mm', tensor 'A': inputs of type FP8_E4M3 x FP8_E4M3 are not supported (BFLOAT16 or HALF, both "
                 "the same; FLOAT x FLOAT as TF32)");
  ASSERT_TRUE(gm::describe_matmul_graph(*f.p, mp, why, {.fp8 = true})) << why;
  EXPECT_EQ(mp.dtype, T::FP8_E4M3);
  EXPECT_TRUE(mp.a_k_major && mp.b_k_major && mp.a_vec && mp.b_vec);
  {
    ScopedEnv env("DNNGRAPH_UNCHECKED_ENGINES", nullptr);
    const dg::Status s = gm::check_fp8(*f.p, mp, "cuda_gemm_wgmma_tma");
    EXPECT_EQ(s.message(), "cuda_gemm_wgmma_tma: node 'mm': FP8 matmuls on wgmma not yet checked against ref on a GPU, "
                           "so not offered (DNNGRAPH_UNCHECKED_ENGINES=gemm_fp8 offers it, for the GPU tests)");
  }
  ScopedEnv env("DNNGRAPH_UNCHECKED_ENGINES", "gemm_fp8");
  EXPECT_TRUE(gm::check_fp8(*f.p, mp, "cuda_gemm_wgmma_tma").ok());
  // B stored [k, n]: MN-major, which FP8 wgmma cannot read.
  gemm_test::LoweredMatmul mn;
  ASSERT_NO_FATAL_FAILURE(fp8_matmul(mn, T::FP8_E5M2, T::FP8_E5M2, 256, 192, 128, false));
  ASSERT_TRUE(gm::describe_matmul_graph(*mn.p, mp, why, {.fp8 = true})) << why;
  EXPECT_EQ(gm::check_fp8(*mn.p, mp, "cuda_gemm_wgmma_tma").message(),
            "cuda_gemm_wgmma_tma: node 'mm', tensor 'B': FP8 inputs run on wgmma only K-major (A [m, k] with k "
            "contiguous, B stored [n, k], as cuBLASLt's FP8 GEMMs take them); this operand is MN-major");
  // Mixed formats (a backward pass's e5m2 gradients times e4m3 weights): one wgmma type pair.
  gemm_test::LoweredMatmul mixed;
  ASSERT_NO_FATAL_FAILURE(fp8_matmul(mixed, T::FP8_E5M2, T::FP8_E4M3, 256, 192, 128));
  ASSERT_TRUE(gm::describe_matmul_graph(*mixed.p, mp, why, {.fp8 = true})) << why;
  EXPECT_EQ(mp.dtype, T::FP8_E5M2);
  EXPECT_EQ(mp.b_dtype, T::FP8_E4M3);
  EXPECT_FALSE(gm::describe_matmul_graph(*mixed.p, mp, why));
  EXPECT_EQ(why, "node 'mm', tensor 'A': inputs of type FP8_E5M2 x FP8_E4M3 are not supported (BFLOAT16 or HALF, both "
                 "the same; FLOAT x FLOAT as TF32)");
  // Other 8-bit types are no FP8 pair.
  gemm_test::LoweredMatmul int8;
  ASSERT_NO_FATAL_FAILURE(fp8_matmul(int8, T::INT8, T::INT8, 256, 192, 128));
  EXPECT_FALSE(gm::describe_matmul_graph(*int8.p, mp, why, {.fp8 = true}));
  EXPECT_EQ(why, "node 'mm', tensor 'A': inputs of type INT8 x INT8 are not supported (BFLOAT16 or HALF, both the same; "
                 "FLOAT x FLOAT as TF32; FP8_E4M3 or FP8_E5M2, either with either)");
}

// The knob space is the 16-bit one; each setting is estimated at FP8's peak (twice bf16's), so a
// compute-bound 4096^3 comes out near half the bf16 estimate, and k tiles are 128 elements wide.
TEST(CudaGemmFp8, EstimatedAtTwiceTheBf16Rate) {
  gemm_test::FakeHopper hopper;
  const dg::Engine& e = dg::cuda::gemm_wgmma_tma_engine();
  gemm_test::LoweredMatmul fp8, bf16;
  ASSERT_NO_FATAL_FAILURE(fp8_matmul(fp8, T::FP8_E4M3, T::FP8_E4M3, 4096, 4096, 4096));
  ASSERT_NO_FATAL_FAILURE(fp8_matmul(bf16, T::BFLOAT16, T::BFLOAT16, 4096, 4096, 4096));
  const auto knobs = e.knob_space(*fp8.p, hopper.target);
  ASSERT_FALSE(knobs.empty());
  for (const auto& k : knobs) {
    EXPECT_EQ(k.count("tf32") + k.count("tf32x3") + k.count("transpose"), 0u) << dg::knobs_to_string(k);
    const double ratio = e.estimate_seconds(*fp8.p, hopper.target, k) / e.estimate_seconds(*bf16.p, hopper.target, k);
    EXPECT_GT(ratio, 0.45) << dg::knobs_to_string(k);
    EXPECT_LT(ratio, 0.62) << dg::knobs_to_string(k);
  }
  gm::MatmulConfig c;
  c.core = gm::Core::WGMMA;
  EXPECT_EQ(gm::k_tile(c, T::FP8_E4M3), 128);
  EXPECT_EQ(gm::k_tile(c, T::BFLOAT16), 64);
  EXPECT_EQ(gm::k_tile(c, T::FLOAT), 32);
}

gm::MatmulConfig fp8_config(int bn, int stages, bool pingpong = false, int splits = 1, int cluster = 1,
                            bool register_epilogue = false) {
  gm::MatmulConfig c;
  c.core = gm::Core::WGMMA;
  c.bm = 128, c.bn = bn, c.bk = 128, c.stages = stages, c.threads = 384;
  c.pingpong = pingpong, c.splits = splits, c.cluster = cluster, c.register_epilogue = register_epilogue;
  return c;
}

// Every tile form (cooperative 256 and 128 wide, ping-pong, a cluster of 2, split-K, the register
// epilogue) for both formats, and one tile form for each mixed pair: NVRTC compiles it for sm_90a
// with no wgmma serialized.
TEST(CudaGemmFp8, KernelsCompileUnserialized) {
  if (!dg::cuda::nvrtc()) GTEST_SKIP() << "NVRTC not available: " << dg::cuda::nvrtc_error();
  for (const auto& [t, tb] : {std::pair{T::FP8_E4M3, T::FP8_E4M3}, std::pair{T::FP8_E5M2, T::FP8_E5M2},
                              std::pair{T::FP8_E4M3, T::FP8_E5M2}, std::pair{T::FP8_E5M2, T::FP8_E4M3}}) {
    gemm_test::LoweredMatmul f;
    ASSERT_NO_FATAL_FAILURE(fp8_matmul(f, t, tb, 320, 200, 384));
    gm::MatmulPieces pieces;
    std::string why;
    ASSERT_TRUE(gm::describe_matmul_graph(*f.p, pieces.mp, why, {.fp8 = true})) << why;
    ASSERT_TRUE(dg::cuda::plan_epilogue(*f.p, pieces.mp.axes, true, pieces.epi, why)) << why;
    std::vector<gm::MatmulConfig> configs{fp8_config(256, 4)};
    if (t == tb)
      configs = {fp8_config(256, 4), fp8_config(128, 6, true), fp8_config(128, 5), fp8_config(256, 4, false, 1, 2),
                 fp8_config(128, 5, false, 2), fp8_config(256, 3, false, 1, 1, true)};
    for (const gm::MatmulConfig& c : configs) {
      const std::string src = gm::matmul_source(pieces.mp, c, pieces.epi, *f.low.ir);
      const std::string name = [](T x) { return std::string(dg::to_string(x)); }(t);
      const std::string type = "dg::DT_" + name + (t == tb ? "" : "_" + std::string(dg::to_string(tb)).substr(4));
      EXPECT_TRUE(gemm_test::instantiates(src, "gemm_wgmma", {{"kDataType", type}})) << c.describe();
      std::vector<uint8_t> cubin;
      ASSERT_TRUE(gemm_test::compiles_unserialized(src, "test_gemm_fp8.cu", "sm_90a", &cubin))
          << to_string(t) << " " << c.describe();
      EXPECT_GT(cubin.size(), 1000u);
    }
  }
}

// Every FP8 plan the engine offers (released for this test) against ref, outputs NaN-poisoned:
// random shapes with k a multiple of 16 (TMA's 16-byte row pitch) from one 128-wide k tile to
// deep, partial tiles, both formats; bf16 out within bf16's rounding of the fp32 sums (the FP8
// inputs are exact values), AMAX alike.
TEST(CudaGemmFp8, RandomShapesMatchRef) {
  DG_REQUIRE_CUDA(gpu);
  if (impl_of(*gpu).info.sm_version != 90) GTEST_SKIP() << "FP8 wgmma runs on sm_90a";
  ScopedEnv env("DNNGRAPH_UNCHECKED_ENGINES", "gemm_fp8");
  std::mt19937 rng(181);
  int runs = 0;
  for (int trial = 0; trial < 4; ++trial) {
    const T t = trial % 2 ? T::FP8_E5M2 : T::FP8_E4M3, tb = trial == 3 ? T::FP8_E4M3 : t;  // trial 3 mixes
    const int64_t m = 1 + rng() % 700, n = 8 + 8 * (rng() % 90);
    const int64_t k = trial == 2 ? 16 : 16 * (1 + rng() % (trial == 3 ? 300 : 40));
    HostTensor a = gemm_test::operand({1}, m, k, false, t, rng), b = gemm_test::operand({1}, k, n, true, tb, rng);
    HostTensor da = gemm_test::packed({1, 1, 1}, T::FLOAT), db = gemm_test::packed({1, 1, 1}, T::FLOAT);
    HostTensor bias = gemm_test::packed({1, 1, n}, T::BFLOAT16);
    gemm_test::fill_random(da, rng, 0.5, 2), gemm_test::fill_random(db, rng, 0.5, 2), gemm_test::fill_random(bias, rng);
    SCOPED_TRACE(std::string(to_string(t)) + " m=" + std::to_string(m) + " n=" + std::to_string(n) +
                 " k=" + std::to_string(k));
    std::vector<std::string> names;
    gemm_test::run_vs_ref("cuda_gemm_wgmma_tma", {a, b, da, db, bias},
                          {gemm_test::packed({1, m, n}, T::BFLOAT16), gemm_test::packed({1, 1, 1}, T::FLOAT)},
                          [](dg::Graph& g, const std::vector<dg::TensorPtr>& in) {
                            g.set_intermediate_data_type(T::FLOAT).set_compute_data_type(T::FLOAT);
                            auto mm = g.matmul(in[0], in[1], dg::MatmulAttr());
                            auto y = g.bias(g.scale(g.scale(mm, in[2]), in[3]), in[4]);
                            auto amax = g.reduction(y, dg::ReductionAttr().set_mode(dg::ReductionMode::AMAX));
                            return std::vector<dg::TensorPtr>{y, amax};
                          },
                          {Expect{1.2e-2, std::sqrt(double(k)) * 0.1}, Expect{1.2e-2, 1.0}}, 64, &names);
    EXPECT_FALSE(names.empty());
    runs += static_cast<int>(names.size());
  }
  std::printf("[ INFO ] %d FP8 plans matched ref\n", runs);
}

}  // namespace
