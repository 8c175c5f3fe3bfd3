// cuda_norm_rowwise without a GPU: every kernel configuration compiles with NVRTC for sm_80 and
// sm_90a with no register spills (ptxas's report), the configuration choice, the knob schema's
// round trips and rules, and check()'s rejections with their reasons (the held-back gate
// included). On a GPU: test_cuda_norm_gpu.cpp.
#include <gtest/gtest.h>

#include <algorithm>
#include <array>
#include <cstdlib>
#include <regex>

#include "engines/cuda/common/gpu_checked.hpp"
#include "engines/cuda/common/nvrtc_compile.hpp"
#include "engines/cuda/norm/norm_knobs.hpp"
#include "engines/cuda/norm/norm_problem.hpp"
#include "engines/cuda/norm/norm_rowwise.hpp"
#include "norm_test_util.hpp"

namespace {

using namespace norm_test;

// ---- NVRTC: every configuration compiles, without spills

// The configurations a problem can get: warp groups of 1..8 rows and block groups of 64..1024
// threads, each with the most registers it takes and streamed, vectorized and scalar.
std::vector<nm::NormConfig> every_config(const nm::NormProblem& pr) {
  std::vector<nm::NormConfig> out;
  for (int threads = 32; threads <= 1024; threads *= 2)
    for (int rows : threads == 32 ? std::vector<int>{1, 2, 4, 8} : std::vector<int>{1})
      for (int vec : {pr.vec_width, 1}) {
        nm::NormConfig c{threads, rows, nm::max_resident_floats(pr.backward, threads * rows, vec) / vec, vec};
        out.push_back(c);
        if (pr.backward && c.resident() && vec > 1) {
          if (c.block() < 1024 || nm::sixteen_bit_rows(pr)) out.push_back({threads, rows, c.items, vec, /*prefetch=*/true});
        }
        if (rows == 1) out.push_back({threads, 1, 0, vec});
        if (vec == 1) break;
      }
  return out;
}

// One program holding every configuration of pr as its own kernel, compiled for `arch` with
// ptxas's report: every kernel is listed, none spills.
void expect_compiles_without_spills(const nm::NormProblem& pr, const char* arch, const std::string& what) {
  std::string src = "#include \"norm_rowwise.cuh\"\n";
  const auto configs = every_config(pr);
  for (size_t i = 0; i < configs.size(); ++i) {
    const std::string ns = "cfg" + std::to_string(i);
    src += nm::config_source(pr, configs[i], ns) + nm::entry_source("k" + std::to_string(i), ns, configs[i].block());
  }
  if (pr.column_sums())
    src += "extern \"C\" __global__ void kfin(const dg::NormFinalizeParams F) { dg::norm_partials<cfg0::KernelConfig, " +
           std::to_string(nm::kFinalizeLanes) + ">(F); }\n";
  std::vector<uint8_t> cubin;
  std::string log;
  const dg::Status s = dg::cuda::nvrtc_compile(src, "test_norm.cu", arch, {}, cubin, &log);
  ASSERT_TRUE(s.ok()) << what << s.to_string() << "\n---- source:\n" << src;
  const std::regex spills(R"((\d+) bytes spill stores, (\d+) bytes spill loads)");
  int reports = 0;
  for (auto it = std::sregex_iterator(log.begin(), log.end(), spills); it != std::sregex_iterator(); ++it, ++reports)
    EXPECT_TRUE((*it)[1] == "0" && (*it)[2] == "0") << what << arch << ": " << it->str() << "\n" << log;
  EXPECT_GE(reports, static_cast<int>(configs.size())) << what << arch << ": ptxas reported\n" << log;
}

class NormNvrtc : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!dg::cuda::nvrtc()) GTEST_SKIP() << "NVRTC not available: " << dg::cuda::nvrtc_error();
  }
  void compile(dg::Graph& g, const std::string& what) {
    nm::NormProblem pr;
    std::string why;
    ASSERT_TRUE(describe(g, pr, why));
    for (const char* arch : {"sm_80", "sm_90a"}) ASSERT_NO_FATAL_FAILURE(expect_compiles_without_spills(pr, arch, what));
  }
};

TEST_F(NormNvrtc, LayernormForwardEveryConfigCompilesWithoutSpills) {
  for (Types t : {Types{T::BFLOAT16, T::BFLOAT16, T::BFLOAT16}, Types{T::FLOAT, T::HALF, T::FLOAT}}) {
    dg::Graph g;
    add_forward(g, true, {16, 1024}, t, true, true);
    compile(g, "layernorm " + std::string(dg::to_string(t.io)) + ": ");
  }
}

