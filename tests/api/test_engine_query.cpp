// Engines by id (src/planning/engine_query.cpp): the engine count, knobs per engine, plans made
// from (engine, knobs), behaviour notes; every error asserted by code and message.
#include <gtest/gtest.h>

#include <cmath>
#include <map>
#include <string>
#include <vector>

#include "common/random_data.hpp"
#include "dnngraph/dnngraph.hpp"
#include "planning/engine.hpp"

namespace dg = dnngraph;

namespace {

constexpr int64_t kM = 9, kK = 13, kN = 7;

void expect_error(const dg::Status& s, dg::ErrorCode code, const std::string& fragment) {
  EXPECT_EQ(s.code(), code) << s.to_string();
  EXPECT_NE(s.message().find(fragment), std::string::npos) << "message: " << s.message() << "\nwanted: " << fragment;
}

struct MatmulRelu {
  dg::Graph g;
  dg::TensorPtr a, b, y;
  MatmulRelu() {
    g.set_io_data_type(dg::DataType::FLOAT).set_compute_data_type(dg::DataType::FLOAT);
    a = g.tensor(dg::TensorAttr().set_name("A").set_dim({1, kM, kK}).set_stride({kM * kK, kK, 1}));
    b = g.tensor(dg::TensorAttr().set_name("B").set_dim({1, kK, kN}).set_stride({kK * kN, kN, 1}));
    y = g.relu(g.matmul(a, b, dg::MatmulAttr().set_name("mm")));
    y->set_output(true).set_name("Y");
  }
};

const dg::EngineKnob* find_knob(const std::vector<dg::EngineKnob>& knobs, const std::string& name) {
  for (const auto& k : knobs)
    if (k.name == name) return &k;
  return nullptr;
}

int64_t id_of(const char* name) { return dg::engine_id_by_name(name); }

TEST(EngineQuery, CallsBeforeBuildOperationGraphAreOutOfOrder) {
  MatmulRelu m;
  int64_t count = 0;
  expect_error(m.g.get_engine_count(count), dg::ErrorCode::INVALID_CALL_ORDER,
               "get_engine_count: call build_operation_graph(handle) first");
  std::vector<dg::EngineKnob> knobs;
  expect_error(m.g.get_knobs_for_engine(0, knobs), dg::ErrorCode::INVALID_CALL_ORDER,
               "get_knobs_for_engine: call build_operation_graph(handle) first");
  expect_error(m.g.create_execution_plan(0, {}), dg::ErrorCode::INVALID_CALL_ORDER,
               "create_execution_plan: call build_operation_graph(handle) first");
}

TEST(EngineQuery, CountCoversEveryRegistryId) {
  MatmulRelu m;
  dg::Handle h(dg::Device::cpu());
  ASSERT_TRUE(m.g.validate().ok());
  ASSERT_TRUE(m.g.build_operation_graph(h).ok());
  int64_t count = 0;
  ASSERT_TRUE(m.g.get_engine_count(count).ok());
  for (const auto& reg : dg::engine_registry()) EXPECT_LT(reg.id, count) << reg.engine->name();
  EXPECT_EQ(count, static_cast<int64_t>(dg::engine_registry().size()));  // ids are dense
}

TEST(EngineQuery, KnobsOfAnEngineAreItsSettingsForTheGraph) {
  MatmulRelu m;
  dg::Handle h(dg::Device::cpu());
  ASSERT_TRUE(m.g.validate().ok());
  ASSERT_TRUE(m.g.build_operation_graph(h).ok());
  std::vector<dg::EngineKnob> knobs;
  ASSERT_TRUE(m.g.get_knobs_for_engine(id_of("cpu_gemm_packed"), knobs).ok());
  const dg::EngineKnob* cfg = find_knob(knobs, "kernel_cfg");
  ASSERT_NE(cfg, nullptr);
  EXPECT_EQ(cfg->min_value, 0);
  EXPECT_EQ(cfg->stride, 1);
  EXPECT_EQ(static_cast<int64_t>(cfg->values.size()), cfg->max_value + 1);
  const dg::EngineKnob* isa = find_knob(knobs, "isa");  // one setting per ISA this CPU has
  ASSERT_NE(isa, nullptr);
  EXPECT_EQ(isa->values.size(), cfg->values.size());
  ASSERT_TRUE(m.g.get_knobs_for_engine(0, knobs).ok());  // ref: one setting, no knobs of its own
  ASSERT_EQ(knobs.size(), 1u);
  EXPECT_EQ(knobs[0].name, "kernel_cfg");
  EXPECT_EQ(knobs[0].max_value, 0);
}

TEST(EngineQuery, UnknownAndUnsupportingEnginesAreErrors) {
  MatmulRelu m;
  dg::Handle h(dg::Device::cpu());
  ASSERT_TRUE(m.g.validate().ok());
  ASSERT_TRUE(m.g.build_operation_graph(h).ok());
  std::vector<dg::EngineKnob> knobs;
  expect_error(m.g.get_knobs_for_engine(999, knobs), dg::ErrorCode::INVALID_VALUE,
               "get_knobs_for_engine: engine id 999 is not an engine's (ids run 0..");
  expect_error(m.g.get_knobs_for_engine(-1, knobs), dg::ErrorCode::INVALID_VALUE, "engine id -1 is not an engine's");
  expect_error(m.g.get_knobs_for_engine(id_of("cuda_gemm_mma_sync"), knobs), dg::ErrorCode::GRAPH_NOT_SUPPORTED,
               "get_knobs_for_engine: engine 16 (cuda_gemm_mma_sync) does not support the partition of nodes 'mm'");
  expect_error(m.g.create_execution_plan(id_of("cpu_sdpa_flash"), {}), dg::ErrorCode::GRAPH_NOT_SUPPORTED,
               "create_execution_plan: engine 8 (cpu_sdpa_flash) does not support the partition of nodes 'mm'");
}

TEST(EngineQuery, BadKnobsAreErrorsThatNameTheEngine) {
  MatmulRelu m;
  dg::Handle h(dg::Device::cpu());
  ASSERT_TRUE(m.g.validate().ok());
  ASSERT_TRUE(m.g.build_operation_graph(h).ok());
  const int64_t gemm = id_of("cpu_gemm_packed");
  expect_error(m.g.create_execution_plan(gemm, {{"kernel_cfg", 99}}), dg::ErrorCode::INVALID_VALUE,
               "create_execution_plan: engine 2 (cpu_gemm_packed): knob kernel_cfg=99 is not in 0..");
  expect_error(m.g.create_execution_plan(gemm, {{"tile_q", 4}}), dg::ErrorCode::INVALID_VALUE,
               "create_execution_plan: engine 2 (cpu_gemm_packed): cpu_gemm_packed: no knob 'tile_q'");
  expect_error(m.g.create_execution_plan(0, {{"kernel_cfg", 1}}), dg::ErrorCode::INVALID_VALUE,
               "engine 0 (ref): knob kernel_cfg=1 is not in 0..0");
  EXPECT_EQ(m.g.get_execution_plan_count(), 0);  // nothing was added
}

std::vector<float> run_plan(const dg::Graph& g, const dg::Handle& h, const MatmulRelu& m, std::vector<float>& a,
                            std::vector<float>& b, int64_t index) {
  std::vector<float> y(kM * kN, std::nanf(""));
  int64_t ws = 0;
  EXPECT_TRUE(g.get_workspace_size_plan_at_index(index, ws).ok());
  std::vector<uint8_t> workspace(static_cast<size_t>(ws));
  const dg::VariantPack pack{{m.a, a.data()}, {m.b, b.data()}, {m.y, y.data()}};
  EXPECT_TRUE(g.execute_plan_at_index(h, pack, workspace.data(), index).ok());
  return y;
}

TEST(EngineQuery, PlansFromEveryKernelCfgRunAndAgreeWithRef) {
  MatmulRelu m;
  dg::Handle h(dg::Device::cpu());
  ASSERT_TRUE(m.g.validate().ok());
  ASSERT_TRUE(m.g.build_operation_graph(h).ok());
  ASSERT_TRUE(m.g.create_execution_plan(0, {}).ok());
  const int64_t gemm = id_of("cpu_gemm_packed");
  std::vector<dg::EngineKnob> knobs;
  ASSERT_TRUE(m.g.get_knobs_for_engine(gemm, knobs).ok());
  const dg::EngineKnob cfg = *find_knob(knobs, "kernel_cfg");
  for (int64_t v = cfg.min_value; v <= cfg.max_value; v += cfg.stride)
    ASSERT_TRUE(m.g.create_execution_plan(gemm, {{"kernel_cfg", v}}).ok());
  ASSERT_TRUE(m.g.create_execution_plan(gemm, {{"kernel_cfg", 0}}).ok());  // a repeat: not added
  ASSERT_EQ(m.g.get_execution_plan_count(), 1 + static_cast<int64_t>(cfg.values.size()));
  std::string name;
  ASSERT_TRUE(m.g.get_plan_name_at_index(0, name).ok());
  EXPECT_EQ(name, "ref (reference, not for speed)");
  ASSERT_TRUE(m.g.get_plan_name_at_index(1, name).ok());
  EXPECT_EQ(name.rfind("cpu_gemm_packed[", 0), 0u) << name;
  ASSERT_TRUE(m.g.check_support(h).ok());
  ASSERT_TRUE(m.g.build_plans(h, dg::BuildPlanPolicy::ALL).ok());
  test_random::UniformFloats draw(7);
  std::vector<float> a = draw.take(kM * kK), b = draw.take(kK * kN);
  const std::vector<float> want = run_plan(m.g, h, m, a, b, 0);
  for (int64_t i = 1; i < m.g.get_execution_plan_count(); ++i) {
    const std::vector<float> got = run_plan(m.g, h, m, a, b, i);
    for (size_t e = 0; e < want.size(); ++e) ASSERT_NEAR(got[e], want[e], 1e-4f * (1 + std::fabs(want[e]))) << i;
  }
  // A plan made here serializes and reloads like any other.
  std::vector<uint8_t> blob;
  ASSERT_TRUE(m.g.serialize(blob).ok());
  dg::Graph back;
  ASSERT_TRUE(back.deserialize(h, blob).ok()) << back.explain();
}

TEST(EngineQuery, KnobsPickTheSettingThatHoldsThem) {
  MatmulRelu m;
  dg::Handle h(dg::Device::cpu());
  ASSERT_TRUE(m.g.validate().ok());
  ASSERT_TRUE(m.g.build_operation_graph(h).ok());
  const int64_t gemm = id_of("cpu_gemm_packed");
  std::vector<dg::EngineKnob> knobs;
  ASSERT_TRUE(m.g.get_knobs_for_engine(gemm, knobs).ok());
  const int64_t isa = find_knob(knobs, "isa")->values.front();  // the most portable ISA offered
  ASSERT_TRUE(m.g.create_execution_plan(gemm, {{"isa", isa}}).ok());
  std::string name;
  ASSERT_TRUE(m.g.get_plan_name_at_index(0, name).ok());
  EXPECT_NE(name.find("isa=" + std::to_string(isa)), std::string::npos) << name;
}

TEST(EngineQuery, APlanWithKnobsOutsideTheEnginesListReloads) {
  MatmulRelu m;
  dg::Handle h(dg::Device::cpu());
  ASSERT_TRUE(m.g.validate().ok());
  ASSERT_TRUE(m.g.build_operation_graph(h).ok());
  ASSERT_TRUE(m.g.create_execution_plan(id_of("cpu_gemm_packed"), {{"mc", 8}, {"kc", 8}}).ok());  // not in the list
  std::string name;
  ASSERT_TRUE(m.g.get_plan_name_at_index(0, name).ok());
  EXPECT_NE(name.find("kc=8,mc=8"), std::string::npos) << name;
  ASSERT_TRUE(m.g.check_support(h).ok());
  ASSERT_TRUE(m.g.build_plans(h).ok());
  std::vector<uint8_t> blob;
  ASSERT_TRUE(m.g.serialize(blob).ok());
  dg::Graph back;
  ASSERT_TRUE(back.deserialize(h, blob).ok());
  std::string back_name;
  ASSERT_TRUE(back.get_plan_name_at_index(0, back_name).ok());
  EXPECT_EQ(back_name, name);
  test_random::UniformFloats draw(11);
  std::vector<float> a = draw.take(kM * kK), b = draw.take(kK * kN);
  std::vector<float> y(kM * kN, std::nanf(""));
  const dg::UidVariantPack pack{{m.a->get_uid(), a.data()}, {m.b->get_uid(), b.data()}, {m.y->get_uid(), y.data()}};
  int64_t ws = 0;
  ASSERT_TRUE(back.get_workspace_size(ws).ok());
  std::vector<uint8_t> workspace(static_cast<size_t>(ws));
  ASSERT_TRUE(back.execute(h, pack, workspace.data()).ok());
  for (int64_t i = 0; i < kM; ++i)
    for (int64_t j = 0; j < kN; ++j) {
      double want = 0;
      for (int64_t k = 0; k < kK; ++k) want += double(a[i * kK + k]) * b[k * kN + j];
      ASSERT_NEAR(y[i * kN + j], std::max(want, 0.0), 1e-4) << i << "," << j;
    }
}

TEST(EngineQuery, CannotJoinPlansThatSplitTheGraphDifferently) {
  MatmulRelu m;
  dg::Handle h(dg::Device::cpu());
  ASSERT_TRUE(m.g.validate().ok());
  ASSERT_TRUE(m.g.build_operation_graph(h).ok());
  m.g.select_engines({"ref", "cpu_pointwise_fused"});  // only ref fuses matmul + relu: split per node
  ASSERT_TRUE(m.g.create_execution_plans({dg::HeurMode::A}).ok());
  ASSERT_NE(m.g.explain().find("partition 1"), std::string::npos) << m.g.explain();
  expect_error(m.g.create_execution_plan(0, {}), dg::ErrorCode::INVALID_VALUE,
               "split the graph into 2 partitions, which one engine cannot join");
}

TEST(EngineQuery, BehaviourNotes) {
  MatmulRelu m;
  dg::Handle h(dg::Device::cpu());
  ASSERT_TRUE(m.g.validate().ok());
  ASSERT_TRUE(m.g.build_operation_graph(h).ok());
  std::vector<dg::BehaviorNote> notes{dg::BehaviorNote::CUBLASLT_DEPENDENCY};
  expect_error(m.g.get_behavior_notes_for_plan_at_index(0, notes), dg::ErrorCode::INVALID_CALL_ORDER,
               "get_behavior_notes_for_plan_at_index: call create_execution_plans first");
  ASSERT_TRUE(m.g.create_execution_plans({dg::HeurMode::A}).ok());
  expect_error(m.g.get_behavior_notes(notes), dg::ErrorCode::INVALID_CALL_ORDER,
               "get_behavior_notes: no plan is chosen yet");
  expect_error(m.g.get_behavior_notes_for_plan_at_index(5, notes), dg::ErrorCode::INVALID_VALUE,
               "plan index 5 is outside [0, ");
  ASSERT_TRUE(m.g.get_behavior_notes_for_plan_at_index(0, notes).ok());
  EXPECT_TRUE(notes.empty());  // CPU plans: no runtime compilation, no CUDA graphs, no cuBLASLt
  ASSERT_TRUE(m.g.check_support(h).ok());
  ASSERT_TRUE(m.g.build_plans(h).ok());
  notes = {dg::BehaviorNote::CUBLASLT_DEPENDENCY};
  ASSERT_TRUE(m.g.get_behavior_notes(notes).ok());
  EXPECT_TRUE(notes.empty());
}

}  // namespace
