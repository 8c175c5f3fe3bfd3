// The limits every tensor is held to (core/checked.hpp) and the rules that keep numbers from
// wrapping around: element counts, spans, strides and ranks, conv parameters, resize scales,
// reshape volumes, uids, pass-by-value scalars, and tensors changed after the plans were built.
// Each rule is asserted by code and message.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <new>
#include <stdexcept>
#include <string>
#include <vector>

#include "common/dims.hpp"
#include "common/status_checks.hpp"
#include "core/no_throw.hpp"
#include "dnngraph/dnngraph.hpp"

namespace dg = dnngraph;
using dg::DataType;
using dg::ErrorCode;
using test_dims::Dims;
using test_dims::packed;
using test_status::expect_error;

namespace {

constexpr int64_t k2p48 = int64_t{1} << 48;

dg::TensorPtr input(dg::Graph& g, const char* name, const Dims& dims, const Dims& strides) {
  return g.tensor(dg::TensorAttr().set_name(name).set_dim(dims).set_stride(strides).set_data_type(DataType::FLOAT));
}

// relu(X) with X of the given layout: the node is "relu".
dg::Status relu_of(const Dims& dims, const Dims& strides) {
  dg::Graph g;
  auto y = g.pointwise(input(g, "X", dims, strides),
                       dg::PointwiseAttr().set_mode(dg::PointwiseMode::RELU_FWD).set_name("relu"));
  y->set_output(true);
  return g.validate();
}

constexpr const char* kRelu = "node 'relu' (pointwise)";

// conv_fprop "conv" (attr) of X [1, 4, 8, 8] with W [4, 4, 3, 3], both packed.
dg::Status conv_of(dg::ConvFpropAttr attr) {
  dg::Graph g;
  const Dims x{1, 4, 8, 8}, w{4, 4, 3, 3};
  g.conv_fprop(input(g, "X", x, packed(x)), input(g, "W", w, packed(w)), attr.set_name("conv"))->set_output(true);
  return g.validate();
}

constexpr const char* kConv = "node 'conv' (conv_fprop)";

}  // namespace

TEST(Limits, ElementCountsAboveTwoToThe48AreRefusedNotWrapped) {
  expect_error(relu_of({int64_t{1} << 40, 1 << 10}, {1 << 10, 1}), ErrorCode::INVALID_VALUE, kRelu, "X",
               "hold more than 2^48 elements, the most a tensor may have");
  // 2^32 * 2^32 wraps to 0 in int64: it must be an error, not an empty tensor.
  expect_error(relu_of({int64_t{1} << 32, int64_t{1} << 32}, {1, 1}), ErrorCode::INVALID_VALUE, kRelu, "X",
               "hold more than 2^48 elements");
}

TEST(Limits, DimsAndStridesAboveTwoToThe48AreRefused) {
  expect_error(relu_of({k2p48 + 1}, {1}), ErrorCode::INVALID_VALUE, kRelu, "X", "hold a dim above 2^48");
  expect_error(relu_of({2, 2}, {INT64_MAX, 1}), ErrorCode::INVALID_VALUE, kRelu, "X", "hold a stride above 2^48");
}

TEST(Limits, SpansBeyondTwoToThe48BytesAreRefused) {
  // 2 x 2 floats whose outer stride reaches 2^47 elements: 2^49 bytes from the base pointer.
  expect_error(relu_of({2, 2}, {int64_t{1} << 47, 1}), ErrorCode::INVALID_VALUE, kRelu, "X",
               "span more than 2^48 bytes, the most a tensor may address");
}

TEST(Limits, RankAboveSixteenIsRefused) {
  const Dims dims(17, 1);
  expect_error(relu_of(dims, packed(dims)), ErrorCode::INVALID_VALUE, kRelu, "X",
               "rank 17 is above 16, the most a tensor may have");
}

TEST(Limits, OutputStridesThatOnlyOverlapAfterWrappingAreRefused) {
  dg::Graph g;
  auto y = g.pointwise(input(g, "X", {4, 4}, {4, 1}),
                       dg::PointwiseAttr().set_mode(dg::PointwiseMode::RELU_FWD).set_name("relu"));
  // 2^62 * 4 wraps to 0: the old check saw no overlap; the stride is beyond any tensor now.
  y->set_output(true).set_stride({int64_t{1} << 62, 1});
  expect_error(g.validate(), ErrorCode::INVALID_VALUE, kRelu, y->get_name(), "hold a stride above 2^48");
}

