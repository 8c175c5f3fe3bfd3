// cpu_sdpa_flash against the reference engine: seeded random shapes (sequence lengths that are not
// multiples of the tiles, GQA/MQA, BHSD and BSHD strides, every mask, padding, stats, fp32/bf16/fp16),
// outputs poisoned with NaN; both kernel builds (avx2=1 and avx2=0); the engine's rejections.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <random>
#include <string>

#include "core/dtype.hpp"
#include "dnngraph/dnngraph.hpp"
#include "engines/cpu/sdpa/sdpa_flash.hpp"
#include "engines/cpu/sdpa/flash_kernels.hpp"
#include "graph/graph_impl.hpp"
#include "planning/plan_set.hpp"
#include "sdpa_test_util.hpp"

namespace dg = dnngraph;

namespace {

using sdpa_test::Case;
using sdpa_test::Inputs;
using sdpa_test::make_inputs;
using sdpa_test::Mask;
using Buffer = sdpa_test::Tensor4;

struct Outputs {
  Buffer o, stats;
  std::string plan_name;
};

// Builds the graph restricted to `engine`, and runs its plan `plan_index` on the inputs.
Outputs run(const Case& c, const Inputs& in, const std::string& engine, int64_t plan_index) {
  dg::Handle handle(dg::Device::cpu());
  dg::Graph g;
  g.set_io_data_type(c.type).set_compute_data_type(dg::DataType::FLOAT).select_engines({engine});
  const auto [Q, K, V, SQ, SKV, O, STATS] = sdpa_test::add_sdpa(g, c, in);
  Outputs out;
  sdpa_test::poisoned_results(c, out.o, out.stats);
  if (!sdpa_test::plan_mode_a(g, handle)) return out;
  EXPECT_TRUE(g.build_plan_at_index(handle, plan_index).ok());
  EXPECT_TRUE(g.get_plan_name_at_index(plan_index, out.plan_name).ok());
  for (size_t i = 0; i < 4; ++i)  // O takes Q's layout (a size-1 dim's stride is free)
    EXPECT_TRUE(out.o.dims[i] == 1 || O->get_stride()[i] == out.o.strides[i]) << "O stride " << i;
  std::vector<int32_t> sq = in.seq_q, skv = in.seq_kv;
  dg::VariantPack pack{{Q, const_cast<unsigned char*>(in.q.bytes.data())},
                       {K, const_cast<unsigned char*>(in.k.bytes.data())},
                       {V, const_cast<unsigned char*>(in.v.bytes.data())},
                       {O, out.o.bytes.data()}};
  if (c.padding) pack[SQ] = sq.data(), pack[SKV] = skv.data();
  if (c.stats) pack[STATS] = out.stats.bytes.data();
  const dg::Status s = g.execute_plan_at_index(handle, pack, nullptr, plan_index);
  EXPECT_TRUE(s.ok()) << s.to_string();
  return out;
}

double tolerance(dg::DataType t) {
  switch (t) {
    case dg::DataType::HALF: return 3e-3;
    case dg::DataType::BFLOAT16: return 1e-2;
    default: return 2e-5;
  }
}

// cpu_sdpa_flash's plans (avx2=1 and avx2=0 where the CPU has AVX2) against ref.
void check_against_ref(const Case& c, uint32_t seed) {
  const Inputs in = make_inputs(c, seed);
  const Outputs want = run(c, in, "ref", 0);
  const int64_t plans = dg::cpu::sdpa::cpu_has_avx2_fma() ? 2 : 1;
  for (int64_t i = 0; i < plans; ++i) {
    const Outputs got = run(c, in, "cpu_sdpa_flash", i);
    EXPECT_EQ(got.plan_name.rfind("cpu_sdpa_flash[avx2=", 0), 0u) << got.plan_name;
    sdpa_test::expect_close(c, got.o, want.o, tolerance(c.type), "O of " + got.plan_name);
    if (c.stats) sdpa_test::expect_close(c, got.stats, want.stats, 2e-5, "STATS of " + got.plan_name);
  }
}

}  // namespace

