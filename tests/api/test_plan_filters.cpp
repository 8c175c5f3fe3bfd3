// The cuDNN frontend's plan filters on dnngraph's plan lists: behaviour- and numerical-note
// selection and deselection (what is dropped, and check_support's reason when nothing is left), the workspace
// limit (a plan over it is refused at build, HEURISTICS_CHOICE moves on), the call-order errors,
// the graph key, and plan indices of a graph with a partition no engine runs.
#include <gtest/gtest.h>

#include "common/plan_names.hpp"
#include "dnngraph/dnngraph.hpp"
#include "graph/graph_impl.hpp"
#include "planning/plan_set.hpp"

namespace dg = dnngraph;

namespace {

// conv 3x3 + bias + ReLU, NHWC fp32: several CPU candidates (Winograd, implicit GEMM, ref).
void conv_graph(dg::Graph& g, int64_t c = 16) {
  g.set_io_data_type(dg::DataType::FLOAT).set_compute_data_type(dg::DataType::FLOAT);
  auto nhwc = [](const char* n, std::vector<int64_t> d) {
    return dg::TensorAttr().set_name(n).set_dim(d).set_stride({d[1] * d[2] * d[3], 1, d[3] * d[1], d[1]});
  };
  auto X = g.tensor(nhwc("X", {1, c, 12, 12}));
  auto W = g.tensor(nhwc("W", {16, c, 3, 3}));
  auto B = g.tensor(nhwc("B", {1, 16, 1, 1}));
  auto Y = g.relu(g.bias(g.conv_fprop(X, W, dg::ConvFpropAttr().set_padding({1, 1}).set_stride({1, 1}).set_dilation({1, 1})), B));
  Y->set_output(true);
}

void plan(dg::Graph& g, dg::Handle& h) {
  ASSERT_TRUE(g.validate().ok());
  ASSERT_TRUE(g.build_operation_graph(h).ok());
  ASSERT_TRUE(g.create_execution_plans({dg::HeurMode::A, dg::HeurMode::FALLBACK}).ok());
}

TEST(PlanFilters, NotesSelectAndDeselect) {
  dg::Handle h(dg::Device::cpu());
  dg::Graph kept;
  conv_graph(kept);
  plan(kept, h);
  const int64_t before = kept.get_execution_plan_count();
  ASSERT_GT(before, 1);
  // No CPU plan compiles at run time: deselecting the note keeps every plan.
  ASSERT_TRUE(kept.deselect_behavior_notes({dg::BehaviorNote::RUNTIME_COMPILATION}).ok());
  EXPECT_EQ(kept.get_execution_plan_count(), before);
  EXPECT_TRUE(kept.check_support(h).ok());

  dg::Graph none;
  conv_graph(none);
  plan(none, h);
  ASSERT_TRUE(none.select_behavior_notes({dg::BehaviorNote::RUNTIME_COMPILATION}).ok());
  EXPECT_EQ(none.get_execution_plan_count(), 0);
  const dg::Status s = none.check_support(h);
  EXPECT_EQ(s.code(), dg::ErrorCode::GRAPH_NOT_SUPPORTED);
  EXPECT_NE(s.message().find("dropped by select_behavior_notes(RUNTIME_COMPILATION)"), std::string::npos) << s.message();
  EXPECT_NE(none.explain().find("dropped by select_behavior_notes"), std::string::npos);
}

using test_build::plan_names;

bool any_winograd(const std::vector<std::string>& names) {
  for (const auto& n : names)
    if (n.find("cpu_conv_winograd_f4x3") != std::string::npos) return true;
  return false;
}

// Numerical notes: the Winograd engine carries WINOGRAD and WINOGRAD_TILE_6x6, the other CPU
// engines none; deselecting drops exactly its plans, selecting keeps exactly them.
TEST(PlanFilters, NumericNotesSelectAndDeselect) {
  dg::Handle h(dg::Device::cpu());
  dg::Graph without;
  conv_graph(without);
  plan(without, h);
  const int64_t before = without.get_execution_plan_count();
  ASSERT_TRUE(any_winograd(plan_names(without)));
  ASSERT_TRUE(without.deselect_numeric_notes({dg::NumericalNote::WINOGRAD}).ok());
  EXPECT_FALSE(any_winograd(plan_names(without)));
  EXPECT_LT(without.get_execution_plan_count(), before);
  EXPECT_GT(without.get_execution_plan_count(), 0);
  EXPECT_NE(without.explain().find("dropped by deselect_numeric_notes(WINOGRAD)"), std::string::npos);
  EXPECT_TRUE(without.check_support(h).ok());

  dg::Graph only;
  conv_graph(only);
  plan(only, h);
  ASSERT_TRUE(only.select_numeric_notes({dg::NumericalNote::WINOGRAD, dg::NumericalNote::WINOGRAD_TILE_6x6}).ok());
  const auto names = plan_names(only);
  ASSERT_FALSE(names.empty());
  for (const auto& n : names) EXPECT_NE(n.find("cpu_conv_winograd_f4x3"), std::string::npos) << n;

  // No CPU plan multiplies on tensor cores: selecting the note leaves nothing, with the reason.
  dg::Graph tc;
  conv_graph(tc);
  plan(tc, h);
  ASSERT_TRUE(tc.select_numeric_notes({dg::NumericalNote::TENSOR_CORE}).ok());
  EXPECT_EQ(tc.get_execution_plan_count(), 0);
  EXPECT_NE(tc.check_support(h).message().find("dropped by select_numeric_notes(TENSOR_CORE)"), std::string::npos);
}

TEST(PlanFilters, WorkspaceLimitRefusesLargerPlans) {
  dg::Handle h(dg::Device::cpu());
  dg::Graph probe;
  conv_graph(probe, 64);
  plan(probe, h);
  int64_t big = -1;  // a plan index that needs workspace
  for (int64_t i = 0; i < probe.get_execution_plan_count() && big < 0; ++i) {
    int64_t ws = 0;
    ASSERT_TRUE(probe.build_plan_at_index(h, i).ok());
    ASSERT_TRUE(probe.get_workspace_size_plan_at_index(i, ws).ok());
    if (ws > 0) big = i;
  }
  if (big < 0) GTEST_SKIP() << "no CPU plan of this conv needs workspace:\n" << probe.explain();

  dg::Graph g;
  conv_graph(g, 64);
  plan(g, h);
  ASSERT_TRUE(g.deselect_workspace_greater_than(0).ok());
  const dg::Status s = g.build_plan_at_index(h, big);
  EXPECT_EQ(s.code(), dg::ErrorCode::GRAPH_EXECUTION_PLAN_CREATION_FAILED);
  EXPECT_NE(s.message().find("more than the 0 of deselect_workspace_greater_than"), std::string::npos) << s.message();
  // The heuristics' choice moves on to a candidate that needs none (ref does not).
  ASSERT_TRUE(g.build_plans(h).ok()) << g.explain();
  int64_t ws = -1;
  ASSERT_TRUE(g.get_workspace_size(ws).ok());
  EXPECT_EQ(ws, 0);
  EXPECT_EQ(g.deselect_workspace_greater_than(-1).code(), dg::ErrorCode::INVALID_VALUE);
}

TEST(PlanFilters, CallOrderAndKey) {
  dg::Handle h(dg::Device::cpu());
  dg::Graph a, b, c;
  conv_graph(a);
  conv_graph(b);
  conv_graph(c, 32);
  int64_t ka = 0, kb = 0, kc = 0;
  EXPECT_EQ(a.key(ka).code(), dg::ErrorCode::INVALID_CALL_ORDER);
  EXPECT_EQ(a.deselect_behavior_notes({}).code(), dg::ErrorCode::INVALID_CALL_ORDER);
  EXPECT_EQ(a.deselect_workspace_greater_than(0).code(), dg::ErrorCode::INVALID_CALL_ORDER);
  for (dg::Graph* g : {&a, &b, &c}) {
    ASSERT_TRUE(g->validate().ok());
    ASSERT_TRUE(g->build_operation_graph(h).ok());
  }
  ASSERT_TRUE(a.key(ka).ok() && b.key(kb).ok() && c.key(kc).ok());
  EXPECT_EQ(ka, kb);
  EXPECT_NE(ka, kc);
}

// A graph one of whose partitions no selected engine runs has no plan index: asking for plan 0's
// name is an error, not a read past the partition's empty list.
TEST(PlanFilters, NoPlanWhileAPartitionHasNoCandidate) {
  dg::Handle h(dg::Device::cpu());
  dg::Graph g;
  g.set_io_data_type(dg::DataType::FLOAT).set_compute_data_type(dg::DataType::FLOAT);
  auto X = g.tensor(dg::TensorAttr().set_name("X").set_dim({4, 8}).set_stride({8, 1}));
  g.relu(g.transpose(X, dg::TransposeAttr().set_permutation({1, 0})))->set_output(true);
  g.select_engines({"cpu_pointwise_fused"});
  plan(g, h);
  EXPECT_EQ(g.get_execution_plan_count(), 0);
  std::string name;
  EXPECT_EQ(g.get_plan_name_at_index(0, name).code(), dg::ErrorCode::INVALID_VALUE);
  std::vector<dg::BehaviorNote> notes;
  EXPECT_EQ(g.get_behavior_notes_for_plan_at_index(0, notes).code(), dg::ErrorCode::INVALID_VALUE);
  EXPECT_EQ(g.check_support(h).code(), dg::ErrorCode::GRAPH_NOT_SUPPORTED);
}

}  // namespace