TEST_F(NormNvrtc, RmsnormForwardEveryConfigCompilesWithoutSpills) {
  for (bool bias : {false, true}) {
    dg::Graph g;
    add_forward(g, false, {16, 1024}, {T::HALF, T::HALF, T::FLOAT}, bias, !bias);
    compile(g, bias ? "rmsnorm with bias: " : "rmsnorm with INV_RMS: ");
  }
}

TEST_F(NormNvrtc, LayernormBackwardEveryConfigCompilesWithoutSpills) {
  for (Types t : {Types{T::BFLOAT16, T::BFLOAT16, T::BFLOAT16}, Types{T::FLOAT, T::FLOAT, T::FLOAT}}) {
    dg::Graph g;
    add_backward(g, true, {16, 1024}, t, true);
    compile(g, "layernorm_backward " + std::string(dg::to_string(t.io)) + ": ");
  }
}

TEST_F(NormNvrtc, RmsnormBackwardEveryConfigCompilesWithoutSpills) {
  for (bool dbias : {false, true}) {
    dg::Graph g;
    add_backward(g, false, {16, 1024}, {T::HALF, T::BFLOAT16, T::FLOAT}, dbias);
    compile(g, dbias ? "rmsnorm_backward with dbias: " : "rmsnorm_backward: ");
  }
}

// The plan's own module (main, scalar and finalize kernels), as make() generates it.
TEST_F(NormNvrtc, PlanModuleCompiles) {
  dg::Graph g;
  add_backward(g, true, {8, 4096}, {T::BFLOAT16, T::BFLOAT16, T::BFLOAT16}, true);
  nm::NormProblem pr;
  std::string why;
  ASSERT_TRUE(describe(g, pr, why));
  const std::string src = nm::kernel_source(pr, nm::choose_config(pr, 0, 0, true));
  for (const char* k : {nm::kMainKernel, nm::kScalarKernel, nm::kFinalizeKernel})
    EXPECT_NE(src.find(std::string(k) + "("), std::string::npos) << k;
  std::vector<uint8_t> cubin;
  const dg::Status s = dg::cuda::nvrtc_compile(src, "test_norm_plan.cu", "sm_90a", cubin);
  ASSERT_TRUE(s.ok()) << s.to_string() << "\n" << src;
}

// ---- configurations, knobs, rejections (no GPU)

nm::NormProblem problem(bool backward, int64_t cols, T io = T::BFLOAT16, int64_t rows = 64) {
  dg::Graph g;
  if (backward) add_backward(g, true, {rows, cols}, {io, io, io}, true);
  else add_forward(g, true, {rows, cols}, {io, io, io}, true, false);
  nm::NormProblem pr;
  std::string why;
  EXPECT_TRUE(describe(g, pr, why));
  return pr;
}

TEST(CudaNormConfig, WarpRowsForShortRowsBlockRowsForLongOnesStreamingPastRegisters) {
  struct Want {
    bool backward;
    int64_t cols;
    int threads, rows, items, vec;
  };
  for (const Want w : {Want{false, 256, 32, 8, 1, 8},      // a warp per row, one vector per lane
                       Want{false, 4096, 128, 1, 4, 8},    // 32 bf16 per lane
                       Want{false, 8192, 256, 1, 4, 8},
                       Want{false, 24576, 1024, 1, 3, 8},  // blocks of 1024 keep 24 per lane
                       Want{false, 32768, 1024, 1, 0, 8},  // streamed
                       Want{false, 1001, 64, 1, 16, 1},    // odd: scalar, 16 per lane
                       Want{true, 4096, 256, 1, 2, 8},     // backward: 16 per lane
                       Want{true, 8192, 512, 1, 2, 8},
                       Want{true, 16384, 1024, 1, 0, 8}}) {
    const nm::NormConfig c = nm::choose_config(problem(w.backward, w.cols), 0, 0, true);
    SCOPED_TRACE((w.backward ? "backward, cols " : "forward, cols ") + std::to_string(w.cols));
    EXPECT_EQ(c.threads, w.threads);
    EXPECT_EQ(c.rows, w.rows);
    EXPECT_EQ(c.items, w.items);
    EXPECT_EQ(c.vec, w.vec);
  }
  // The backward loads the next row during this one where the rows are vectors in registers of
  // blocks below 1024 threads, or of 1024 with 16-bit X and DY (prefetch=0 turns it off); never
  // forward, streamed or scalar.
  EXPECT_TRUE(nm::choose_config(problem(true, 8192), 0, 0, true).prefetch);
  EXPECT_FALSE(nm::choose_config(problem(true, 8192), 0, 0, true, false).prefetch);
  EXPECT_TRUE(nm::choose_config(problem(true, 8192), 1024, 0, true).prefetch);
  EXPECT_FALSE(nm::choose_config(problem(true, 8192, T::FLOAT), 1024, 0, true).prefetch);  // 64 registers a lane
  EXPECT_FALSE(nm::choose_config(problem(true, 16384), 0, 0, true).prefetch);
  EXPECT_FALSE(nm::choose_config(problem(false, 8192), 0, 0, true).prefetch);
  EXPECT_FALSE(nm::scalar_config(problem(true, 8192), nm::choose_config(problem(true, 8192), 0, 0, true)).prefetch);
  // FLOAT rows take 4 per vector; vec=0 and unaligned pointers take the scalar kernel with as many
  // elements per lane, streamed (one row per block) when scalar items would not fit.
  EXPECT_EQ(problem(false, 4096, T::FLOAT).vec_width, 4);
  const nm::NormProblem pr = problem(false, 4096);
  const nm::NormConfig scalar = nm::scalar_config(pr, nm::choose_config(pr, 0, 0, true));
  EXPECT_EQ(scalar.vec, 1);
  EXPECT_EQ(scalar.items, 0);
  EXPECT_EQ(nm::choose_config(pr, 0, 0, false).vec, 1);
  EXPECT_EQ(nm::scalar_config(problem(false, 256), nm::choose_config(problem(false, 256), 0, 0, true)).items, 8);
}

