// Shape inference and validation of conv_fprop, conv_dgrad and conv_wgrad: inferred outputs, and
// every rule's error code and message.
#include <gtest/gtest.h>

#include "common/dims.hpp"
#include "common/status_checks.hpp"
#include "dnngraph/dnngraph.hpp"

namespace dg = dnngraph;
using dg::DataType;
using dg::ErrorCode;

namespace {

using test_dims::channels_last;
using test_dims::packed;
using test_status::expect_error;

dg::TensorPtr make(dg::Graph& g, const char* name, const std::vector<int64_t>& dims,
                   DataType t = DataType::NOT_SET) {
  return g.tensor(dg::TensorAttr().set_name(name).set_dim(dims).set_stride(packed(dims)).set_data_type(t));
}

constexpr const char* kFprop = "node 'conv' (conv_fprop)";
constexpr const char* kDgrad = "node 'dgrad' (conv_dgrad)";
constexpr const char* kWgrad = "node 'wgrad' (conv_wgrad)";

// One conv_fprop graph: X, W -> Y (an output).
struct Fprop {
  dg::Graph g;
  dg::TensorPtr X, W, Y;
  Fprop(const std::vector<int64_t>& x, const std::vector<int64_t>& w, DataType xt = DataType::NOT_SET,
        DataType wt = DataType::NOT_SET) {
    g.set_io_data_type(DataType::HALF).set_intermediate_data_type(DataType::FLOAT);
    X = make(g, "X", x, xt);
    W = make(g, "W", w, wt);
  }
  dg::Status run(dg::ConvFpropAttr attr = {}) {
    Y = g.conv_fprop(X, W, attr.set_name("conv"));
    Y->set_output(true);
    return g.validate();
  }
};

}  // namespace

TEST(InferConvFprop, InfersDimsStridesAndTypeFor2dNchw) {
  Fprop c({2, 8, 10, 12}, {16, 8, 3, 5});
  auto s = c.run(dg::ConvFpropAttr().set_pre_padding({1, 2}).set_post_padding({0, 1}).set_stride({2, 1}));
  ASSERT_TRUE(s.ok()) << s.to_string();
  // (10 + 1 + 0 - 3) / 2 + 1 = 5; (12 + 2 + 1 - 5) / 1 + 1 = 11
  EXPECT_EQ(c.Y->get_dim(), (std::vector<int64_t>{2, 16, 5, 11}));
  EXPECT_EQ(c.Y->get_stride(), packed({2, 16, 5, 11}));
  EXPECT_EQ(c.Y->get_data_type(), DataType::HALF);
}

TEST(InferConvFprop, OutputFollowsNhwcLayoutOfX) {
  Fprop c({2, 8, 9, 9}, {4, 8, 3, 3});
  c.X->set_stride(channels_last({2, 8, 9, 9}));
  ASSERT_TRUE(c.run(dg::ConvFpropAttr().set_padding({1, 1})).ok());
  EXPECT_EQ(c.Y->get_dim(), (std::vector<int64_t>{2, 4, 9, 9}));
  EXPECT_EQ(c.Y->get_stride(), channels_last({2, 4, 9, 9}));
}

TEST(InferConvFprop, Infers1dAnd3dWithDilation) {
  Fprop c1({1, 3, 20}, {5, 3, 4});
  ASSERT_TRUE(c1.run(dg::ConvFpropAttr().set_dilation({3}).set_stride({2})).ok());
  EXPECT_EQ(c1.Y->get_dim(), (std::vector<int64_t>{1, 5, 6}));  // (20 - 9 - 1) / 2 + 1
  Fprop c3({1, 2, 7, 8, 9}, {3, 2, 3, 3, 1});
  ASSERT_TRUE(c3.run(dg::ConvFpropAttr().set_padding({1, 0, 2}).set_dilation({1, 2, 1})).ok());
  EXPECT_EQ(c3.Y->get_dim(), (std::vector<int64_t>{1, 3, 7, 4, 13}));
}

TEST(InferConvFprop, GroupsAndDepthwiseAreAccepted) {
  Fprop grouped({1, 6, 5, 5}, {9, 2, 3, 3});  // groups = 3
  EXPECT_TRUE(grouped.run().ok());
  Fprop depthwise({1, 6, 5, 5}, {12, 1, 3, 3});  // groups = 6, multiplier 2
  EXPECT_TRUE(depthwise.run().ok());
  EXPECT_EQ(depthwise.Y->get_dim(), (std::vector<int64_t>{1, 12, 3, 3}));
}

