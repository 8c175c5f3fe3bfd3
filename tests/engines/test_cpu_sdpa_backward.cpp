// cpu_sdpa_backward_flash against the reference engine: seeded random shapes (lengths that are not
// multiples of the 48-wide tiles, GQA/MQA, BHSD and BSHD strides, every mask, padding masks,
// fp32/bf16/fp16), gradients poisoned with NaN; both kernel builds; its rejections.
#include <gtest/gtest.h>

#include <string>

#include "dnngraph/dnngraph.hpp"
#include "engines/cpu/sdpa/flash_kernels.hpp"
#include "sdpa_backward_test_util.hpp"

namespace dg = dnngraph;

namespace {

using sdpa_test::Case;
using sdpa_test::Grads;
using sdpa_test::Mask;

double tolerance(dg::DataType t) {
  switch (t) {
    case dg::DataType::HALF: return 4e-3;
    case dg::DataType::BFLOAT16: return 2e-2;
    default: return 5e-5;
  }
}

void check_against_ref(const Case& c, uint32_t seed) {
  const sdpa_test::BwdInputs in = sdpa_test::make_backward_inputs(c, seed);
  const Grads want = sdpa_test::run_backward_on_cpu(c, in, "ref");
  const int64_t plans = dg::cpu::sdpa::cpu_has_avx2_fma() ? 2 : 1;
  for (int64_t i = 0; i < plans; ++i) {
    const Grads got = sdpa_test::run_backward_on_cpu(c, in, "cpu_sdpa_backward_flash", i);
    EXPECT_EQ(got.plan_name.rfind("cpu_sdpa_backward_flash[avx2=", 0), 0u) << got.plan_name;
    sdpa_test::expect_grads_close(c, got, want, tolerance(c.type));
  }
}

}  // namespace

TEST(CpuSdpaBackwardFlash, MatchesRefOnRandomShapes) {
  const dg::DataType types[] = {dg::DataType::FLOAT, dg::DataType::BFLOAT16, dg::DataType::HALF};
  const int64_t head_dims[] = {1, 8, 13, 24, 40, 64};
  auto vary = [&](test_random::IntPicker& pick, int trial, Case& c) {
    c.d = head_dims[pick(0, 5)];
    c.dv = trial % 3 == 0 ? head_dims[pick(0, 5)] : c.d;
    c.type = types[trial % 3];
    c.bshd = trial % 2 == 1;
    sdpa_test::pick_mask_and_bounds(pick, c, trial, 40, 20);
    c.padding = trial % 4 == 3;
    if (trial % 7 == 6) c.scale = 0.2;
  };
  sdpa_test::for_each_random_case<Case>(2025, 24, 110, 120, vary, [](const Case& c, int trial) {
    check_against_ref(c, static_cast<uint32_t>(trial + 1));
  });
}

TEST(CpuSdpaBackwardFlash, TileEdges) {
  Case base;
  base.h = 2;
  base.hk = 1;
  base.d = 32;
  base.dv = 16;
  base.left = 50;
  uint32_t seed = 300;
  for (const Case& c : sdpa_test::tile_edge_cases(base, {{48, 48}, {49, 47}, {97, 96}, {1, 100}, {100, 1}}))
    check_against_ref(c, ++seed);
}

TEST(CpuSdpaBackwardFlash, FullyMaskedAndPaddedRowsMatchRef) {
  Case c;
  c.h = 2;
  const sdpa_test::Inputs fwd = sdpa_test::fully_masked_inputs(c, 70);  // the first 40 rows see no key
  sdpa_test::BwdInputs in;
  in.fwd = fwd;
  sdpa_test::forward_on_ref(c, in.fwd, in.o, in.stats);
  in.d_o = sdpa_test::Tensor4({c.b, c.h, c.sq, c.dv}, c.type, c.bshd);
  std::mt19937 rng(5);
  in.d_o.fill_random(rng);
  const Grads want = sdpa_test::run_backward_on_cpu(c, in, "ref");
  const Grads got = sdpa_test::run_backward_on_cpu(c, in, "cpu_sdpa_backward_flash");
  sdpa_test::expect_grads_close(c, got, want, tolerance(c.type));
}

TEST(CpuSdpaBackwardFlash, RefusesOtherOpsAndTypes) {
  // An FP8 forward's gradients are not sdpa_backward's (inference refuses them first); a graph of
  // sdpa alone is not this engine's.
  Case c;
  c.sq = c.skv = 4;
  const sdpa_test::Inputs in = sdpa_test::make_inputs(c, 1);
  dg::Handle handle(dg::Device::cpu());
  dg::Graph g;
  g.set_io_data_type(c.type).set_compute_data_type(dg::DataType::FLOAT).select_engines({"cpu_sdpa_backward_flash"});
  sdpa_test::add_sdpa(g, c, in);
  ASSERT_TRUE(g.validate().ok());
  ASSERT_TRUE(g.build_operation_graph(handle).ok());
  ASSERT_TRUE(g.create_execution_plans({dg::HeurMode::A}).ok());
  const dg::Status s = g.check_support(handle);
  EXPECT_FALSE(s.ok());
  EXPECT_NE(g.explain().find("is sdpa, not sdpa_backward"), std::string::npos) << g.explain();
}

