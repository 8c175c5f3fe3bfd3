// Shape inference and validation of batchnorm_inference, layernorm and rmsnorm, through the
// public Graph API.
#include <gtest/gtest.h>

#include <array>

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

// ---- batchnorm_inference

// validate's answer for batchnorm_inference "bn" (Y an output) of X with mean M, inverse variance
// V, scale S and bias B, all packed, of these dims; empty bias dims leave the bias out.
dg::Status batchnorm_of(const Dims& x, const Dims& m, const Dims& v, const Dims& s, const Dims& b) {
  auto g = float_graph();
  g.batchnorm_inference(tensor(g, "X", x), tensor(g, "M", m), tensor(g, "V", v), tensor(g, "S", s),
                        b.empty() ? nullptr : tensor(g, "B", b), dg::BatchnormInferenceAttr().set_name("bn"))
      ->set_output(true);
  return g.validate();
}

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
  expect_status(batchnorm_of({2, 3, 4}, {1, 3, 1}, {1, 3, 4}, {1, 3, 1}, {1, 3, 1}),
                dg::ErrorCode::SHAPE_DEDUCTION_FAILED,
                "node 'bn' (batchnorm_inference), tensor 'V': INV_VARIANCE dims [1,3,4] must be [1,3,1] (one value per "
                "channel: 1, C, 1, ...)");
}

TEST(InferBatchnorm, XNeedsAChannelDim) {
  expect_status(batchnorm_of({6}, {1}, {1}, {1}, {1}), dg::ErrorCode::SHAPE_DEDUCTION_FAILED,
                "node 'bn' (batchnorm_inference), tensor 'X': rank 1 is below 2 (X's dims are N, C, ...)");
}

TEST(InferBatchnorm, MissingParameter) {
  expect_status(batchnorm_of({2, 3}, {1, 3}, {1, 3}, {1, 3}, {}), dg::ErrorCode::ATTRIBUTE_NOT_SET,
                "node 'bn' (batchnorm_inference): input BIAS is missing");
}

// ---- layernorm

dg::LayernormAttr ln(dg::NormFwdPhase phase) {
  return dg::LayernormAttr().set_name("ln").set_forward_phase(phase).set_epsilon(1e-5);
}

// A FLOAT graph holding layernorm's inputs X, S and B (packed; [4, 6], [1, 6], [1, 6] unless
// given). add(attr) adds the layernorm and returns Y, MEAN and INV_VARIANCE; validate(attr) adds it
// with Y an output and returns validate's answer.
struct Layernorm {
  dg::Graph g = float_graph();
  dg::TensorPtr x, s, b;
  explicit Layernorm(const Dims& x_dims = {4, 6}, const Dims& s_dims = {1, 6}, const Dims& b_dims = {1, 6})
      : x(tensor(g, "X", x_dims)), s(tensor(g, "S", s_dims)), b(tensor(g, "B", b_dims)) {}
  std::array<dg::TensorPtr, 3> add(const dg::LayernormAttr& attr) { return g.layernorm(x, s, b, attr); }
  dg::Status validate(const dg::LayernormAttr& attr) {
    add(attr)[0]->set_output(true);
    return g.validate();
  }
};

TEST(InferLayernorm, TrainingGivesPerRowStatistics) {
  Layernorm c({4, 3, 5}, {1, 3, 5}, {1, 3, 5});
  c.g.set_io_data_type(dg::DataType::BFLOAT16);
  auto [y, mean, inv_var] = c.add(ln(dg::NormFwdPhase::TRAINING));
  y->set_output(true);
  mean->set_output(true).set_data_type(dg::DataType::FLOAT);
  inv_var->set_output(true);
  ASSERT_TRUE(c.g.validate().ok());
  EXPECT_EQ(y->get_dim(), (Dims{4, 3, 5}));
  EXPECT_EQ(y->get_data_type(), dg::DataType::BFLOAT16);
  EXPECT_EQ(mean->get_dim(), (Dims{4, 1, 1}));
  EXPECT_EQ(mean->get_stride(), (Dims{1, 1, 1}));
  EXPECT_EQ(mean->get_data_type(), dg::DataType::FLOAT);
  EXPECT_EQ(inv_var->get_dim(), (Dims{4, 1, 1}));
}