TEST(InferConvFprop, VirtualOutputTakesIntermediateType) {
  Fprop c({1, 4, 6, 6}, {4, 4, 3, 3});
  auto y = c.g.conv_fprop(c.X, c.W, dg::ConvFpropAttr().set_name("conv"));
  auto r = c.g.relu(y);
  r->set_output(true);
  ASSERT_TRUE(c.g.validate().ok());
  EXPECT_EQ(y->get_data_type(), DataType::FLOAT);
  EXPECT_EQ(r->get_data_type(), DataType::HALF);
}

TEST(InferConvFprop, MissingInput) {
  Fprop c({1, 4, 6, 6}, {4, 4, 3, 3});
  c.W = nullptr;
  expect_error(c.run(), ErrorCode::ATTRIBUTE_NOT_SET, kFprop, "", "input W is missing");
}

TEST(InferConvFprop, RankMismatch) {
  Fprop c({1, 4, 6, 6}, {4, 4, 3});
  expect_error(c.run(), ErrorCode::SHAPE_DEDUCTION_FAILED, kFprop, "W", "rank 3 differs from X's rank 4");
}

TEST(InferConvFprop, UserSetOutputRankMismatch) {
  Fprop c({1, 4, 6, 6}, {4, 4, 3, 3});
  auto y = c.g.conv_fprop(c.X, c.W, dg::ConvFpropAttr().set_name("conv"));
  y->set_name("Y").set_dim({1, 4, 4}).set_output(true);
  expect_error(c.g.validate(), ErrorCode::SHAPE_DEDUCTION_FAILED, kFprop, "Y", "rank 3 differs from X's rank 4");
}

TEST(InferConvFprop, RankOutsideThreeToFive) {
  Fprop low({4, 6}, {4, 6});
  expect_error(low.run(), ErrorCode::INVALID_VALUE, kFprop, "X", "rank 2 is outside 3..5");
  Fprop high({1, 1, 2, 2, 2, 2}, {1, 1, 1, 1, 1, 1});
  expect_error(high.run(), ErrorCode::INVALID_VALUE, kFprop, "X", "rank 6 is outside 3..5");
}

TEST(InferConvFprop, ChannelsNotAMultipleOfFilterChannels) {
  Fprop c({1, 6, 5, 5}, {4, 4, 3, 3});
  expect_error(c.run(), ErrorCode::SHAPE_DEDUCTION_FAILED, kFprop, "X",
               "channel count 6 is not a multiple of the filter's channels per group 4");
}

TEST(InferConvFprop, OutputChannelsNotDivisibleByGroups) {
  Fprop c({1, 4, 5, 5}, {3, 2, 3, 3});
  expect_error(c.run(), ErrorCode::SHAPE_DEDUCTION_FAILED, kFprop, "W",
               "output channel count K=3 is not divisible by groups=2");
}

TEST(InferConvFprop, WrongNumberOfPaddingStrideDilationValues) {
  Fprop pad({1, 4, 5, 5}, {4, 4, 3, 3});
  expect_error(pad.run(dg::ConvFpropAttr().set_padding({1, 1, 1})), ErrorCode::INVALID_VALUE, kFprop, "",
               "pre-padding has 3 values but there are 2 spatial dims");
  Fprop post({1, 4, 5, 5}, {4, 4, 3, 3});
  expect_error(post.run(dg::ConvFpropAttr().set_pre_padding({1, 1}).set_post_padding({1})), ErrorCode::INVALID_VALUE,
               kFprop, "", "post-padding has 1 values but there are 2 spatial dims");
  Fprop stride({1, 4, 5, 5}, {4, 4, 3, 3});
  expect_error(stride.run(dg::ConvFpropAttr().set_stride({2})), ErrorCode::INVALID_VALUE, kFprop, "",
               "stride has 1 values but there are 2 spatial dims");
  Fprop dil({1, 4, 5}, {4, 4, 3});
  expect_error(dil.run(dg::ConvFpropAttr().set_dilation({1, 1})), ErrorCode::INVALID_VALUE, kFprop, "",
               "dilation has 2 values but there are 1 spatial dims");
}

TEST(InferConvFprop, NegativePadding) {
  Fprop c({1, 4, 5, 5}, {4, 4, 3, 3});
  expect_error(c.run(dg::ConvFpropAttr().set_pre_padding({0, -1}).set_post_padding({0, 0})),
               ErrorCode::INVALID_VALUE, kFprop, "", "padding [0,-1]/[0,0] must not be negative");
}

TEST(InferConvFprop, StrideBelowOne) {
  Fprop c({1, 4, 5, 5}, {4, 4, 3, 3});
  expect_error(c.run(dg::ConvFpropAttr().set_stride({1, 0})), ErrorCode::INVALID_VALUE, kFprop, "",
               "stride [1,0] must be >= 1");
}

