// Shape inference and validation of conv_fprop, conv_dgrad and conv_wgrad: inferred outputs, and
// every rule's error code and message.
#include <gtest/gtest.h>

#include <initializer_list>
#include <type_traits>
#include <vector>

#include "common/dims.hpp"
#include "common/status_checks.hpp"
#include "common/tensors.hpp"
#include "dnngraph/dnngraph.hpp"

namespace dg = dnngraph;
using dg::DataType;
using dg::ErrorCode;

namespace {

using test_dims::channels_last;
using test_dims::packed;
using test_status::expect_error;

using test_tensors::packed_tensor;

constexpr const char* kFprop = "node 'conv' (conv_fprop)";
constexpr const char* kDgrad = "node 'dgrad' (conv_dgrad)";
constexpr const char* kWgrad = "node 'wgrad' (conv_wgrad)";

// HALF io, FLOAT intermediates: the fprop tests' graph types.
dg::Graph half_io_graph() {
  dg::Graph g;
  g.set_io_data_type(DataType::HALF).set_intermediate_data_type(DataType::FLOAT);
  return g;
}

// One conv_fprop graph: X, W -> Y (an output).
struct Fprop {
  dg::Graph g = half_io_graph();
  dg::TensorPtr X, W, Y;
  Fprop(const std::vector<int64_t>& x, const std::vector<int64_t>& w, DataType xt = DataType::NOT_SET,
        DataType wt = DataType::NOT_SET)
      : X(packed_tensor(g, "X", x, xt)), W(packed_tensor(g, "W", w, wt)) {}
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

TEST(InferConvFprop, InputsShareADataTypeUnlessBothAreFloatingPoint) {
  Fprop c({1, 4, 5, 5}, {4, 4, 3, 3}, DataType::INT8, DataType::FLOAT);
  expect_error(c.run(), ErrorCode::INVALID_DATA_TYPE, kFprop, "W",
               "data type FLOAT differs from the INT8 of 'X' (convolution inputs must share a data type unless "
               "both are floating point)");
  Fprop ints({1, 4, 5, 5}, {4, 4, 3, 3}, DataType::INT8, DataType::INT32);
  expect_error(ints.run(), ErrorCode::INVALID_DATA_TYPE, kFprop, "W",
               "data type INT32 differs from the INT8 of 'X' (convolution inputs must share a data type unless "
               "both are floating point)");
  // A FLOAT prologue into HALF weights (the frontend's scale-bias-ReLU wgrad): both read in the compute type.
  for (auto [x, w] : {std::pair{DataType::FLOAT, DataType::HALF}, std::pair{DataType::BFLOAT16, DataType::FLOAT}}) {
    Fprop mixed({1, 4, 5, 5}, {4, 4, 3, 3}, x, w);
    EXPECT_TRUE(mixed.run().ok()) << dg::to_string(x) << " x " << dg::to_string(w);
  }
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

// ---- conv_dgrad and conv_wgrad

namespace {

// A FLOAT conv_dgrad graph (DY, W -> DX) or conv_wgrad graph (DY, X -> DW), inputs packed: `second`
// is W or X, `out` DX or DW. run(attr) adds the node ("dgrad" or "wgrad"), the output's dims set
// by the user where given, and returns validate's answer.
template <typename Attr>
struct ConvGrad {
  static constexpr bool kDgrad = std::is_same_v<Attr, dg::ConvDgradAttr>;
  dg::Graph g;
  dg::TensorPtr DY, second, out;
  ConvGrad(const std::vector<int64_t>& dy, const std::vector<int64_t>& second_dims) {
    g.set_io_data_type(DataType::FLOAT);
    DY = packed_tensor(g, "DY", dy);
    second = packed_tensor(g, kDgrad ? "W" : "X", second_dims);
  }
  dg::Status run(Attr attr, const std::vector<int64_t>& out_dims = {}) {
    if constexpr (kDgrad) {
      out = g.conv_dgrad(DY, second, attr.set_name("dgrad"));
    } else {
      out = g.conv_wgrad(DY, second, attr.set_name("wgrad"));
    }
    out->set_name(kDgrad ? "DX" : "DW").set_output(true);
    if (!out_dims.empty()) out->set_dim(out_dims);
    return g.validate();
  }
};
using Dgrad = ConvGrad<dg::ConvDgradAttr>;
using Wgrad = ConvGrad<dg::ConvWgradAttr>;

// A gradient graph that breaks one rule: DY's and the second input's dims, the attribute, the
// output's user-set dims (empty: inferred), and the error's code, tensor and rule.
template <typename Attr>
struct GradRule {
  std::vector<int64_t> dy, second;
  Attr attr;
  std::vector<int64_t> out_dims;
  ErrorCode code;
  const char* tensor;
  const char* rule;
};

template <typename Attr>
void expect_rules(const char* node, std::initializer_list<GradRule<Attr>> rules) {
  for (const GradRule<Attr>& r : rules) {
    SCOPED_TRACE(r.rule);
    ConvGrad<Attr> c(r.dy, r.second);
    expect_error(c.run(r.attr, r.out_dims), r.code, node, r.tensor, r.rule);
  }
}

constexpr ErrorCode kShapeFailed = ErrorCode::SHAPE_DEDUCTION_FAILED;

}  // namespace

// What the gradients infer: DX's dims (groups 1) and DW's (the largest kernel consistent with X
// and DY), each in the layout of its input (DY for DX, X for DW); user-set output dims choose among
// the sizes that map onto DY, and the groups.
TEST(InferConvGrad, InfersOutputDims) {
  Dgrad d({2, 8, 4, 5}, {8, 3, 3, 3});
  ASSERT_TRUE(d.run(dg::ConvDgradAttr().set_padding({1, 1}).set_stride({2, 3})).ok());
  // (4-1)*2 - 2 + 2 + 1 = 7; (5-1)*3 - 2 + 2 + 1 = 13
  EXPECT_EQ(d.out->get_dim(), (std::vector<int64_t>{2, 3, 7, 13}));
  Wgrad w({2, 4, 4, 6}, {2, 3, 9, 10});
  ASSERT_TRUE(w.run(dg::ConvWgradAttr().set_stride({2, 1}).set_dilation({1, 2})).ok());
  // dim 0: (9 - 3) / 2 + 1 = 4 (k = 4 gives (9 - 4) / 2 + 1 = 3); dim 1: 10 - 2 * 2 = 6
  EXPECT_EQ(w.out->get_dim(), (std::vector<int64_t>{4, 3, 3, 3}));
}

TEST(InferConvGrad, OutputsFollowTheirInputsLayout) {
  Dgrad d({2, 8, 4, 4}, {8, 3, 3, 3});
  d.DY->set_stride(channels_last({2, 8, 4, 4}));
  ASSERT_TRUE(d.run(dg::ConvDgradAttr()).ok());
  EXPECT_EQ(d.out->get_stride(), channels_last({2, 3, 6, 6}));
  Wgrad w({2, 4, 4, 4}, {2, 3, 6, 6});
  w.second->set_stride(channels_last({2, 3, 6, 6}));  // X
  ASSERT_TRUE(w.run(dg::ConvWgradAttr()).ok());
  EXPECT_EQ(w.out->get_stride(), channels_last({4, 3, 3, 3}));
}

TEST(InferConvGrad, UserSetOutputsPickSizeAndGroups) {
  Dgrad d({1, 8, 4, 4}, {8, 3, 3, 3});
  // fprop of 8 with pad 1, stride 2, kernel 3 gives 4, as does 7: DX = 8 is allowed; groups = 6/3.
  auto s = d.run(dg::ConvDgradAttr().set_padding({1, 1}).set_stride({2, 2}), {1, 6, 8, 7});
  EXPECT_TRUE(s.ok()) << s.to_string();
  Wgrad w({1, 4, 3, 3}, {1, 6, 5, 5});  // DW [4, 3, 3, 3]: groups = 6/3
  EXPECT_TRUE(w.run(dg::ConvWgradAttr(), {4, 3, 3, 3}).ok());
}

TEST(InferConvDgrad, ShapeAndParameterRules) {
  using A = dg::ConvDgradAttr;
  expect_rules<A>(kDgrad, {
      {{1, 8, 4, 4}, {8, 3, 3, 3}, A().set_padding({1, 1}).set_stride({2, 2}), {1, 3, 9, 8}, kShapeFailed, "DX",
       "a convolution over DX's spatial dims [9,8] gives [5,4], not DY's [4,4]"},
      {{2, 8, 4, 4}, {8, 3, 3, 3}, A(), {1, 3, 6, 6}, kShapeFailed, "DX", "batch 1 differs from DY's batch 2"},
      {{2, 8, 4, 4}, {8, 3, 3, 3}, A(), {2, 9, 6, 6}, kShapeFailed, "W",
       "output channel count K=8 is not divisible by groups=3"},
      {{1, 6, 4, 4}, {8, 3, 3, 3}, A(), {}, kShapeFailed, "W", "output channels K=8 differ from DY's channel count 6"},
      {{1, 4, 1, 1}, {4, 3, 1, 1}, A().set_padding({1, 0}), {}, kShapeFailed, "DY",
       "spatial dim 0: the padding 1+1 exceeds the transposed convolution's extent (DX size would be -1 < 1)"},
      {{1, 4, 4, 4}, {4, 3, 3, 3}, A().set_stride({0, 1}), {}, ErrorCode::INVALID_VALUE, "",
       "stride [0,1] must be >= 1"},
      {{1, 4, 4, 4}, {4, 3, 3}, A(), {}, kShapeFailed, "W", "rank 3 differs from DY's rank 4"},
  });
}

TEST(InferConvDgrad, WTakesDysTypeUnlessBothAreFloatingPoint) {
  Dgrad t({1, 4, 4, 4}, {4, 3, 3, 3});
  t.second->set_data_type(DataType::INT8);
  expect_error(t.run(dg::ConvDgradAttr()), ErrorCode::INVALID_DATA_TYPE, kDgrad, "W",
               "data type INT8 differs from the FLOAT of 'DY'");
  Dgrad mixed({1, 4, 4, 4}, {4, 3, 3, 3});
  mixed.second->set_data_type(DataType::BFLOAT16);
  EXPECT_TRUE(mixed.run(dg::ConvDgradAttr()).ok());
}

TEST(InferConvWgrad, ShapeAndParameterRules) {
  using A = dg::ConvWgradAttr;
  expect_rules<A>(kWgrad, {
      {{1, 4, 8}, {1, 3, 10}, A().set_dilation({3}), {}, kShapeFailed, "DY",
       "spatial dim 0: no kernel size maps X's 10 onto DY's 8"},
      {{1, 4, 3, 3}, {1, 6, 5, 5}, A(), {4, 4, 3, 3}, kShapeFailed, "X",
       "channel count 6 is not a multiple of the filter's channels per group 4"},
      {{1, 4, 3, 3}, {1, 6, 5, 5}, A(), {6, 3, 3, 3}, kShapeFailed, "DW",
       "output channels K=6 differ from DY's channel count 4"},
      {{1, 4, 3, 3}, {1, 3, 5, 5}, A(), {4, 3, 3, 2}, kShapeFailed, "DW",
       "a convolution over X's spatial dims [5,5] gives [3,4], not DY's [3,3]"},
      {{2, 4, 3, 3}, {1, 3, 5, 5}, A(), {}, kShapeFailed, "X", "batch 1 differs from DY's batch 2"},
      {{1, 4, 3, 3}, {1, 3, 5, 5}, A().set_padding({-1, 0}), {}, ErrorCode::INVALID_VALUE, "", "must not be negative"},
  });
}

TEST(InferConvWgrad, XTakesDysTypeUnlessBothAreFloatingPointAndIsThere) {
  Wgrad t({1, 4, 3, 3}, {1, 3, 5, 5});
  t.second->set_data_type(DataType::INT32);
  expect_error(t.run(dg::ConvWgradAttr()), ErrorCode::INVALID_DATA_TYPE, kWgrad, "X",
               "data type INT32 differs from the FLOAT of 'DY'");
  Wgrad mixed({1, 4, 3, 3}, {1, 3, 5, 5});
  mixed.second->set_data_type(DataType::HALF);
  EXPECT_TRUE(mixed.run(dg::ConvWgradAttr()).ok());
  Wgrad m({1, 4, 3, 3}, {1, 3, 5, 5});
  m.second = nullptr;
  expect_error(m.run(dg::ConvWgradAttr()), ErrorCode::ATTRIBUTE_NOT_SET, kWgrad, "", "input X is missing");
}