TEST(Limits, ConvParametersAboveTwoToThe48AreRefused) {
  for (const char* which : {"padding", "stride", "dilation"}) {
    SCOPED_TRACE(which);
    dg::ConvFpropAttr a;
    if (std::string(which) == "padding") a.set_padding({INT64_MAX, 0});
    if (std::string(which) == "stride") a.set_stride({INT64_MAX, 1});
    if (std::string(which) == "dilation") a.set_dilation({INT64_MAX, 1});
    expect_error(conv_of(a), ErrorCode::INVALID_VALUE, kConv, "", "padding, stride and dilation must be at most 2^48");
  }
}

TEST(Limits, AHugeDilationIsAKernelThatDoesNotFitNotAWrappedSize) {
  expect_error(conv_of(dg::ConvFpropAttr().set_dilation({int64_t{1} << 47, 1})), ErrorCode::SHAPE_DEDUCTION_FAILED,
               kConv, "X", "(output size would be < 1)");
}

TEST(Limits, ATransposedConvolutionLargerThanTheLimitIsRefused) {
  dg::Graph g;
  auto dy = input(g, "DY", {1, 4, 1 << 20, 8}, packed({1, 4, 1 << 20, 8}));
  auto w = input(g, "W", {4, 4, 3, 3}, packed({4, 4, 3, 3}));
  g.conv_dgrad(dy, w, dg::ConvDgradAttr().set_name("dgrad").set_stride({int64_t{1} << 40, 1}))->set_output(true);
  expect_error(g.validate(), ErrorCode::SHAPE_DEDUCTION_FAILED, "node 'dgrad' (conv_dgrad)", "DY",
               "the transposed convolution's output would be larger than 2^48");
}

TEST(Limits, AResizeScaleBeyondTheLimitIsRefused) {
  dg::Graph g;
  auto x = input(g, "X", {1, 2, 4, 4}, packed({1, 2, 4, 4}));
  g.resample(x, dg::ResampleAttr()
                    .set_name("up")
                    .set_resampling_mode(dg::ResampleMode::NEAREST)
                    .set_scale({1e30, 2.0}))
      ->set_output(true);
  expect_error(g.validate(), ErrorCode::INVALID_VALUE, "node 'up' (resample)", "",
               "gives an output size above 2^48 from 4");
}

TEST(Limits, AReshapeWhoseDimsOverflowIsAMismatchNotAWrap) {
  dg::Graph g;
  auto x = input(g, "X", {4, 4}, {4, 1});
  // 2^32 * 2^32 * 16 wraps to 0 and 2^62 * 4 to 0: neither may pass for X's 16 elements.
  g.reshape(x, dg::ReshapeAttr().set_name("r").set_dim({int64_t{1} << 32, int64_t{1} << 32, 16}))
      ->set_output(true);
  expect_error(g.validate(), ErrorCode::SHAPE_DEDUCTION_FAILED, "node 'r' (reshape)", "X",
               "reshape dims [4294967296,4294967296,16] hold 9223372036854775807 elements but X [4,4] holds 16");
}

TEST(Limits, UidsAreNonNegativeAndLeaveRoomForTheNext) {
  for (int64_t uid : {int64_t{-1}, INT64_MAX}) {
    dg::Graph g;
    auto x = input(g, "X", {4}, {1});
    x->set_uid(uid);
    g.pointwise(x, dg::PointwiseAttr().set_mode(dg::PointwiseMode::RELU_FWD))->set_output(true);
    const dg::Status s = g.validate();
    EXPECT_EQ(s.code(), ErrorCode::INVALID_GRAPH);
    EXPECT_NE(s.message().find("tensor 'X' has uid " + std::to_string(uid) + "; uids are in [0, 2^63 - 2]"),
              std::string::npos)
        << s.message();
  }
}

TEST(Limits, AJsonUidBeyondInt64IsAnErrorNotMinusOne) {
  const std::string json = R"({"format": "dnngraph-graph", "version": 1, "io_data_type": "FLOAT",
    "tensors": [{"name": "X", "uid": 18446744073709551615, "dim": [4], "stride": [1]}, {"name": "Y"}],
    "nodes": [{"name": "relu", "op": "pointwise", "mode": "RELU_FWD", "inputs": {"IN_0": "X"}, "outputs": {"OUT": "Y"}}]})";
  dg::Graph g;
  const dg::Status s = dg::Graph::from_json(json, g);
  EXPECT_EQ(s.code(), ErrorCode::INVALID_VALUE);
  EXPECT_NE(s.message().find("tensor 'X' at $.tensors[0].uid: expected an integer, but it is an integer beyond int64"),
            std::string::npos)
      << s.message();
}