TEST(InferConvFprop, DilationBelowOne) {
  Fprop c({1, 4, 5, 5}, {4, 4, 3, 3});
  expect_error(c.run(dg::ConvFpropAttr().set_dilation({0, 1})), ErrorCode::INVALID_VALUE, kFprop, "",
               "dilation [0,1] must be >= 1");
}

TEST(InferConvFprop, OutputSpatialSizeBelowOne) {
  Fprop c({1, 4, 5, 5}, {4, 4, 3, 3});
  expect_error(c.run(dg::ConvFpropAttr().set_dilation({1, 3})), ErrorCode::SHAPE_DEDUCTION_FAILED, kFprop, "X",
               "spatial dim 1: input 5 padded by 0+0 is smaller than the dilated kernel 7");
}

TEST(InferConvFprop, InputsMustShareDataType) {
  Fprop c({1, 4, 5, 5}, {4, 4, 3, 3}, DataType::FLOAT, DataType::HALF);
  expect_error(c.run(), ErrorCode::INVALID_DATA_TYPE, kFprop, "W",
               "data type HALF differs from the FLOAT of 'X' (convolution inputs must share a data type)");
}

TEST(InferConvFprop, BooleanAndInt64AreRejected) {
  for (DataType t : {DataType::BOOLEAN, DataType::INT64}) {
    Fprop c({1, 4, 5, 5}, {4, 4, 3, 3}, t, t);
    expect_error(c.run(), ErrorCode::INVALID_DATA_TYPE, kFprop, "X",
                 "data type " + std::string(dg::to_string(t)) + " is not allowed for convolutions");
  }
  Fprop out({1, 4, 5, 5}, {4, 4, 3, 3});
  auto y = out.g.conv_fprop(out.X, out.W, dg::ConvFpropAttr().set_name("conv"));
  y->set_name("Y").set_data_type(DataType::BOOLEAN).set_output(true);
  expect_error(out.g.validate(), ErrorCode::INVALID_DATA_TYPE, kFprop, "Y",
               "data type BOOLEAN is not allowed for convolutions");
}

TEST(InferConvFprop, Int8InputsNeedInt32OrFloatOutput) {
  for (DataType ot : {DataType::INT32, DataType::FLOAT}) {
    Fprop c({1, 4, 5, 5}, {4, 4, 3, 3}, DataType::INT8, DataType::INT8);
    auto y = c.g.conv_fprop(c.X, c.W, dg::ConvFpropAttr().set_name("conv"));
    y->set_data_type(ot).set_output(true);
    EXPECT_TRUE(c.g.validate().ok()) << dg::to_string(ot);
  }
  Fprop bad({1, 4, 5, 5}, {4, 4, 3, 3}, DataType::INT8, DataType::INT8);  // Y defaults to io HALF
  expect_error(bad.run(), ErrorCode::INVALID_DATA_TYPE, kFprop, "conv::Y",
               "data type HALF is not allowed for INT8 inputs (the output must be INT32 or FLOAT)");
}

TEST(InferConvFprop, UserSetOutputDimsMustAgree) {
  Fprop c({1, 4, 5, 5}, {4, 4, 3, 3});
  auto y = c.g.conv_fprop(c.X, c.W, dg::ConvFpropAttr().set_name("conv"));
  y->set_name("Y").set_dim({1, 4, 5, 5}).set_output(true);
  expect_error(c.g.validate(), ErrorCode::SHAPE_DEDUCTION_FAILED, kFprop, "Y",
               "dims [1,4,5,5] disagree with the inferred [1,4,3,3]");
}

// ---- conv_dgrad

namespace {
struct Dgrad {
  dg::Graph g;
  dg::TensorPtr DY, W, DX;
  Dgrad(const std::vector<int64_t>& dy, const std::vector<int64_t>& w) {
    g.set_io_data_type(DataType::FLOAT);
    DY = make(g, "DY", dy);
    W = make(g, "W", w);
  }
  dg::Status run(dg::ConvDgradAttr attr, const std::vector<int64_t>& dx_dims = {}) {
    DX = g.conv_dgrad(DY, W, attr.set_name("dgrad"));
    DX->set_name("DX").set_output(true);
    if (!dx_dims.empty()) DX->set_dim(dx_dims);
    return g.validate();
  }
};
}  // namespace

