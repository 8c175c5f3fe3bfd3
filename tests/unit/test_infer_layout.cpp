// Shape inference and validation of reshape, transpose, slice and concatenate, through the public
// Graph API.
#include <gtest/gtest.h>

#include "common/status_checks.hpp"
#include "dnngraph/dnngraph.hpp"

namespace dg = dnngraph;

namespace {

using test_status::expect_status;

using Dims = std::vector<int64_t>;

dg::TensorPtr tensor(dg::Graph& g, const char* name, Dims dims, Dims strides) {
  return g.tensor(dg::TensorAttr().set_name(name).set_dim(std::move(dims)).set_stride(std::move(strides)));
}

struct Fixture {
  dg::Graph g;
  dg::TensorPtr x;
  Fixture() {
    g.set_io_data_type(dg::DataType::HALF);
    x = tensor(g, "X", {2, 3, 4}, {1, 8, 2});  // a permuted layout
  }
  dg::Status validate(const dg::TensorPtr& y) {
    y->set_name("Y").set_output(true);
    return g.validate();
  }
};

// ---- reshape

TEST(InferReshape, InfersTheMinusOneAndPacksRowMajor) {
  Fixture f;
  auto y = f.g.reshape(f.x, dg::ReshapeAttr().set_name("rs").set_dim({4, -1}));
  ASSERT_TRUE(f.validate(y).ok());
  EXPECT_EQ(y->get_dim(), (Dims{4, 6}));
  EXPECT_EQ(y->get_stride(), (Dims{6, 1}));
  EXPECT_EQ(y->get_data_type(), dg::DataType::HALF);
}

TEST(InferReshape, DimsMayComeFromTheOutput) {
  Fixture f;
  auto y = f.g.reshape(f.x, dg::ReshapeAttr().set_name("rs"));
  y->set_dim({24});
  ASSERT_TRUE(f.validate(y).ok());
  EXPECT_EQ(y->get_stride(), (Dims{1}));
}

TEST(InferReshape, DimsAreRequired) {
  Fixture f;
  expect_status(f.validate(f.g.reshape(f.x, dg::ReshapeAttr().set_name("rs"))), dg::ErrorCode::ATTRIBUTE_NOT_SET,
                "node 'rs' (reshape): reshape dims are not set (call set_dim, or set the output's dims)");
}

TEST(InferReshape, AtMostOneMinusOne) {
  Fixture f;
  auto s = f.validate(f.g.reshape(f.x, dg::ReshapeAttr().set_name("rs").set_dim({-1, 2, -1})));
  expect_status(s, dg::ErrorCode::INVALID_VALUE,
                "node 'rs' (reshape): reshape dims [-1,2,-1] have 2 entries of -1; at most one dim may be inferred");
}

TEST(InferReshape, DimsMustBePositive) {
  Fixture f;
  auto s = f.validate(f.g.reshape(f.x, dg::ReshapeAttr().set_name("rs").set_dim({0, 24})));
  expect_status(s, dg::ErrorCode::INVALID_VALUE,
                "node 'rs' (reshape): reshape dims [0,24] must be >= 1, or -1 for one inferred dim");
}

TEST(InferReshape, MinusOneMustDivideTheVolume) {
  Fixture f;
  auto s = f.validate(f.g.reshape(f.x, dg::ReshapeAttr().set_name("rs").set_dim({5, -1})));
  expect_status(s, dg::ErrorCode::SHAPE_DEDUCTION_FAILED,
                "node 'rs' (reshape), tensor 'X': cannot infer the -1 in reshape dims [5,-1]: X's 24 elements are "
                "not a multiple of 5");
}

TEST(InferReshape, VolumeMustMatch) {
  Fixture f;
  auto s = f.validate(f.g.reshape(f.x, dg::ReshapeAttr().set_name("rs").set_dim({5, 5})));
  expect_status(s, dg::ErrorCode::SHAPE_DEDUCTION_FAILED,
                "node 'rs' (reshape), tensor 'X': reshape dims [5,5] hold 25 elements but X [2,3,4] holds 24");
}

// ---- transpose

TEST(InferTranspose, PermutesDimsAndPacksRowMajor) {
  Fixture f;
  auto y = f.g.transpose(f.x, dg::TransposeAttr().set_name("tp").set_permutation({2, 0, 1}));
  ASSERT_TRUE(f.validate(y).ok());
  EXPECT_EQ(y->get_dim(), (Dims{4, 2, 3}));
  EXPECT_EQ(y->get_stride(), (Dims{6, 3, 1}));
}

TEST(InferTranspose, UserStridesAreKept) {
  Fixture f;
  auto y = f.g.transpose(f.x, dg::TransposeAttr().set_name("tp").set_permutation({1, 0, 2}));
  y->set_stride({1, 3, 6});
  ASSERT_TRUE(f.validate(y).ok());
  EXPECT_EQ(y->get_stride(), (Dims{1, 3, 6}));
}

TEST(InferTranspose, PermutationLengthIsTheRank) {
  Fixture f;
  auto s = f.validate(f.g.transpose(f.x, dg::TransposeAttr().set_name("tp").set_permutation({1, 0})));
  expect_status(s, dg::ErrorCode::INVALID_VALUE,
                "node 'tp' (transpose): permutation [1,0] has 2 entries but X has rank 3");
}

TEST(InferTranspose, MustBeAPermutation) {
  for (Dims perm : {Dims{0, 1, 1}, Dims{0, 3, 1}, Dims{-1, 0, 1}}) {
    Fixture f;
    auto s = f.validate(f.g.transpose(f.x, dg::TransposeAttr().set_name("tp").set_permutation(perm)));
    EXPECT_EQ(s.code(), dg::ErrorCode::INVALID_VALUE);
    std::string p = "[" + std::to_string(perm[0]) + "," + std::to_string(perm[1]) + "," + std::to_string(perm[2]) + "]";
    EXPECT_EQ(s.message(), "node 'tp' (transpose): permutation " + p + " is not a permutation of 0..2");
  }
}

// ---- slice

TEST(InferSlice, TakesHalfOpenRangesAndKeepsTheLayout) {
  Fixture f;
  auto y = f.g.slice(f.x, dg::SliceAttr().set_name("sl").set_slices({{1, 2}, {0, 2}}));
  ASSERT_TRUE(f.validate(y).ok());
  EXPECT_EQ(y->get_dim(), (Dims{1, 2, 4}));  // dim 2 left out: taken whole
  EXPECT_EQ(y->get_stride(), (Dims{1, 4, 1}));
}

TEST(InferSlice, NoMoreRangesThanDims) {
  Fixture f;
  auto s = f.validate(f.g.slice(f.x, dg::SliceAttr().set_name("sl").set_slices({{0, 1}, {0, 1}, {0, 1}, {0, 1}})));
  expect_status(s, dg::ErrorCode::INVALID_VALUE,
                "node 'sl' (slice): slice has 4 ranges but X has rank 3");
}

TEST(InferSlice, NegativeStartIsAnError) {
  Fixture f;
  auto s = f.validate(f.g.slice(f.x, dg::SliceAttr().set_name("sl").set_slices({{-1, 1}})));
  expect_status(s, dg::ErrorCode::INVALID_VALUE,
                "node 'sl' (slice), tensor 'X': range [-1, 1) of dim 0 is outside [0, 2)");
}

TEST(InferSlice, EndPastTheDimIsAnError) {
  Fixture f;
  auto s = f.validate(f.g.slice(f.x, dg::SliceAttr().set_name("sl").set_slices({{0, 2}, {1, 4}})));
  expect_status(s, dg::ErrorCode::INVALID_VALUE,
                "node 'sl' (slice), tensor 'X': range [1, 4) of dim 1 is outside [0, 3)");
}

TEST(InferSlice, EmptyRangeIsAnError) {
  Fixture f;
  auto s = f.validate(f.g.slice(f.x, dg::SliceAttr().set_name("sl").set_slices({{1, 1}})));
  expect_status(s, dg::ErrorCode::INVALID_VALUE,
                "node 'sl' (slice), tensor 'X': range [1, 1) of dim 0 is empty (start must be below end)");
}

// ---- concatenate

TEST(InferConcatenate, SumsTheAxisAndKeepsTheFirstLayout) {
  Fixture f;
  auto b = tensor(f.g, "B", {2, 5, 4}, {20, 4, 1});
  auto y = f.g.concatenate({f.x, b}, dg::ConcatenateAttr().set_name("cat").set_axis(1));
  ASSERT_TRUE(f.validate(y).ok());
  EXPECT_EQ(y->get_dim(), (Dims{2, 8, 4}));
  EXPECT_EQ(y->get_stride(), (Dims{1, 8, 2}));
}

TEST(InferConcatenate, OneInputIsACopy) {
  Fixture f;
  auto y = f.g.concatenate({f.x}, dg::ConcatenateAttr().set_name("cat").set_axis(2));
  ASSERT_TRUE(f.validate(y).ok());
  EXPECT_EQ(y->get_dim(), (Dims{2, 3, 4}));
}

TEST(InferConcatenate, NeedsAnInput) {
  Fixture f;
  expect_status(f.validate(f.g.concatenate({}, dg::ConcatenateAttr().set_name("cat"))), dg::ErrorCode::INVALID_VALUE,
                "node 'cat' (concatenate): concatenate needs at least one input");
}

TEST(InferConcatenate, AxisMustBeInRange) {
  Fixture f;
  auto s = f.validate(f.g.concatenate({f.x, f.x}, dg::ConcatenateAttr().set_name("cat").set_axis(3)));
  expect_status(s, dg::ErrorCode::INVALID_VALUE,
                "node 'cat' (concatenate): axis 3 is outside [0, 3)");
}

TEST(InferConcatenate, RanksMustAgree) {
  Fixture f;
  auto b = tensor(f.g, "B", {2, 3}, {3, 1});
  auto s = f.validate(f.g.concatenate({f.x, b}, dg::ConcatenateAttr().set_name("cat").set_axis(0)));
  expect_status(s, dg::ErrorCode::SHAPE_DEDUCTION_FAILED,
                "node 'cat' (concatenate), tensor 'B': rank 2 differs from the first input's rank 3");
}

TEST(InferConcatenate, OtherDimsMustAgree) {
  Fixture f;
  auto b = tensor(f.g, "B", {2, 3, 5}, {15, 5, 1});
  auto s = f.validate(f.g.concatenate({f.x, b}, dg::ConcatenateAttr().set_name("cat").set_axis(0)));
  expect_status(s, dg::ErrorCode::SHAPE_DEDUCTION_FAILED,
                "node 'cat' (concatenate), tensor 'B': dims [2,3,5] differ from the first input's [2,3,4] outside the "
                "axis 0");
}

TEST(InferConcatenate, MissingInput) {
  Fixture f;
  auto s = f.validate(f.g.concatenate({f.x, nullptr}, dg::ConcatenateAttr().set_name("cat").set_axis(0)));
  expect_status(s, dg::ErrorCode::ATTRIBUTE_NOT_SET,
                "node 'cat' (concatenate): input IN_1 is missing");
}

}  // namespace