TEST(InferLayernorm, InferenceLeavesStatisticsVirtualWithDims) {
  Layernorm c;
  auto [y, mean, inv_var] = c.add(ln(dg::NormFwdPhase::INFERENCE));
  y->set_output(true);
  ASSERT_TRUE(c.g.validate().ok());
  EXPECT_TRUE(mean->get_is_virtual());
  EXPECT_EQ(mean->get_dim(), (Dims{4, 1}));
  EXPECT_EQ(inv_var->get_dim(), (Dims{4, 1}));
}

TEST(InferLayernorm, InferenceStatisticsCannotBeOutputs) {
  Layernorm c;
  auto [y, mean, inv_var] = c.add(ln(dg::NormFwdPhase::INFERENCE));
  y->set_output(true);
  inv_var->set_output(true);
  expect_status(c.g.validate(), dg::ErrorCode::INVALID_VALUE,
                "node 'ln' (layernorm), tensor 'ln::INV_VARIANCE': is marked as an output, but the INFERENCE phase "
                "does not produce it (set_forward_phase(NormFwdPhase::TRAINING) to get it)");
}

TEST(InferLayernorm, ScaleMustCoverEveryDimButTheFirst) {
  expect_status(Layernorm({4, 3, 5}, {1, 1, 5}, {1, 3, 5}).validate(ln(dg::NormFwdPhase::INFERENCE)),
                dg::ErrorCode::SHAPE_DEDUCTION_FAILED,
                "node 'ln' (layernorm), tensor 'S': SCALE dims [1,1,5] must be [1,3,5] (X's dims with dim 0 = 1: "
                "layernorm normalizes over every dim but the first)");
}

TEST(InferLayernorm, EpsilonIsRequired) {
  Layernorm c;
  expect_status(c.validate(dg::LayernormAttr().set_name("ln")), dg::ErrorCode::ATTRIBUTE_NOT_SET,
                "node 'ln' (layernorm): epsilon is not set (call set_epsilon)");
}

TEST(InferLayernorm, EpsilonMustBePassByValue) {
  Layernorm c;
  expect_status(c.validate(dg::LayernormAttr().set_name("ln").set_epsilon(tensor(c.g, "eps", {1}))),
                dg::ErrorCode::INVALID_VALUE,
                "node 'ln' (layernorm), tensor 'eps': epsilon must be a pass-by-value scalar (set_value)");
}

TEST(InferLayernorm, EpsilonIsOneElement) {
  Layernorm c;
  auto eps = c.g.tensor(dg::TensorAttr().set_name("eps").set_dim({2}).set_stride({1}).set_is_pass_by_value(true));
  expect_status(c.validate(dg::LayernormAttr().set_name("ln").set_epsilon(eps)), dg::ErrorCode::SHAPE_DEDUCTION_FAILED,
                "node 'ln' (layernorm), tensor 'eps': epsilon dims [2] must hold exactly one element");
}

TEST(InferLayernorm, PhaseMustBeSet) {
  expect_status(Layernorm().validate(ln(dg::NormFwdPhase::NOT_SET)), dg::ErrorCode::ATTRIBUTE_NOT_SET,
                "node 'ln' (layernorm): forward phase is not set");
}

TEST(InferLayernorm, UnknownPhaseIsRejected) {
  expect_status(Layernorm().validate(ln(static_cast<dg::NormFwdPhase>(9))), dg::ErrorCode::INVALID_VALUE,
                "node 'ln' (layernorm): unknown forward phase 9");
}

TEST(InferLayernorm, XNeedsTwoDims) {
  expect_status(Layernorm({6}, {1}, {1}).validate(ln(dg::NormFwdPhase::INFERENCE)),
                dg::ErrorCode::SHAPE_DEDUCTION_FAILED,
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