TEST(Limits, APassByValueTensorHoldsOneElement) {
  dg::Graph g;
  auto x = input(g, "X", {4}, {1});
  auto alpha = g.tensor(dg::TensorAttr().set_name("alpha").set_dim({4}).set_stride({1}).set_data_type(DataType::FLOAT));
  alpha->set_value(2.0);  // a baked scalar on a 4-element tensor: ref would read past the one value
  g.pointwise(x, alpha, dg::PointwiseAttr().set_mode(dg::PointwiseMode::MUL).set_name("scale"))->set_output(true);
  expect_error(g.validate(), ErrorCode::INVALID_VALUE, "node 'scale' (pointwise)", "alpha",
               "is pass-by-value (one host scalar) but its dims [4] hold 4 elements");
}

TEST(Limits, ATensorChangedAfterBuildPlansStopsExecute) {
  dg::Handle cpu(dg::Device::cpu());
  dg::Graph g;
  auto x = input(g, "X", {2, 4}, {4, 1});
  auto y = g.pointwise(x, dg::PointwiseAttr().set_mode(dg::PointwiseMode::RELU_FWD));
  y->set_output(true).set_name("Y");
  ASSERT_TRUE(g.build_operation_graph(cpu).ok());
  ASSERT_TRUE(g.create_execution_plans({dg::HeurMode::A}).ok());
  ASSERT_TRUE(g.build_plans(cpu).ok());
  std::vector<float> xs(64, 1.0f), ys(64, 0.0f);
  ASSERT_TRUE(g.execute(cpu, {{x, xs.data()}, {y, ys.data()}}, nullptr).ok());
  // Growing X after the build: the plan would read 8 elements while the pack check saw 64.
  x->set_dim({8, 8}).set_stride({8, 1});
  const dg::Status s = g.execute(cpu, {{x, xs.data()}, {y, ys.data()}}, nullptr);
  EXPECT_EQ(s.code(), ErrorCode::INVALID_CALL_ORDER);
  EXPECT_NE(s.message().find("tensor 'X' was changed after the plans were built"), std::string::npos) << s.message();
  // Setting the old dims back is a change too: the plans must be built again.
  x->set_dim({2, 4}).set_stride({4, 1});
  EXPECT_EQ(g.execute(cpu, {{x, xs.data()}, {y, ys.data()}}, nullptr).code(), ErrorCode::INVALID_CALL_ORDER);
  // A new name changes nothing that runs.
  dg::Graph h;
  auto hx = input(h, "X", {2, 4}, {4, 1});
  auto hy = h.pointwise(hx, dg::PointwiseAttr().set_mode(dg::PointwiseMode::RELU_FWD));
  hy->set_output(true);
  ASSERT_TRUE(h.build_operation_graph(cpu).ok());
  ASSERT_TRUE(h.create_execution_plans({dg::HeurMode::A}).ok());
  ASSERT_TRUE(h.build_plans(cpu).ok());
  hx->set_name("renamed");
  EXPECT_TRUE(h.execute(cpu, {{hx, xs.data()}, {hy, ys.data()}}, nullptr).ok());
}

// Every public step runs under no_throw: an allocation that fails inside a step (or any exception)
// is a status naming the step, never an exception out of the API.
TEST(Limits, AnExceptionInsideAStepIsAStatusNamingTheStep) {
  const dg::Status oom = dg::no_throw(ErrorCode::GRAPH_EXECUTION_FAILED, "execute", []() -> dg::Status {
    throw std::bad_alloc();
  });
  EXPECT_EQ(oom.code(), ErrorCode::GRAPH_EXECUTION_FAILED);
  EXPECT_EQ(oom.message(), "execute: out of host memory (std::bad_alloc)");
  const dg::Status bug = dg::no_throw(ErrorCode::GRAPH_EXECUTION_FAILED, "validate", []() -> dg::Status {
    throw std::length_error("vector::reserve");
  });
  EXPECT_EQ(bug.code(), ErrorCode::INTERNAL_ERROR);
  EXPECT_EQ(bug.message(), "validate: unexpected exception: vector::reserve");
  EXPECT_TRUE(dg::no_throw(ErrorCode::INTERNAL_ERROR, "ok", [] { return dg::Status{}; }).ok());
}