TEST(CudaNormConfig, BackwardWorkspaceIsOneSliceOfColumnSumsPerBlock) {
  const nm::NormProblem pr = problem(true, 4096, T::BFLOAT16, 2048);
  const nm::NormConfig c = nm::choose_config(pr, 0, 0, true);
  const int64_t blocks = nm::grid_blocks(pr, c, 132);
  EXPECT_EQ(blocks, 132 * 2);  // two 4096-wide rows of X and DY per SM in flight: 32 KB
  EXPECT_EQ(nm::grid_blocks(pr, c, 132, 3), 132 * 3);    // the knob
  EXPECT_EQ(nm::grid_blocks(pr, c, 132, 8), 132 * 4);    // at most 1024 threads per SM
  EXPECT_EQ(nm::grid_blocks(problem(true, 8192, T::BFLOAT16, 8192), nm::choose_config(problem(true, 8192), 0, 0, true), 132),
            132);
  EXPECT_EQ(nm::grid_blocks(problem(true, 256, T::BFLOAT16, 8192), nm::choose_config(problem(true, 256), 0, 0, true), 132),
            132 * 4);  // warp groups of 8 rows: 8 KB per block, at most 1024 threads per SM
  int64_t ws = 0;
  ASSERT_TRUE(nm::workspace_bytes(pr, blocks, ws));
  EXPECT_EQ(ws, 2 * blocks * 4096 * 4);
  EXPECT_FALSE(nm::workspace_bytes(pr, int64_t{1} << 62, ws));  // overflow is refused
  const nm::NormProblem fwd = problem(false, 4096);
  ASSERT_TRUE(nm::workspace_bytes(fwd, 100, ws));
  EXPECT_EQ(ws, 0);
}

TEST(CudaNormKnobs, RoundTripAndRules) {
  const auto& schema = nm::knob_schema();
  for (const nm::NormKnobs k : {nm::NormKnobs{}, nm::NormKnobs{.threads_per_row = 256},
                                nm::NormKnobs{.threads_per_row = 32, .rows_per_block = 4, .vec = 0},
                                nm::NormKnobs{.blocks_per_sm = 3}}) {
    const dg::Knobs printed = schema.print(k);
    nm::NormKnobs back;
    ASSERT_TRUE(schema.parse(printed, back).ok()) << dg::knobs_to_string(printed);
    EXPECT_EQ(back.threads_per_row, k.threads_per_row);
    EXPECT_EQ(back.rows_per_block, k.rows_per_block);
    EXPECT_EQ(back.vec, k.vec);
    EXPECT_EQ(back.blocks_per_sm, k.blocks_per_sm);
  }
  EXPECT_TRUE(schema.print(nm::NormKnobs{}).empty());
  const dg::Engine& e = dg::cuda::norm_rowwise_engine();
  auto rejected = [&](const dg::Knobs& k, const std::string& what) {
    const dg::Status s = e.check_knobs(k);
    EXPECT_EQ(s.code(), dg::ErrorCode::INVALID_VALUE) << dg::knobs_to_string(k);
    EXPECT_NE(s.message().find(std::string(kEngine) + ": " + what), std::string::npos) << s.message();
  };
  rejected({{"threads_per_row", 48}}, "knob threads_per_row=48 is not one of 0, 32, 64, 128, 256, 512, 1024");
  rejected({{"rows_per_block", 16}}, "knob rows_per_block=16 is not one of 0, 1, 2, 4, 8");
  rejected({{"threads_per_row", 64}, {"rows_per_block", 2}}, "knobs rows_per_block=2,threads_per_row=64: "
                                                             "rows_per_block above 1 needs threads_per_row=32");
  rejected({{"blocks_per_sm", 9}}, "knob blocks_per_sm=9 is not in 0..8");
  rejected({{"tile", 1}}, "no knob 'tile'");
}

