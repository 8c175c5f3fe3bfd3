// Shape inference and validation of reduction, through the public Graph API.
#include <gtest/gtest.h>

#include "common/status_checks.hpp"
#include "dnngraph/dnngraph.hpp"

namespace dg = dnngraph;

namespace {

using test_status::expect_status;

using Dims = std::vector<int64_t>;

dg::TensorPtr input(dg::Graph& g, Dims dims, Dims strides) {
  return g.tensor(dg::TensorAttr().set_name("X").set_dim(std::move(dims)).set_stride(std::move(strides)));
}

dg::ReductionAttr mode(dg::ReductionMode m) { return dg::ReductionAttr().set_name("r").set_mode(m); }

// validate's answer for reduction "r" (mode m) of a FLOAT X into Y, an output whose dims (and
// strides, where given) the user set.
dg::Status reduce_into(const Dims& x_dims, const Dims& x_strides, dg::ReductionMode m, const Dims& y_dims,
                       const Dims& y_strides = {}) {
  dg::Graph g;
  g.set_io_data_type(dg::DataType::FLOAT);
  auto y = g.reduction(input(g, x_dims, x_strides), mode(m));
  y->set_name("Y").set_dim(y_dims).set_output(true);
  if (!y_strides.empty()) y->set_stride(y_strides);
  return g.validate();
}

TEST(InferReduction, DefaultIsAFullReductionToFloat) {
  dg::Graph g;
  g.set_io_data_type(dg::DataType::HALF);
  auto x = input(g, {2, 3, 4}, {12, 4, 1});
  auto y = g.reduction(x, mode(dg::ReductionMode::ADD));
  auto z = g.reduction(y, mode(dg::ReductionMode::MAX).set_name("r2"));
  z->set_output(true);
  ASSERT_TRUE(g.validate().ok());
  EXPECT_EQ(y->get_dim(), (std::vector<int64_t>{1, 1, 1}));
  EXPECT_EQ(y->get_stride(), (std::vector<int64_t>{1, 1, 1}));
  EXPECT_EQ(y->get_data_type(), dg::DataType::FLOAT);  // virtual, no intermediate type set
  EXPECT_EQ(z->get_data_type(), dg::DataType::HALF);   // an output takes the io type
}

TEST(InferReduction, UserDimsChooseTheReducedAxesAndKeepTheLayout) {
  dg::Graph g;
  g.set_io_data_type(dg::DataType::FLOAT);
  auto x = input(g, {2, 3, 4, 5}, {60, 1, 15, 3});  // NHWC
  auto y = g.reduction(x, mode(dg::ReductionMode::AVG));
  y->set_dim({2, 3, 1, 1}).set_output(true);
  ASSERT_TRUE(g.validate().ok());
  EXPECT_EQ(y->get_stride(), (std::vector<int64_t>{3, 1, 3, 3}));
}

TEST(InferReduction, ModeMustBeSet) {
  dg::Graph g;
  g.set_io_data_type(dg::DataType::FLOAT);
  g.reduction(input(g, {2, 3}, {3, 1}), dg::ReductionAttr().set_name("r"))->set_output(true);
  expect_status(g.validate(), dg::ErrorCode::ATTRIBUTE_NOT_SET, "node 'r' (reduction): reduction mode is not set");
}

TEST(InferReduction, UnknownModeIsRejected) {
  dg::Graph g;
  g.set_io_data_type(dg::DataType::FLOAT);
  g.reduction(input(g, {2, 3}, {3, 1}), mode(static_cast<dg::ReductionMode>(77)))->set_output(true);
  expect_status(g.validate(), dg::ErrorCode::INVALID_VALUE, "node 'r' (reduction): unknown reduction mode 77");
}

TEST(InferReduction, OutputRankMustMatch) {
  expect_status(reduce_into({2, 3}, {3, 1}, dg::ReductionMode::ADD, {1}), dg::ErrorCode::SHAPE_DEDUCTION_FAILED,
                "node 'r' (reduction), tensor 'Y': rank 1 differs from X's rank 2 (a reduction keeps the rank; "
                "reduced dims are 1)");
}

TEST(InferReduction, OutputDimsMustBeKeptOrOne) {
  expect_status(reduce_into({2, 6}, {6, 1}, dg::ReductionMode::NORM2, {2, 3}), dg::ErrorCode::SHAPE_DEDUCTION_FAILED,
                "node 'r' (reduction), tensor 'Y': dim 1 is 3 but must be X's 6 (kept) or 1 (reduced); Y dims [2,3], "
                "X dims [2,6]");
}

TEST(InferReduction, InputNeedsDims) {
  dg::Graph g;
  g.set_io_data_type(dg::DataType::FLOAT);
  g.reduction(g.tensor(dg::TensorAttr().set_name("X")), mode(dg::ReductionMode::ADD))->set_output(true);
  expect_status(g.validate(), dg::ErrorCode::ATTRIBUTE_NOT_SET, "node 'r' (reduction), tensor 'X': has no dims");
}

TEST(InferReduction, UserStridesMustNotOverlap) {
  expect_status(reduce_into({4, 3}, {3, 1}, dg::ReductionMode::MIN, {4, 3}, {1, 1}), dg::ErrorCode::INVALID_VALUE,
                "node 'r' (reduction), tensor 'Y': output strides [1,1] overlap for dims [4,3] (two elements would "
                "share memory)");
}

}  // namespace