TEST(InferConvDgrad, InfersDxDimsWithGroupsOne) {
  Dgrad d({2, 8, 4, 5}, {8, 3, 3, 3});
  ASSERT_TRUE(d.run(dg::ConvDgradAttr().set_padding({1, 1}).set_stride({2, 3})).ok());
  // (4-1)*2 - 2 + 2 + 1 = 7; (5-1)*3 - 2 + 2 + 1 = 13
  EXPECT_EQ(d.DX->get_dim(), (std::vector<int64_t>{2, 3, 7, 13}));
}

TEST(InferConvDgrad, DxFollowsDyLayout) {
  Dgrad d({2, 8, 4, 4}, {8, 3, 3, 3});
  d.DY->set_stride(channels_last({2, 8, 4, 4}));
  ASSERT_TRUE(d.run(dg::ConvDgradAttr()).ok());
  EXPECT_EQ(d.DX->get_stride(), channels_last({2, 3, 6, 6}));
}

TEST(InferConvDgrad, UserSetDxPicksSizeAndGroups) {
  Dgrad d({1, 8, 4, 4}, {8, 3, 3, 3});
  // fprop of 8 with pad 1, stride 2, kernel 3 gives 4, as does 7: DX = 8 is allowed; groups = 6/3.
  auto s = d.run(dg::ConvDgradAttr().set_padding({1, 1}).set_stride({2, 2}), {1, 6, 8, 7});
  EXPECT_TRUE(s.ok()) << s.to_string();
}

TEST(InferConvDgrad, UserSetDxMustMapOntoDy) {
  Dgrad d({1, 8, 4, 4}, {8, 3, 3, 3});
  expect_error(d.run(dg::ConvDgradAttr().set_padding({1, 1}).set_stride({2, 2}), {1, 3, 9, 8}),
               ErrorCode::SHAPE_DEDUCTION_FAILED, kDgrad, "DX",
               "a convolution over DX's spatial dims [9,8] gives [5,4], not DY's [4,4]");
}

TEST(InferConvDgrad, UserSetDxBatchAndGroups) {
  Dgrad batch({2, 8, 4, 4}, {8, 3, 3, 3});
  expect_error(batch.run(dg::ConvDgradAttr(), {1, 3, 6, 6}), ErrorCode::SHAPE_DEDUCTION_FAILED, kDgrad, "DX",
               "batch 1 differs from DY's batch 2");
  Dgrad groups({2, 8, 4, 4}, {8, 3, 3, 3});
  expect_error(groups.run(dg::ConvDgradAttr(), {2, 9, 6, 6}), ErrorCode::SHAPE_DEDUCTION_FAILED, kDgrad, "W",
               "output channel count K=8 is not divisible by groups=3");
}

TEST(InferConvDgrad, DyChannelsMustEqualK) {
  Dgrad d({1, 6, 4, 4}, {8, 3, 3, 3});
  expect_error(d.run(dg::ConvDgradAttr()), ErrorCode::SHAPE_DEDUCTION_FAILED, kDgrad, "W",
               "output channels K=8 differ from DY's channel count 6");
}

TEST(InferConvDgrad, PaddingBeyondExtent) {
  Dgrad d({1, 4, 1, 1}, {4, 3, 1, 1});
  expect_error(d.run(dg::ConvDgradAttr().set_padding({1, 0})), ErrorCode::SHAPE_DEDUCTION_FAILED, kDgrad, "DY",
               "spatial dim 0: the padding 1+1 exceeds the transposed convolution's extent (DX size would be -1 < 1)");
}

TEST(InferConvDgrad, SharesParameterAndTypeRules) {
  Dgrad d({1, 4, 4, 4}, {4, 3, 3, 3});
  expect_error(d.run(dg::ConvDgradAttr().set_stride({0, 1})), ErrorCode::INVALID_VALUE, kDgrad, "",
               "stride [0,1] must be >= 1");
  Dgrad t({1, 4, 4, 4}, {4, 3, 3, 3});
  t.W->set_data_type(DataType::BFLOAT16);
  expect_error(t.run(dg::ConvDgradAttr()), ErrorCode::INVALID_DATA_TYPE, kDgrad, "W",
               "data type BFLOAT16 differs from the FLOAT of 'DY'");
  Dgrad r({1, 4, 4, 4}, {4, 3, 3});
  expect_error(r.run(dg::ConvDgradAttr()), ErrorCode::SHAPE_DEDUCTION_FAILED, kDgrad, "W",
               "rank 3 differs from DY's rank 4");
}

// ---- conv_wgrad