TEST(CudaNormKnobs, KnobSpaceIsAccepted) {
  gemm_test::FakeHopper hopper;
  for (bool backward : {false, true})
    for (int64_t cols : {64, 4096, 65536}) {
      dg::Graph g;
      if (backward) add_backward(g, false, {8, cols}, {T::HALF, T::HALF, T::FLOAT}, true);
      else add_forward(g, false, {8, cols}, {T::HALF, T::HALF, T::FLOAT}, false, true);
      nm::NormProblem pr;
      std::string why;
      dg::Partition p;
      ASSERT_TRUE(describe(g, pr, why, &p));
      const dg::Engine& e = dg::cuda::norm_rowwise_engine();
      const auto space = e.knob_space(p, hopper.target);
      EXPECT_GE(space.size(), 2u);
      for (const auto& k : space) {
        EXPECT_TRUE(e.check_knobs(k).ok()) << dg::knobs_to_string(k);
        EXPECT_LT(e.estimate_seconds(p, hopper.target, k), 1.0);
      }
    }
}

// Each rejection names the node or tensor and the rule.
void expect_refused(dg::Graph& g, const std::string& reason) {
  nm::NormProblem pr;
  std::string why;
  const auto described = describe(g, pr, why);
  EXPECT_FALSE(described);
  EXPECT_NE(why.find(reason), std::string::npos) << "got: " << why << " / " << described.message();
}

TEST(CudaNormRejects, RowsThatAreNotPacked) {
  dg::Graph a;  // X with its last two dims transposed
  add_forward(a, true, {4, 6, 8}, {T::HALF, T::HALF, T::HALF}, true, false, {48, 1, 6});
  expect_refused(a, "node 'ln' (layernorm), tensor 'X': stride 6 of dim 2 breaks the packed-row rule (every dim but "
                    "the first packed row-major, innermost stride 1; this dim needs stride 1)");
  dg::Graph b;  // a padded row is still a packed row; overlapping output rows are not
  add_forward(b, false, {4, 8}, {T::HALF, T::HALF, T::HALF}, false, false, {16, 1});
  nm::NormProblem pr;
  std::string why;
  ASSERT_TRUE(describe(b, pr, why));
  EXPECT_EQ(pr.x_pitch, 16);
  EXPECT_EQ(pr.vec_width, 8);
}

TEST(CudaNormRejects, TypesFusedEpiloguesAndOtherOps) {
  dg::Graph a;
  add_forward(a, true, {4, 8}, {T::DOUBLE, T::FLOAT, T::FLOAT}, true, false);
  expect_refused(a, "node 'ln' (layernorm), tensor 'X': data type DOUBLE is not supported (FLOAT, HALF and BFLOAT16 are)");
  dg::Graph b;  // statistics other than FLOAT
  add_forward(b, false, {4, 8}, {T::FLOAT, T::FLOAT, T::FLOAT}, false, true)[1]->set_data_type(T::HALF);
  expect_refused(b, "node 'rms' (rmsnorm), tensor 'rms::INV_RMS': data type HALF is not supported (statistics are FLOAT)");
  dg::Graph c;
  auto y = add_forward(c, true, {4, 8}, {T::FLOAT, T::FLOAT, T::FLOAT}, true, false)[0];
  c.relu(y)->set_output(true);
  y->set_output(false);
  expect_refused(c, "the partition has 2 nodes; this engine runs a lone layernorm, rmsnorm or backward node");
  dg::Graph d;
  add_backward(d, true, {4, 8}, {T::FLOAT, T::FLOAT, T::FLOAT}, true);
  d.set_compute_data_type(T::DOUBLE);  // the node takes the graph's compute type when it builds
  expect_refused(d, "node 'dln' (layernorm_backward): compute type DOUBLE is not supported (fp32 arithmetic)");
  dg::Graph f;  // rows past what the column sums' second pass can launch
  add_forward(f, false, {1, int64_t{1} << 37}, {T::HALF, T::HALF, T::HALF}, false, false);
  expect_refused(f, "tensor 'X': the row length 137438953472 is above 68719476735");
  dg::Graph e;
  e.relu(declare(e, "X", {4, 8}, T::FLOAT))->set_output(true);
  expect_refused(e, "is not a layernorm, rmsnorm or their backward");
}

