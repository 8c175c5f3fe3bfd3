// Shape inference and validation of the training norms (graph/norm_training.cpp): batchnorm,
// instancenorm and the backward ops, through the public Graph API. Every rule's message is tested.
#include <gtest/gtest.h>

#include "common/dims.hpp"
#include "common/status_checks.hpp"
#include "common/tensors.hpp"
#include "dnngraph/dnngraph.hpp"

namespace dg = dnngraph;

namespace {

using test_status::expect_status;
using Dims = std::vector<int64_t>;

dg::TensorPtr tensor(dg::Graph& g, const char* name, const Dims& dims) {
  return test_tensors::packed_tensor(g, name, dims);
}

dg::Graph float_graph() {
  dg::Graph g;
  g.set_io_data_type(dg::DataType::FLOAT);
  return g;
}

// ---- the backward ops

// The dims of a backward op's inputs; empty dims leave the input out.
struct BwdDims {
  Dims dy, x, scale, mean, inv;
};

enum class Bwd { LAYERNORM, RMSNORM, BATCHNORM, INSTANCENORM };

// Adds backward op `op` named "bwd" with DX and DSCALE outputs (and DBIAS, unless rmsnorm without
// has_dbias) and returns validate's answer; outs receives the three outputs.
dg::Status backward_of(Bwd op, const BwdDims& d, std::array<dg::TensorPtr, 3>* outs = nullptr, bool has_dbias = true) {
  auto g = float_graph();
  auto t = [&](const char* name, const Dims& dims) { return dims.empty() ? nullptr : tensor(g, name, dims); };
  auto dy = t("DY", d.dy), x = t("X", d.x), s = t("S", d.scale), m = t("M", d.mean), v = t("V", d.inv);
  std::array<dg::TensorPtr, 3> o;
  switch (op) {
    case Bwd::LAYERNORM: o = g.layernorm_backward(dy, x, s, m, v, dg::LayernormBackwardAttr().set_name("bwd")); break;
    case Bwd::RMSNORM:
      o = g.rmsnorm_backward(dy, x, s, v, dg::RmsnormBackwardAttr().set_name("bwd").set_has_dbias(has_dbias));
      break;
    case Bwd::BATCHNORM: o = g.batchnorm_backward(dy, x, s, m, v, dg::BatchnormBackwardAttr().set_name("bwd")); break;
    case Bwd::INSTANCENORM:
      o = g.instancenorm_backward(dy, x, s, m, v, dg::InstancenormBackwardAttr().set_name("bwd"));
      break;
  }
  o[0]->set_output(true);
  o[1]->set_output(true);
  if (has_dbias) o[2]->set_output(true);
  if (outs) *outs = o;
  return g.validate();
}

TEST(InferNormBackward, LayernormOutputsTakeXsAndScalesDims) {
  std::array<dg::TensorPtr, 3> o;
  ASSERT_TRUE(backward_of(Bwd::LAYERNORM, {{4, 6, 2}, {4, 6, 2}, {1, 6, 2}, {4, 1, 1}, {4, 1, 1}}, &o).ok());
  EXPECT_EQ(o[0]->get_dim(), (Dims{4, 6, 2}));
  EXPECT_EQ(o[0]->get_stride(), (Dims{12, 2, 1}));
  EXPECT_EQ(o[1]->get_dim(), (Dims{1, 6, 2}));
  EXPECT_EQ(o[2]->get_dim(), (Dims{1, 6, 2}));
  EXPECT_EQ(o[1]->get_data_type(), dg::DataType::FLOAT);
}

TEST(InferNormBackward, BatchnormAndInstancenormParametersArePerChannel) {
  std::array<dg::TensorPtr, 3> o;
  ASSERT_TRUE(backward_of(Bwd::BATCHNORM, {{2, 3, 4, 4}, {2, 3, 4, 4}, {1, 3, 1, 1}, {1, 3, 1, 1}, {1, 3, 1, 1}}, &o).ok());
  EXPECT_EQ(o[1]->get_dim(), (Dims{1, 3, 1, 1}));
  ASSERT_TRUE(
      backward_of(Bwd::INSTANCENORM, {{2, 3, 4, 4}, {2, 3, 4, 4}, {1, 3, 1, 1}, {2, 3, 1, 1}, {2, 3, 1, 1}}, &o).ok());
  EXPECT_EQ(o[2]->get_dim(), (Dims{1, 3, 1, 1}));
}

TEST(InferNormBackward, DyMustHaveXsDims) {
  expect_status(backward_of(Bwd::LAYERNORM, {{4, 5}, {4, 6}, {1, 6}, {4, 1}, {4, 1}}),
                dg::ErrorCode::SHAPE_DEDUCTION_FAILED,
                "node 'bwd' (layernorm_backward), tensor 'DY': DY dims [4,5] must be [4,6] (the gradient of Y has "
                "X's dims)");
}

TEST(InferNormBackward, ScaleFollowsTheGrouping) {
  expect_status(backward_of(Bwd::LAYERNORM, {{4, 6}, {4, 6}, {1, 1}, {4, 1}, {4, 1}}),
                dg::ErrorCode::SHAPE_DEDUCTION_FAILED,
                "node 'bwd' (layernorm_backward), tensor 'S': SCALE dims [1,1] must be [1,6] (X's dims with dim 0 "
                "= 1: the op normalizes over every dim but the first)");
  expect_status(backward_of(Bwd::BATCHNORM, {{2, 3, 4}, {2, 3, 4}, {1, 3, 4}, {1, 3, 1}, {1, 3, 1}}),
                dg::ErrorCode::SHAPE_DEDUCTION_FAILED,
                "node 'bwd' (batchnorm_backward), tensor 'S': SCALE dims [1,3,4] must be [1,3,1] (one value per "
                "channel: 1, C, 1, ...)");
}

TEST(InferNormBackward, StatisticsFollowTheGrouping) {
  expect_status(backward_of(Bwd::LAYERNORM, {{4, 6}, {4, 6}, {1, 6}, {1, 6}, {4, 1}}),
                dg::ErrorCode::SHAPE_DEDUCTION_FAILED,
                "node 'bwd' (layernorm_backward), tensor 'M': MEAN dims [1,6] must be [4,1] (one value per row: "
                "N, 1, ...)");
  expect_status(backward_of(Bwd::BATCHNORM, {{2, 3, 4}, {2, 3, 4}, {1, 3, 1}, {1, 3, 1}, {2, 3, 1}}),
                dg::ErrorCode::SHAPE_DEDUCTION_FAILED,
                "node 'bwd' (batchnorm_backward), tensor 'V': INV_VARIANCE dims [2,3,1] must be [1,3,1] (one value "
                "per channel: 1, C, 1, ...)");
  expect_status(backward_of(Bwd::INSTANCENORM, {{2, 3, 4}, {2, 3, 4}, {1, 3, 1}, {1, 3, 1}, {2, 3, 1}}),
                dg::ErrorCode::SHAPE_DEDUCTION_FAILED,
                "node 'bwd' (instancenorm_backward), tensor 'M': MEAN dims [1,3,1] must be [2,3,1] (one value per "
                "sample and channel: N, C, 1, ...)");
  expect_status(backward_of(Bwd::RMSNORM, {{4, 6}, {4, 6}, {1, 6}, {}, {4, 6}}), dg::ErrorCode::SHAPE_DEDUCTION_FAILED,
                "node 'bwd' (rmsnorm_backward), tensor 'V': INV_RMS dims [4,6] must be [4,1] (one value per row: "
                "N, 1, ...)");
}

TEST(InferNormBackward, MissingStatistic) {
  expect_status(backward_of(Bwd::INSTANCENORM, {{2, 3, 4}, {2, 3, 4}, {1, 3, 1}, {}, {2, 3, 1}}),
                dg::ErrorCode::ATTRIBUTE_NOT_SET, "node 'bwd' (instancenorm_backward): input MEAN is missing");
}

TEST(InferNormBackward, XRank) {
  expect_status(backward_of(Bwd::LAYERNORM, {{6}, {6}, {1}, {1}, {1}}), dg::ErrorCode::SHAPE_DEDUCTION_FAILED,
                "node 'bwd' (layernorm_backward), tensor 'X': rank 1 is below 2 (X's dims are N, normalized dims...)");
  expect_status(backward_of(Bwd::INSTANCENORM, {{2, 3}, {2, 3}, {1, 3}, {2, 3}, {2, 3}}),
                dg::ErrorCode::SHAPE_DEDUCTION_FAILED,
                "node 'bwd' (instancenorm_backward), tensor 'X': rank 2 is below 3 (instancenorm normalizes over the "
                "spatial dims of N, C, spatial...)");
}

TEST(InferNormBackward, RmsnormDbiasOnlyWithHasDbias) {
  std::array<dg::TensorPtr, 3> o;
  ASSERT_TRUE(backward_of(Bwd::RMSNORM, {{4, 6}, {4, 6}, {1, 6}, {}, {4, 1}}, &o, false).ok());
  EXPECT_TRUE(o[2]->get_is_virtual());
  auto g = float_graph();
  auto o2 = g.rmsnorm_backward(tensor(g, "DY", {4, 6}), tensor(g, "X", {4, 6}), tensor(g, "S", {1, 6}),
                               tensor(g, "V", {4, 1}), dg::RmsnormBackwardAttr().set_name("bwd"));
  o2[0]->set_output(true);
  o2[2]->set_output(true);
  expect_status(g.validate(), dg::ErrorCode::INVALID_VALUE,
                "node 'bwd' (rmsnorm_backward), tensor 'bwd::DBIAS': is marked as an output, but has_dbias is false "
                "(set_has_dbias(true) to get it)");
}

// ---- batchnorm (training)

struct Bn {
  dg::Graph g = float_graph();
  dg::TensorPtr x = tensor(g, "X", {2, 3, 4, 4}), s = tensor(g, "S", {1, 3, 1, 1}), b = tensor(g, "B", {1, 3, 1, 1});
  dg::TensorPtr rm = tensor(g, "RM", {1, 3, 1, 1}), rv = tensor(g, "RV", {1, 3, 1, 1});
  dg::BatchnormAttr attr = dg::BatchnormAttr().set_name("bn").set_epsilon(1e-5);
  std::array<dg::TensorPtr, 5> add() {
    auto o = g.batchnorm(x, s, b, attr);
    for (int i = 0; i < 3; ++i) o[static_cast<size_t>(i)]->set_output(true);
    return o;
  }
};

TEST(InferBatchnormTraining, StatisticsPerChannelAndRunningStatistics) {
  Bn c;
  c.attr.set_previous_running_stats(c.rm, c.rv, 0.1);
  auto o = c.add();
  o[3]->set_output(true);
  o[4]->set_output(true);
  ASSERT_TRUE(c.g.validate().ok());
  EXPECT_EQ(o[0]->get_dim(), (Dims{2, 3, 4, 4}));
  EXPECT_EQ(o[1]->get_dim(), (Dims{1, 3, 1, 1}));
  EXPECT_EQ(o[2]->get_data_type(), dg::DataType::FLOAT);
  EXPECT_EQ(o[4]->get_dim(), (Dims{1, 3, 1, 1}));
}

TEST(InferBatchnormTraining, RunningStatisticsNeedPreviousOnes) {
  Bn c;
  auto o = c.add();
  o[3]->set_output(true);
  expect_status(c.g.validate(), dg::ErrorCode::INVALID_VALUE,
                "node 'bn' (batchnorm), tensor 'bn::NEXT_RUNNING_MEAN': is marked as an output, but no previous "
                "running statistics are given (set_previous_running_stats)");
}

TEST(InferBatchnormTraining, RunningStatisticsAllOrNone) {
  Bn c;
  c.attr.set_previous_running_stats(c.rm, nullptr, 0.1);
  c.add();
  expect_status(c.g.validate(), dg::ErrorCode::ATTRIBUTE_NOT_SET,
                "node 'bn' (batchnorm): running statistics need all of PREV_RUNNING_MEAN, PREV_RUNNING_VAR and "
                "MOMENTUM (set_previous_running_stats), but some are missing");
}

TEST(InferBatchnormTraining, RunningStatisticsPerChannel) {
  Bn c;
  c.attr.set_previous_running_stats(c.rm, tensor(c.g, "RV3", {1, 3, 4, 1}), 0.1);
  c.add();
  expect_status(c.g.validate(), dg::ErrorCode::SHAPE_DEDUCTION_FAILED,
                "node 'bn' (batchnorm), tensor 'RV3': PREV_RUNNING_VAR dims [1,3,4,1] must be [1,3,1,1] (one value "
                "per channel: 1, C, 1, ...)");
}

TEST(InferBatchnormTraining, MomentumIsAPassByValueScalar) {
  Bn c;
  c.attr.set_previous_running_stats(c.rm, c.rv, tensor(c.g, "MOM", {1}));
  c.add();
  expect_status(c.g.validate(), dg::ErrorCode::INVALID_VALUE,
                "node 'bn' (batchnorm), tensor 'MOM': momentum must be a pass-by-value scalar (set_value)");
}

TEST(InferBatchnormTraining, EpsilonRequired) {
  Bn c;
  c.attr = dg::BatchnormAttr().set_name("bn");
  c.add();
  expect_status(c.g.validate(), dg::ErrorCode::ATTRIBUTE_NOT_SET,
                "node 'bn' (batchnorm): epsilon is not set (call set_epsilon)");
}

TEST(InferBatchnormTraining, BiasPerChannel) {
  Bn c;
  c.b = tensor(c.g, "B2", {1, 3, 4, 4});
  c.add();
  expect_status(c.g.validate(), dg::ErrorCode::SHAPE_DEDUCTION_FAILED,
                "node 'bn' (batchnorm), tensor 'B2': BIAS dims [1,3,4,4] must be [1,3,1,1] (one value per channel: "
                "1, C, 1, ...)");
}

// ---- instancenorm

TEST(InferInstancenorm, StatisticsPerSampleAndChannel) {
  auto g = float_graph();
  auto x = g.tensor(dg::TensorAttr().set_name("X").set_dim({2, 3, 4, 5}).set_stride({60, 1, 15, 3}));
  auto o = g.instancenorm(x, tensor(g, "S", {1, 3, 1, 1}), tensor(g, "B", {1, 3, 1, 1}),
                          dg::InstancenormAttr().set_name("in").set_epsilon(1e-5).set_forward_phase(
                              dg::NormFwdPhase::TRAINING));
  for (auto& t : o) t->set_output(true);
  ASSERT_TRUE(g.validate().ok());
  EXPECT_EQ(o[0]->get_stride(), (Dims{60, 1, 15, 3}));
  EXPECT_EQ(o[1]->get_dim(), (Dims{2, 3, 1, 1}));
}

TEST(InferInstancenorm, InferencePhaseProducesNoStatistics) {
  auto g = float_graph();
  auto o = g.instancenorm(tensor(g, "X", {2, 3, 4}), tensor(g, "S", {1, 3, 1}), tensor(g, "B", {1, 3, 1}),
                          dg::InstancenormAttr().set_name("in").set_epsilon(1e-5));
  o[0]->set_output(true);
  o[1]->set_output(true);
  expect_status(g.validate(), dg::ErrorCode::INVALID_VALUE,
                "node 'in' (instancenorm), tensor 'in::MEAN': is marked as an output, but the INFERENCE phase does "
                "not produce it (set_forward_phase(NormFwdPhase::TRAINING) to get it)");
}

TEST(InferInstancenorm, PhaseMustBeSet) {
  auto g = float_graph();
  auto o = g.instancenorm(tensor(g, "X", {2, 3, 4}), tensor(g, "S", {1, 3, 1}), tensor(g, "B", {1, 3, 1}),
                          dg::InstancenormAttr().set_name("in").set_epsilon(1e-5).set_forward_phase(
                              dg::NormFwdPhase::NOT_SET));
  o[0]->set_output(true);
  expect_status(g.validate(), dg::ErrorCode::ATTRIBUTE_NOT_SET, "node 'in' (instancenorm): forward phase is not set");
}

// ---- JSON: every op and its fields survive a round trip

TEST(NormTrainingJson, RoundTrip) {
  auto g = float_graph();
  auto x = tensor(g, "X", {2, 3, 4}), s = tensor(g, "S", {1, 3, 1}), b = tensor(g, "B", {1, 3, 1});
  auto bn = g.batchnorm(x, s, b,
                        dg::BatchnormAttr().set_name("bn").set_epsilon(1e-5).set_previous_running_stats(
                            tensor(g, "RM", {1, 3, 1}), tensor(g, "RV", {1, 3, 1}), 0.1));
  auto in = g.instancenorm(bn[0], s, b, dg::InstancenormAttr().set_name("in").set_epsilon(1e-3).set_forward_phase(
                                            dg::NormFwdPhase::TRAINING));
  auto rs = tensor(g, "RS", {1, 3, 4});
  auto rms = g.rmsnorm_backward(in[0], x, rs, tensor(g, "RI", {2, 1, 1}),
                                dg::RmsnormBackwardAttr().set_name("rmsb").set_has_dbias(true));
  for (auto& t : rms) t->set_output(true);
  for (int i = 1; i < 5; ++i) bn[static_cast<size_t>(i)]->set_output(true);
  ASSERT_TRUE(g.validate().ok());
  const std::string j = g.to_json();
  dg::Graph g2;
  ASSERT_TRUE(dg::Graph::from_json(j, g2).ok());
  EXPECT_EQ(g2.to_json(), j);
  EXPECT_NE(j.find("\"has_dbias\""), std::string::npos);
  EXPECT_NE(j.find("\"MOMENTUM\""), std::string::npos) << j;
  EXPECT_TRUE(g2.validate().ok());
}

}  // namespace