TEST(CpuSdpaFlash, MatchesRefOnRandomShapes) {
  const dg::DataType types[] = {dg::DataType::FLOAT, dg::DataType::BFLOAT16, dg::DataType::HALF};
  const int64_t head_dims[] = {1, 8, 13, 24, 40, 64, 128};
  auto vary = [&](test_random::IntPicker& pick, int trial, Case& c) {
    c.d = head_dims[pick(0, 6)];
    c.dv = trial % 3 == 0 ? head_dims[pick(0, 6)] : c.d;
    c.type = types[trial % 3];
    c.bshd = trial % 2 == 1;
    sdpa_test::pick_mask_and_bounds(pick, c, trial, 40, 20);
    c.padding = trial % 4 == 3;
    c.stats = trial % 3 != 2;
  };
  sdpa_test::for_each_random_case<Case>(2024, 30, 110, 140, vary, [](const Case& c, int trial) {
    check_against_ref(c, static_cast<uint32_t>(trial + 1));
  });
}

TEST(CpuSdpaFlash, TileEdgesAndLongSequences) {
  // Query blocks of 96 rows (in GEMM blocks of 6) and key blocks of 64: lengths just below, at and
  // above several tiles.
  Case base;
  base.h = 2;
  base.d = 32;
  base.dv = 16;
  base.left = 70;
  base.stats = true;
  uint32_t seed = 100;
  for (const Case& c : sdpa_test::tile_edge_cases(
           base, {{96, 64}, {97, 65}, {95, 63}, {193, 129}, {200, 200}, {1, 193}, {50, 47}}))
    check_against_ref(c, ++seed);
}

TEST(CpuSdpaFlash, FullyMaskedAndPaddedRowsAreZeroNotNaN) {
  Case c;
  const Inputs in = sdpa_test::fully_masked_inputs(c, 70);  // the first 40 rows see no key
  const Outputs got = run(c, in, "cpu_sdpa_flash", 0);
  const Outputs want = run(c, in, "ref", 0);
  sdpa_test::expect_close(c, got.o, want.o, tolerance(c.type), "O");
  sdpa_test::expect_close(c, got.stats, want.stats, 2e-5, "STATS");
  sdpa_test::expect_masked_rows_zero(c, got.o, got.stats, got.plan_name);
}

TEST(CpuSdpaFlash, IsChosenAheadOfRef) {
  dg::Handle handle(dg::Device::cpu());
  dg::Graph g;
  g.set_io_data_type(dg::DataType::BFLOAT16).set_compute_data_type(dg::DataType::FLOAT);
  Buffer q({1, 4, 33, 16}, dg::DataType::BFLOAT16, false), kv({1, 2, 40, 16}, dg::DataType::BFLOAT16, true);
  auto [O, STATS] = g.sdpa(q.declare(g, "Q"), kv.declare(g, "K"), kv.declare(g, "V"),
                           dg::SdpaAttr().set_name("attn").set_causal_mask(true));
  O->set_output(true);
  ASSERT_TRUE(g.validate().ok());
  ASSERT_TRUE(g.build_operation_graph(handle).ok());
  ASSERT_TRUE(g.create_execution_plans({dg::HeurMode::A, dg::HeurMode::FALLBACK}).ok());
  const std::string text = g.explain();
  EXPECT_NE(text.find("cpu_sdpa_flash: accepted"), std::string::npos) << text;
  std::string name;
  ASSERT_TRUE(g.get_plan_name_at_index(0, name).ok());
  EXPECT_EQ(name.rfind("cpu_sdpa_flash", 0), 0u) << name;
  ASSERT_TRUE(g.get_plan_name_at_index(g.get_execution_plan_count() - 1, name).ok());
  EXPECT_EQ(name, "ref (reference, not for speed)");
}

namespace {

// sdpa "attn" over Q, K and V [1, 1, 4, 8] of type t, in a graph of io type `io`; returns O.
dg::TensorPtr small_sdpa(dg::Graph& g, dg::DataType io, dg::DataType t) {
  g.set_io_data_type(io);
  Buffer q({1, 1, 4, 8}, t, false);
  return g.sdpa(q.declare(g, "Q"), q.declare(g, "K"), q.declare(g, "V"), dg::SdpaAttr().set_name("attn"))[0];
}

}  // namespace