// The gate (common/gpu_checked) holds back the names on its list until DNNGRAPH_UNCHECKED_ENGINES
// lists them (whole names only); cuda_norm_rowwise left the library's list once its GPU tests had
// passed on an H200 (2026-12-05), the fused genstats and the register epilogue's boxed form on an
// H100 the same day, the conv engine's split clusters and the SDPA engine's three-stage ring on
// 2026-12-06, the conv engine's clusters of 8 along N later that day, cuda_pool_direct's
// channels-vector pooling and resizing and the 3xTF32 matmuls on 2026-12-07, the matmul's stream-K
// tail on 2026-12-08 (an H100). On the list: the FP8 matmuls (written 2026-12-08 without a GPU).
TEST(CudaNormRejects, GateHoldsBackListedNamesOnly) {
  constexpr std::array<std::string_view, 1> list{"cuda_new_kernel"};
  ASSERT_EQ(dg::cuda::held_back_list().size(), 1u);
  EXPECT_EQ(dg::cuda::held_back_list()[0], "gemm_fp8");
  {
    ScopedEnv env("DNNGRAPH_UNCHECKED_ENGINES", nullptr);
    EXPECT_TRUE(dg::cuda::held_back("gemm_fp8"));
    EXPECT_FALSE(dg::cuda::held_back("gemm_stream_k"));
    EXPECT_FALSE(dg::cuda::held_back("gemm_tf32x3"));
    EXPECT_FALSE(dg::cuda::held_back("pool_channels_resize"));
    EXPECT_FALSE(dg::cuda::held_back("pool_channels"));
    EXPECT_FALSE(dg::cuda::held_back("conv_cluster_n8"));
    EXPECT_FALSE(dg::cuda::held_back("conv_halo"));
    EXPECT_FALSE(dg::cuda::held_back("conv_split_cluster_n64"));
    EXPECT_FALSE(dg::cuda::held_back("cuda_pool_direct"));
    EXPECT_FALSE(dg::cuda::held_back("conv_split_cluster"));
    EXPECT_FALSE(dg::cuda::held_back(kEngine));
    EXPECT_FALSE(dg::cuda::held_back("genstats"));
    EXPECT_FALSE(dg::cuda::held_back("register_epilogue_boxed"));
    EXPECT_FALSE(dg::cuda::held_back("sdpa_three_stage_ring"));
    EXPECT_TRUE(dg::cuda::held_back("cuda_new_kernel", list));
    std::string why;
    EXPECT_FALSE(dg::cuda::checked_on_gpu("cuda_new_kernel", "", why, list));
    EXPECT_EQ(why, "not yet checked against ref on a GPU, so not offered (DNNGRAPH_UNCHECKED_ENGINES="
                   "cuda_new_kernel offers it, for the GPU tests)");
    EXPECT_FALSE(dg::cuda::held_back("cuda_gemm_mma_sync", list));  // names not on the list pass
  }
  {
    ScopedEnv env("DNNGRAPH_UNCHECKED_ENGINES", "cuda_norm_rowwise, cuda_new_kernel");
    EXPECT_FALSE(dg::cuda::held_back("cuda_new_kernel", list));
  }
  {
    ScopedEnv env("DNNGRAPH_UNCHECKED_ENGINES", "cuda_new_kernel_v2,cuda_norm_rowwise");
    EXPECT_TRUE(dg::cuda::held_back("cuda_new_kernel", list));  // whole names only
  }
  // On a CPU handle the engine says it needs a CUDA one.
  dg::Graph g;
  add_forward(g, true, {4, 8}, {T::FLOAT, T::FLOAT, T::FLOAT}, true, false);
  dg::Handle cpu(dg::Device::cpu());
  ASSERT_TRUE(g.validate().ok());
  ASSERT_TRUE(g.build_operation_graph(cpu).ok());
  (void)g.create_execution_plans({dg::HeurMode::FALLBACK});
  EXPECT_NE(g.explain().find(std::string(kEngine) + ": rejected: runs on CUDA handles"), std::string::npos)
      << g.explain();
}

}  // namespace
