// Shape inference and validation of batchnorm_inference, layernorm and rmsnorm, through the
// public Graph API.
#include <gtest/gtest.h>

#include "common/dims.hpp"
#include "common/status_checks.hpp"
#include "dnngraph/dnngraph.hpp"

namespace dg = dnngraph;

namespace {

using test_status::expect_status;

using Dims = std::vector<int64_t>;

dg::TensorPtr tensor(dg::Graph& g, const char* name, const Dims& dims) {
  return g.tensor(dg::TensorAttr().set_name(name).set_dim(dims).set_stride(test_dims::packed(dims)));
}

dg::Graph float_graph() {
  dg::Graph g;
  g.set_io_data_type(dg::DataType::FLOAT);
  return g;
}

// ---- batchnorm_inference

TEST(InferBatchnorm, OutputTakesXsDimsAndLayout) {
  auto g = float_graph();
  auto x = g.tensor(dg::TensorAttr().set_name("X").set_dim({2, 3, 4, 5}).set_stride({60, 1, 15, 3}));
  auto y = g.batchnorm_inference(x, tensor(g, "M", {1, 3, 1, 1}), tensor(g, "V", {1, 3, 1, 1}),
                                 tensor(g, "S", {1, 3, 1, 1}), tensor(g, "B", {1, 3, 1, 1}),
                                 dg::BatchnormInferenceAttr().set_name("bn"));
  y->set_output(true);
  ASSERT_TRUE(g.validate().ok());
  EXPECT_EQ(y->get_dim(), (Dims{2, 3, 4, 5}));
  EXPECT_EQ(y->get_stride(), (Dims{60, 1, 15, 3}));
}

TEST(InferBatchnorm, ParametersArePerChannel) {
  auto g = float_graph();
  auto y = g.batchnorm_inference(tensor(g, "X", {2, 3, 4}), tensor(g, "M", {1, 3, 1}), tensor(g, "V", {1, 3, 4}),
                                 tensor(g, "S", {1, 3, 1}), tensor(g, "B", {1, 3, 1}),
                                 dg::BatchnormInferenceAttr().set_name("bn"));
  y->set_output(true);
  expect_status(g.validate(), dg::ErrorCode::SHAPE_DEDUCTION_FAILED,
                "node 'bn' (batchnorm_inference), tensor 'V': INV_VARIANCE dims [1,3,4] must be [1,3,1] (one value per "
                "channel: 1, C, 1, ...)");
}

TEST(InferBatchnorm, XNeedsAChannelDim) {
  auto g = float_graph();
  auto y = g.batchnorm_inference(tensor(g, "X", {6}), tensor(g, "M", {1}), tensor(g, "V", {1}), tensor(g, "S", {1}),
                                 tensor(g, "B", {1}), dg::BatchnormInferenceAttr().set_name("bn"));
  y->set_output(true);
  expect_status(g.validate(), dg::ErrorCode::SHAPE_DEDUCTION_FAILED,
                "node 'bn' (batchnorm_inference), tensor 'X': rank 1 is below 2 (X's dims are N, C, ...)");
}

TEST(InferBatchnorm, MissingParameter) {
  auto g = float_graph();
  auto y = g.batchnorm_inference(tensor(g, "X", {2, 3}), tensor(g, "M", {1, 3}), tensor(g, "V", {1, 3}),
                                 tensor(g, "S", {1, 3}), nullptr, dg::BatchnormInferenceAttr().set_name("bn"));
  y->set_output(true);
  expect_status(g.validate(), dg::ErrorCode::ATTRIBUTE_NOT_SET,
                "node 'bn' (batchnorm_inference): input BIAS is missing");
}

// ---- layernorm

dg::LayernormAttr ln(dg::NormFwdPhase phase) {
  return dg::LayernormAttr().set_name("ln").set_forward_phase(phase).set_epsilon(1e-5);
}

TEST(InferLayernorm, TrainingGivesPerRowStatistics) {
  auto g = float_graph();
  g.set_io_data_type(dg::DataType::BFLOAT16);
  auto [y, mean, inv_var] = g.layernorm(tensor(g, "X", {4, 3, 5}), tensor(g, "S", {1, 3, 5}),
                                        tensor(g, "B", {1, 3, 5}), ln(dg::NormFwdPhase::TRAINING));
  y->set_output(true);
  mean->set_output(true).set_data_type(dg::DataType::FLOAT);
  inv_var->set_output(true);
  ASSERT_TRUE(g.validate().ok());
  EXPECT_EQ(y->get_dim(), (Dims{4, 3, 5}));
  EXPECT_EQ(y->get_data_type(), dg::DataType::BFLOAT16);
  EXPECT_EQ(mean->get_dim(), (Dims{4, 1, 1}));
  EXPECT_EQ(mean->get_stride(), (Dims{1, 1, 1}));
  EXPECT_EQ(mean->get_data_type(), dg::DataType::FLOAT);
  EXPECT_EQ(inv_var->get_dim(), (Dims{4, 1, 1}));
}

TEST(InferLayernorm, InferenceLeavesStatisticsVirtualWithDims) {
  auto g = float_graph();
  auto [y, mean, inv_var] = g.layernorm(tensor(g, "X", {4, 6}), tensor(g, "S", {1, 6}), tensor(g, "B", {1, 6}),
                                        ln(dg::NormFwdPhase::INFERENCE));
  y->set_output(true);
  ASSERT_TRUE(g.validate().ok());
  EXPECT_TRUE(mean->get_is_virtual());
  EXPECT_EQ(mean->get_dim(), (Dims{4, 1}));
  EXPECT_EQ(inv_var->get_dim(), (Dims{4, 1}));
}

TEST(InferLayernorm, InferenceStatisticsCannotBeOutputs) {
  auto g = float_graph();
  auto [y, mean, inv_var] = g.layernorm(tensor(g, "X", {4, 6}), tensor(g, "S", {1, 6}), tensor(g, "B", {1, 6}),
                                        ln(dg::NormFwdPhase::INFERENCE));
  y->set_output(true);
  inv_var->set_output(true);
  expect_status(g.validate(), dg::ErrorCode::INVALID_VALUE,
                "node 'ln' (layernorm), tensor 'ln::INV_VARIANCE': is marked as an output, but the INFERENCE phase "
                "does not produce it (set_forward_phase(NormFwdPhase::TRAINING) to get it)");
}

TEST(InferLayernorm, ScaleMustCoverEveryDimButTheFirst) {
  auto g = float_graph();
  auto outs = g.layernorm(tensor(g, "X", {4, 3, 5}), tensor(g, "S", {1, 1, 5}), tensor(g, "B", {1, 3, 5}),
                          ln(dg::NormFwdPhase::INFERENCE));
  outs[0]->set_output(true);
  expect_status(g.validate(), dg::ErrorCode::SHAPE_DEDUCTION_FAILED,
                "node 'ln' (layernorm), tensor 'S': SCALE dims [1,1,5] must be [1,3,5] (X's dims with dim 0 = 1: "
                "layernorm normalizes over every dim but the first)");
}

TEST(InferLayernorm, EpsilonIsRequired) {
  auto g = float_graph();
  auto outs = g.layernorm(tensor(g, "X", {4, 6}), tensor(g, "S", {1, 6}), tensor(g, "B", {1, 6}),
                          dg::LayernormAttr().set_name("ln"));
  outs[0]->set_output(true);
  expect_status(g.validate(), dg::ErrorCode::ATTRIBUTE_NOT_SET,
                "node 'ln' (layernorm): epsilon is not set (call set_epsilon)");
}

TEST(InferLayernorm, EpsilonMustBePassByValue) {
  auto g = float_graph();
  auto outs = g.layernorm(tensor(g, "X", {4, 6}), tensor(g, "S", {1, 6}), tensor(g, "B", {1, 6}),
                          dg::LayernormAttr().set_name("ln").set_epsilon(tensor(g, "eps", {1})));
  outs[0]->set_output(true);
  expect_status(g.validate(), dg::ErrorCode::INVALID_VALUE,
                "node 'ln' (layernorm), tensor 'eps': epsilon must be a pass-by-value scalar (set_value)");
}

TEST(InferLayernorm, EpsilonIsOneElement) {
  auto g = float_graph();
  auto eps = g.tensor(dg::TensorAttr().set_name("eps").set_dim({2}).set_stride({1}).set_is_pass_by_value(true));
  auto outs = g.layernorm(tensor(g, "X", {4, 6}), tensor(g, "S", {1, 6}), tensor(g, "B", {1, 6}),
                          dg::LayernormAttr().set_name("ln").set_epsilon(eps));
  outs[0]->set_output(true);
  expect_status(g.validate(), dg::ErrorCode::SHAPE_DEDUCTION_FAILED,
                "node 'ln' (layernorm), tensor 'eps': epsilon dims [2] must hold exactly one element");
}

TEST(InferLayernorm, PhaseMustBeSet) {
  auto g = float_graph();
  auto outs = g.layernorm(tensor(g, "X", {4, 6}), tensor(g, "S", {1, 6}), tensor(g, "B", {1, 6}),
                          ln(dg::NormFwdPhase::NOT_SET));
  outs[0]->set_output(true);
  expect_status(g.validate(), dg::ErrorCode::ATTRIBUTE_NOT_SET, "node 'ln' (layernorm): forward phase is not set");
}

TEST(InferLayernorm, UnknownPhaseIsRejected) {
  auto g = float_graph();
  auto outs = g.layernorm(tensor(g, "X", {4, 6}), tensor(g, "S", {1, 6}), tensor(g, "B", {1, 6}),
                          ln(static_cast<dg::NormFwdPhase>(9)));
  outs[0]->set_output(true);
  expect_status(g.validate(), dg::ErrorCode::INVALID_VALUE, "node 'ln' (layernorm): unknown forward phase 9");
}

TEST(InferLayernorm, XNeedsTwoDims) {
  auto g = float_graph();
  auto outs =
      g.layernorm(tensor(g, "X", {6}), tensor(g, "S", {1}), tensor(g, "B", {1}), ln(dg::NormFwdPhase::INFERENCE));
  outs[0]->set_output(true);
  expect_status(g.validate(), dg::ErrorCode::SHAPE_DEDUCTION_FAILED,
                "node 'ln' (layernorm), tensor 'X': rank 1 is below 2 (X's dims are N, normalized dims...)");
}

// ---- rmsnorm

dg::RmsnormAttr rms(dg::NormFwdPhase phase) {
  return dg::RmsnormAttr().set_name("rms").set_forward_phase(phase).set_epsilon(1e-6);
}

TEST(InferRmsnorm, BiasIsOptionalAndTrainingGivesInvRms) {
  auto g = float_graph();
  auto [y, inv_rms] = g.rmsnorm(tensor(g, "X", {3, 8}), tensor(g, "S", {1, 8}), rms(dg::NormFwdPhase::TRAINING));
  y->set_output(true);
  inv_rms->set_output(true);
  ASSERT_TRUE(g.validate().ok());
  EXPECT_EQ(inv_rms->get_dim(), (Dims{3, 1}));
}

TEST(InferRmsnorm, BiasDimsAreChecked) {
  auto g = float_graph();
  auto outs = g.rmsnorm(tensor(g, "X", {3, 8}), tensor(g, "S", {1, 8}),
                        rms(dg::NormFwdPhase::INFERENCE).set_bias(tensor(g, "B", {3, 8})));
  outs[0]->set_output(true);
  expect_status(g.validate(), dg::ErrorCode::SHAPE_DEDUCTION_FAILED,
                "node 'rms' (rmsnorm), tensor 'B': BIAS dims [3,8] must be [1,8] (X's dims with dim 0 = 1: rmsnorm "
                "normalizes over every dim but the first)");
}

TEST(InferRmsnorm, InferenceInvRmsCannotBeAnOutput) {
  auto g = float_graph();
  auto [y, inv_rms] = g.rmsnorm(tensor(g, "X", {3, 8}), tensor(g, "S", {1, 8}), rms(dg::NormFwdPhase::INFERENCE));
  y->set_output(true);
  inv_rms->set_output(true);
  expect_status(g.validate(), dg::ErrorCode::INVALID_VALUE,
                "node 'rms' (rmsnorm), tensor 'rms::INV_RMS': is marked as an output, but the INFERENCE phase does not "
                "produce it (set_forward_phase(NormFwdPhase::TRAINING) to get it)");
}

TEST(InferRmsnorm, ScaleIsRequired) {
  auto g = float_graph();
  auto outs = g.rmsnorm(tensor(g, "X", {3, 8}), nullptr, rms(dg::NormFwdPhase::INFERENCE));
  outs[0]->set_output(true);
  expect_status(g.validate(), dg::ErrorCode::ATTRIBUTE_NOT_SET, "node 'rms' (rmsnorm): input SCALE is missing");
}

}  // namespace
