// Shape inference and validation of resample (pooling and resizing), through the public Graph API.
#include <gtest/gtest.h>

#include "common/status_checks.hpp"
#include "dnngraph/dnngraph.hpp"

namespace dg = dnngraph;

namespace {

using test_status::expect_status;

using Dims = std::vector<int64_t>;

struct Built {
  dg::Graph g;
  dg::TensorPtr y;
};

// X (2, 3, 7, 6) in NHWC layout, resampled with attr; Y's dims set when given.
dg::Status build(Built& b, dg::ResampleAttr attr, Dims y_dims = {}) {
  b.g.set_io_data_type(dg::DataType::FLOAT);
  auto x = b.g.tensor(dg::TensorAttr().set_name("X").set_dim({2, 3, 7, 6}).set_stride({126, 1, 18, 3}));
  b.y = b.g.resample(x, attr.set_name("rs"));
  b.y->set_name("Y").set_output(true);
  if (!y_dims.empty()) b.y->set_dim(y_dims);
  return b.g.validate();
}

dg::ResampleAttr pool(dg::ResampleMode m = dg::ResampleMode::MAXPOOL) {
  return dg::ResampleAttr().set_resampling_mode(m).set_window({3, 2}).set_stride({2, 2});
}

TEST(InferResample, PoolingOutputSizeAndLayout) {
  Built b;
  ASSERT_TRUE(build(b, pool().set_pre_padding({1, 0}).set_post_padding({2, 1})).ok());
  // H: (7 + 1 + 2 - 3) / 2 + 1 = 4;  W: (6 + 0 + 1 - 2) / 2 + 1 = 3
  EXPECT_EQ(b.y->get_dim(), (Dims{2, 3, 4, 3}));
  EXPECT_EQ(b.y->get_stride(), (Dims{36, 1, 9, 3}));
}

TEST(InferResample, PoolingWithoutPaddingFloorsTheSize) {
  Built b;
  ASSERT_TRUE(build(b, pool(dg::ResampleMode::AVGPOOL_EXCLUDE_PADDING)).ok());
  EXPECT_EQ(b.y->get_dim(), (Dims{2, 3, 3, 3}));  // (7 - 3) / 2 + 1, (6 - 2) / 2 + 1
}

TEST(InferResample, ResizeFromScale) {
  Built b;
  ASSERT_TRUE(build(b, dg::ResampleAttr().set_resampling_mode(dg::ResampleMode::BILINEAR).set_scale({1.5, 0.5})).ok());
  EXPECT_EQ(b.y->get_dim(), (Dims{2, 3, 10, 3}));  // floor(7 * 1.5), floor(6 * 0.5)
}

TEST(InferResample, ResizeFromUserDims) {
  Built b;
  ASSERT_TRUE(build(b, dg::ResampleAttr().set_resampling_mode(dg::ResampleMode::NEAREST), {2, 3, 5, 13}).ok());
  EXPECT_EQ(b.y->get_stride(), (Dims{195, 1, 39, 3}));
}

TEST(InferResample, ModeMustBeSet) {
  Built b;
  expect_status(build(b, dg::ResampleAttr().set_window({2, 2}).set_stride({2, 2})), dg::ErrorCode::ATTRIBUTE_NOT_SET,
                "node 'rs' (resample): resampling mode is not set");
}

TEST(InferResample, UnknownModeIsRejected) {
  Built b;
  auto s = build(b, dg::ResampleAttr().set_resampling_mode(static_cast<dg::ResampleMode>(42)));
  expect_status(s, dg::ErrorCode::INVALID_VALUE,
                "node 'rs' (resample): unknown resampling mode 42");
}

TEST(InferResample, XNeedsASpatialDim) {
  dg::Graph g;
  g.set_io_data_type(dg::DataType::FLOAT);
  auto x = g.tensor(dg::TensorAttr().set_name("X").set_dim({2, 3}).set_stride({3, 1}));
  g.resample(x, pool().set_name("rs"))->set_output(true);
  expect_status(g.validate(), dg::ErrorCode::SHAPE_DEDUCTION_FAILED,
                "node 'rs' (resample), tensor 'X': rank 2 is below 3 (resample needs dims N, C and at least one "
                "spatial dim)");
}

TEST(InferResample, WindowIsRequired) {
  Built b;
  auto s = build(b, dg::ResampleAttr().set_resampling_mode(dg::ResampleMode::MAXPOOL).set_stride({1, 1}));
  expect_status(s, dg::ErrorCode::ATTRIBUTE_NOT_SET,
                "node 'rs' (resample): pooling window is not set");
}

TEST(InferResample, StrideIsRequired) {
  Built b;
  auto s = build(b, dg::ResampleAttr().set_resampling_mode(dg::ResampleMode::MAXPOOL).set_window({2, 2}));
  expect_status(s, dg::ErrorCode::ATTRIBUTE_NOT_SET,
                "node 'rs' (resample): pooling stride is not set");
}

TEST(InferResample, OneValuePerSpatialDim) {
  Built b;
  expect_status(build(b, pool().set_window({3})), dg::ErrorCode::INVALID_VALUE,
                "node 'rs' (resample): window [3] has 1 values but X has 2 spatial dims");
}

TEST(InferResample, StrideMustBePositive) {
  Built b;
  expect_status(build(b, pool().set_stride({1, 0})), dg::ErrorCode::INVALID_VALUE,
                "node 'rs' (resample): stride [1,0] must all be >= 1");
}

TEST(InferResample, PaddingMustNotBeNegative) {
  Built b;
  expect_status(build(b, pool().set_pre_padding({0, -1})), dg::ErrorCode::INVALID_VALUE,
                "node 'rs' (resample): pre-padding [0,-1] must all be >= 0");
}

TEST(InferResample, PaddingMustBeSmallerThanTheWindow) {
  Built b;
  expect_status(build(b, pool().set_padding({1, 2})), dg::ErrorCode::INVALID_VALUE,
                "node 'rs' (resample): padding [1,2] / [1,2] must be smaller than the window [3,2] in spatial dim 1");
}

TEST(InferResample, WindowMustFitThePaddedInput) {
  Built b;
  expect_status(build(b, pool().set_window({9, 2}).set_padding({0, 0})), dg::ErrorCode::SHAPE_DEDUCTION_FAILED,
                "node 'rs' (resample), tensor 'X': spatial dim 0 padded to 7 is smaller than the window 9");
}

TEST(InferResample, UserDimsMustAgreeWithPooling) {
  Built b;
  expect_status(build(b, pool(), {2, 3, 4, 3}), dg::ErrorCode::SHAPE_DEDUCTION_FAILED,
                "node 'rs' (resample), tensor 'Y': dims [2,3,4,3] disagree with the inferred [2,3,3,3]");
}

TEST(InferResample, ResizeNeedsDimsOrScale) {
  Built b;
  auto s = build(b, dg::ResampleAttr().set_resampling_mode(dg::ResampleMode::NEAREST));
  expect_status(s, dg::ErrorCode::ATTRIBUTE_NOT_SET,
                "node 'rs' (resample), tensor 'Y': resizing needs the output's dims or a scale (set Y's dims or call "
                "set_scale)");
}

TEST(InferResample, ResizeKeepsBatchAndChannels) {
  Built b;
  auto s = build(b, dg::ResampleAttr().set_resampling_mode(dg::ResampleMode::BILINEAR), {2, 4, 5, 5});
  expect_status(s, dg::ErrorCode::SHAPE_DEDUCTION_FAILED,
                "node 'rs' (resample), tensor 'Y': dims [2,4,5,5] must keep X's rank and N, C [2,3,7,6] (resizing "
                "changes only the spatial dims)");
}

TEST(InferResample, ScaleHasOneValuePerSpatialDim) {
  Built b;
  auto s = build(b, dg::ResampleAttr().set_resampling_mode(dg::ResampleMode::NEAREST).set_scale({2.0}));
  expect_status(s, dg::ErrorCode::INVALID_VALUE,
                "node 'rs' (resample): scale has 1 values but X has 2 spatial dims");
}

TEST(InferResample, ScaleMustGiveAPositiveSize) {
  Built b;
  auto s = build(b, dg::ResampleAttr().set_resampling_mode(dg::ResampleMode::NEAREST).set_scale({2.0, 0.1}));
  expect_status(s, dg::ErrorCode::INVALID_VALUE,
                "node 'rs' (resample): scale 0.100000 of spatial dim 1 gives an output size below 1 from 6");
}

}  // namespace