TEST(CpuSdpaFlash, RejectsWithReasons) {
  dg::Handle handle(dg::Device::cpu());
  // FP8 inputs: rejected by type.
  {
    dg::Graph g;
    const dg::TensorPtr O = small_sdpa(g, dg::DataType::HALF, dg::DataType::FP8_E4M3);
    O->set_output(true);
    ASSERT_TRUE(g.build_operation_graph(handle).ok());
    ASSERT_TRUE(g.create_execution_plans({dg::HeurMode::A}).ok());
    const std::string text = g.explain();
    EXPECT_NE(text.find("cpu_sdpa_flash: rejected: node 'attn', tensor 'Q': data type FP8_E4M3 is not supported"),
              std::string::npos)
        << text;
  }
  // sdpa -> pointwise fused: rejected whole; the planner then splits it and the sdpa piece is ours.
  {
    dg::Graph g;
    const dg::TensorPtr O = small_sdpa(g, dg::DataType::FLOAT, dg::DataType::FLOAT);
    g.relu(O)->set_output(true);
    ASSERT_TRUE(g.build_operation_graph(handle).ok());
    std::vector<dg::Partition> fused;
    ASSERT_TRUE(dg::partition_graph(*impl_of(g).ir, fused).ok());
    ASSERT_EQ(fused.size(), 1u);
    dg::Target target;
    target.handle = &impl_of(handle);
    const dg::Support s = dg::cpu::sdpa_flash_engine().check(fused[0], target);
    EXPECT_FALSE(s.ok);
    EXPECT_EQ(s.reason, "takes a partition of one sdpa node, this one has 2 nodes");
    ASSERT_TRUE(g.create_execution_plans({dg::HeurMode::A}).ok());
    std::string name;
    ASSERT_TRUE(g.get_plan_name_at_index(0, name).ok());
    EXPECT_EQ(name.rfind("cpu_sdpa_flash", 0), 0u) << name;
  }
  // Not a CPU target: the engine says so (no GPU here, so ask the engine directly).
  {
    dg::Graph g;
    const dg::TensorPtr O = small_sdpa(g, dg::DataType::FLOAT, dg::DataType::FLOAT);
    O->set_output(true);
    ASSERT_TRUE(g.build_operation_graph(handle).ok());
    ASSERT_TRUE(g.create_execution_plans({dg::HeurMode::A}).ok());
    dg::HandleImpl gpu;
    gpu.device = dg::Device::cuda(0);
    dg::Target target;
    target.handle = &gpu;
    const dg::Support s = dg::cpu::sdpa_flash_engine().check(impl_of(g).plans->parts[0].partition, target);
    EXPECT_FALSE(s.ok);
    EXPECT_EQ(s.reason, "runs on the CPU only, not on cuda:0");
  }
}

namespace {

// Each kernel build's GEMM tiles (AVX-512, AVX2: whichever this CPU runs) against the portable
// build on random operands, with row blocks that narrow columns and the reduction; C starts random
// and is compared whole, so a stray write shows.
TEST(CpuSdpaKernels, EveryGemmBuildMatchesThePortableOne) {
  namespace sd = dg::cpu::sdpa;
  std::mt19937 rng(91);
  std::uniform_real_distribution<float> u(-1.0f, 1.0f);
  const auto builds = sd::kernel_builds();
  for (int64_t m : {6, 18})
    for (int64_t n : {16, 48, 64})
      for (int64_t k : {1, 7, 64})
        for (bool narrowed : {false, true})
          for (bool accumulate : {false, true}) {
            const int64_t lda = k + 3, ldb = n + 5, ldc = n + 7;
            std::vector<float> a(static_cast<size_t>(m * lda)), b(static_cast<size_t>(k * ldb));
            for (float& x : a) x = u(rng);
            for (float& x : b) x = u(rng);
            std::vector<sd::RowBlock> blocks;
            for (int64_t i = 0; i < m / sd::kMr; ++i)  // block i: columns from 16 i on, K from i on
              blocks.push_back(narrowed ? sd::RowBlock{std::min<int64_t>(16 * i, n - 16), n, std::min(i, k - 1), k}
                                        : sd::RowBlock{0, n, 0, k});
            std::vector<float> c0(static_cast<size_t>(m * ldc));
            for (float& x : c0) x = u(rng);
            std::vector<float> want = c0;
            builds[0]->gemm(m, n, k, a.data(), lda, b.data(), ldb, want.data(), ldc, accumulate, blocks.data());
            for (size_t bi = 1; bi < builds.size(); ++bi) {
              std::vector<float> got = c0;
              builds[bi]->gemm(m, n, k, a.data(), lda, b.data(), ldb, got.data(), ldc, accumulate, blocks.data());
              for (size_t e = 0; e < got.size(); ++e)
                ASSERT_NEAR(got[e], want[e], 1e-5f * static_cast<float>(k + 1))
                    << builds[bi]->isa << " m " << m << " n " << n << " k " << k << " element " << e;
            }
          }
}

}  // namespace