namespace {
struct Wgrad {
  dg::Graph g;
  dg::TensorPtr DY, X, DW;
  Wgrad(const std::vector<int64_t>& dy, const std::vector<int64_t>& x) {
    g.set_io_data_type(DataType::FLOAT);
    DY = make(g, "DY", dy);
    X = make(g, "X", x);
  }
  dg::Status run(dg::ConvWgradAttr attr, const std::vector<int64_t>& dw_dims = {}) {
    DW = g.conv_wgrad(DY, X, attr.set_name("wgrad"));
    DW->set_name("DW").set_output(true);
    if (!dw_dims.empty()) DW->set_dim(dw_dims);
    return g.validate();
  }
};
}  // namespace

TEST(InferConvWgrad, InfersLargestConsistentKernel) {
  Wgrad w({2, 4, 4, 6}, {2, 3, 9, 10});
  ASSERT_TRUE(w.run(dg::ConvWgradAttr().set_stride({2, 1}).set_dilation({1, 2})).ok());
  // dim 0: (9 - 3) / 2 + 1 = 4 (k = 4 gives (9 - 4) / 2 + 1 = 3); dim 1: 10 - 2 * 2 = 6
  EXPECT_EQ(w.DW->get_dim(), (std::vector<int64_t>{4, 3, 3, 3}));
}

TEST(InferConvWgrad, DwFollowsXLayout) {
  Wgrad w({2, 4, 4, 4}, {2, 3, 6, 6});
  w.X->set_stride(channels_last({2, 3, 6, 6}));
  ASSERT_TRUE(w.run(dg::ConvWgradAttr()).ok());
  EXPECT_EQ(w.DW->get_stride(), channels_last({4, 3, 3, 3}));
}

TEST(InferConvWgrad, NoKernelFits) {
  Wgrad w({1, 4, 8}, {1, 3, 10});
  expect_error(w.run(dg::ConvWgradAttr().set_dilation({3})), ErrorCode::SHAPE_DEDUCTION_FAILED, kWgrad, "DY",
               "spatial dim 0: no kernel size maps X's 10 onto DY's 8");
}

TEST(InferConvWgrad, UserSetDwWithGroups) {
  Wgrad ok({1, 4, 3, 3}, {1, 6, 5, 5});
  EXPECT_TRUE(ok.run(dg::ConvWgradAttr(), {4, 3, 3, 3}).ok());
  Wgrad chans({1, 4, 3, 3}, {1, 6, 5, 5});
  expect_error(chans.run(dg::ConvWgradAttr(), {4, 4, 3, 3}), ErrorCode::SHAPE_DEDUCTION_FAILED, kWgrad, "X",
               "channel count 6 is not a multiple of the filter's channels per group 4");
  Wgrad k({1, 4, 3, 3}, {1, 6, 5, 5});
  expect_error(k.run(dg::ConvWgradAttr(), {6, 3, 3, 3}), ErrorCode::SHAPE_DEDUCTION_FAILED, kWgrad, "DW",
               "output channels K=6 differ from DY's channel count 4");
}

TEST(InferConvWgrad, UserSetDwKernelMustMapXOntoDy) {
  Wgrad w({1, 4, 3, 3}, {1, 3, 5, 5});
  expect_error(w.run(dg::ConvWgradAttr(), {4, 3, 3, 2}), ErrorCode::SHAPE_DEDUCTION_FAILED, kWgrad, "DW",
               "a convolution over X's spatial dims [5,5] gives [3,4], not DY's [3,3]");
}

TEST(InferConvWgrad, BatchMustAgree) {
  Wgrad w({2, 4, 3, 3}, {1, 3, 5, 5});
  expect_error(w.run(dg::ConvWgradAttr()), ErrorCode::SHAPE_DEDUCTION_FAILED, kWgrad, "X",
               "batch 1 differs from DY's batch 2");
}

TEST(InferConvWgrad, SharesParameterAndTypeRules) {
  Wgrad p({1, 4, 3, 3}, {1, 3, 5, 5});
  expect_error(p.run(dg::ConvWgradAttr().set_padding({-1, 0})), ErrorCode::INVALID_VALUE, kWgrad, "",
               "must not be negative");
  Wgrad t({1, 4, 3, 3}, {1, 3, 5, 5});
  t.X->set_data_type(DataType::HALF);
  expect_error(t.run(dg::ConvWgradAttr()), ErrorCode::INVALID_DATA_TYPE, kWgrad, "X",
               "data type HALF differs from the FLOAT of 'DY'");
  Wgrad m({1, 4, 3, 3}, {1, 3, 5, 5});
  m.X = nullptr;
  expect_error(m.run(dg::ConvWgradAttr()), ErrorCode::ATTRIBUTE_NOT_SET, kWgrad, "", "input X is missing");
}