TEST(CpuSdpaBackwardFlash, SerializedPlanGivesTheSameGradients) {
  Case c;
  c.b = 2, c.h = 4, c.hk = 2, c.sq = 50, c.skv = 70, c.d = c.dv = 16, c.mask = Mask::CAUSAL_BOTTOM_RIGHT;
  c.padding = true;
  const sdpa_test::BwdInputs in = sdpa_test::make_backward_inputs(c, 21);
  const Grads direct = sdpa_test::run_backward_on_cpu(c, in, "cpu_sdpa_backward_flash");
  dg::Handle handle(dg::Device::cpu());
  dg::Graph g;
  g.set_io_data_type(c.type).set_compute_data_type(dg::DataType::FLOAT).select_engines({"cpu_sdpa_backward_flash"});
  sdpa_test::BwdTensors t = sdpa_test::add_sdpa_backward(g, c, in);
  ASSERT_TRUE(sdpa_test::plan_mode_a(g, handle));
  ASSERT_TRUE(g.build_plans(handle).ok());
  std::vector<uint8_t> blob;
  ASSERT_TRUE(g.serialize(blob).ok());
  dg::Graph back;
  const dg::Status s = back.deserialize(handle, blob);
  ASSERT_TRUE(s.ok()) << s.to_string();
  Grads got = sdpa_test::poisoned_grads(c);
  std::vector<int32_t> sq = in.fwd.seq_q, skv = in.fwd.seq_kv;
  auto ptr = [](const sdpa_test::Tensor4& x) { return const_cast<unsigned char*>(x.bytes.data()); };
  // A deserialized graph is addressed by uid: the tensors' uids as the first graph gave them.
  dg::UidVariantPack pack{{t.Q->get_uid(), ptr(in.fwd.q)}, {t.K->get_uid(), ptr(in.fwd.k)},
                          {t.V->get_uid(), ptr(in.fwd.v)}, {t.O->get_uid(), ptr(in.o)},
                          {t.DO->get_uid(), ptr(in.d_o)},  {t.STATS->get_uid(), ptr(in.stats)},
                          {t.DQ->get_uid(), got.dq.bytes.data()}, {t.DK->get_uid(), got.dk.bytes.data()},
                          {t.DV->get_uid(), got.dv.bytes.data()}, {t.SQ->get_uid(), sq.data()},
                          {t.SKV->get_uid(), skv.data()}};
  const dg::Status e = back.execute(handle, pack, nullptr);
  ASSERT_TRUE(e.ok()) << e.to_string();
  EXPECT_EQ(got.dq.bytes, direct.dq.bytes);
  EXPECT_EQ(got.dk.bytes, direct.dk.bytes);
  EXPECT_EQ(got.dv.bytes, direct.dv.bytes);
}

TEST(CpuSdpaBackwardFlash, OnlyTheGradientsTheGraphReadsAreComputed) {
  Case c;
  c.h = 2, c.sq = 60, c.skv = 50, c.d = c.dv = 8, c.mask = Mask::CAUSAL;
  const sdpa_test::BwdInputs in = sdpa_test::make_backward_inputs(c, 41);
  const Grads want = sdpa_test::run_backward_on_cpu(c, in, "ref");
  for (int keep = 0; keep < 2; ++keep) {  // 0: dQ alone; 1: dK and dV alone
    dg::Handle handle(dg::Device::cpu());
    dg::Graph g;
    g.set_io_data_type(c.type).set_compute_data_type(dg::DataType::FLOAT).select_engines({"cpu_sdpa_backward_flash"});
    const sdpa_test::BwdTensors t = sdpa_test::add_sdpa_backward(g, c, in);
    (keep == 0 ? t.DK : t.DQ)->set_output(false);
    if (keep == 0) t.DV->set_output(false);
    ASSERT_TRUE(sdpa_test::plan_mode_a(g, handle));
    ASSERT_TRUE(g.build_plans(handle).ok());
    Grads got = sdpa_test::poisoned_grads(c);
    auto ptr = [](const sdpa_test::Tensor4& x) { return const_cast<unsigned char*>(x.bytes.data()); };
    dg::VariantPack pack{{t.Q, ptr(in.fwd.q)}, {t.K, ptr(in.fwd.k)}, {t.V, ptr(in.fwd.v)},
                         {t.O, ptr(in.o)},     {t.DO, ptr(in.d_o)},  {t.STATS, ptr(in.stats)}};
    if (keep == 0) pack[t.DQ] = got.dq.bytes.data();
    else pack[t.DK] = got.dk.bytes.data(), pack[t.DV] = got.dv.bytes.data();
    const dg::Status s = g.execute(handle, pack, nullptr);
    ASSERT_TRUE(s.ok()) << s.to_string();
    if (keep == 0) {
      sdpa_test::expect_close(c, got.dq, want.dq, 1e-4, "dQ alone");
    } else {
      sdpa_test::expect_close(c, got.dk, want.dk, 1e-4, "dK without dQ");
      sdpa_test::expect_close(c, got.dv, want.dv, 1e-4, "dV without dQ");
    }
  }
}
