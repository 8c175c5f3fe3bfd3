// Graph-wide validation and execution rules: one test per rule, asserting code and message.
#include <gtest/gtest.h>

#include <cmath>
#include <functional>
#include <vector>

#include "dnngraph/dnngraph.hpp"
#include "graph/graph_impl.hpp"

namespace dg = dnngraph;

namespace {

dg::TensorAttr attr(const char* name, std::vector<int64_t> dims) {
  std::vector<int64_t> strides(dims.size(), 1);
  for (size_t i = dims.size(); i-- > 1;) strides[i - 1] = strides[i] * dims[i];
  return dg::TensorAttr().set_name(name).set_dim(dims).set_stride(strides);
}

dg::Graph float_graph() {
  dg::Graph g;
  g.set_io_data_type(dg::DataType::FLOAT).set_compute_data_type(dg::DataType::FLOAT);
  return g;
}

void expect_error(const dg::Status& s, dg::ErrorCode code, const std::string& fragment) {
  EXPECT_EQ(s.code(), code) << s.to_string();
  EXPECT_NE(s.message().find(fragment), std::string::npos) << "message: " << s.message() << "\nwanted: " << fragment;
}

// validate's answer for relu(X), an output, in a FLOAT graph; X declared by `x`.
dg::Status relu_of(const dg::TensorAttr& x) {
  dg::Graph g = float_graph();
  g.relu(g.tensor(x))->set_output(true);
  return g.validate();
}

// validate's answer for Y = relu(X) in a FLOAT graph, X packed, Y an output that `set_y` changes.
dg::Status relu_output_of(std::vector<int64_t> x_dims, const std::function<void(dg::TensorAttr&)>& set_y) {
  dg::Graph g = float_graph();
  auto y = g.relu(g.tensor(attr("X", std::move(x_dims))));
  y->set_output(true).set_name("Y");
  set_y(*y);
  return g.validate();
}

// validate's answer for pointwise(X [4]) with `pw`, an output, in a FLOAT graph.
dg::Status pointwise_of(const dg::PointwiseAttr& pw) {
  dg::Graph g = float_graph();
  g.pointwise(g.tensor(attr("X", {4})), pw)->set_output(true);
  return g.validate();
}

// validate's answer for add(A, B), an output, in a FLOAT graph; A and B packed.
dg::Status add_of(std::vector<int64_t> a, std::vector<int64_t> b) {
  dg::Graph g = float_graph();
  g.add(g.tensor(attr("A", std::move(a))), g.tensor(attr("B", std::move(b))))->set_output(true);
  return g.validate();
}

// A built graph Y = relu(X + B) for execution-rule tests.
struct Built {
  dg::Handle handle{dg::Device::cpu()};
  dg::Graph g = float_graph();
  dg::TensorPtr x, b, y;
  std::vector<float> xs = std::vector<float>(8, 0.5f), bs = std::vector<float>(8, -0.25f),
                     ys = std::vector<float>(8, std::nanf(""));
  Built() {
    x = g.tensor(attr("X", {2, 4}).set_uid(10));
    b = g.tensor(attr("B", {2, 4}).set_uid(11));
    y = g.relu(g.add(x, b));
    y->set_output(true).set_uid(12);
    EXPECT_TRUE(g.build_operation_graph(handle).ok());
    EXPECT_TRUE(g.create_execution_plans({dg::HeurMode::A}).ok());
    EXPECT_TRUE(g.build_plans(handle).ok());
  }
};

}  // namespace

TEST(GraphRules, EmptyGraph) {
  dg::Graph g = float_graph();
  expect_error(g.validate(), dg::ErrorCode::INVALID_GRAPH, "the graph has no operations");
}

TEST(GraphRules, NoOutput) {
  dg::Graph g = float_graph();
  auto x = g.tensor(attr("X", {4}));
  g.relu(x);
  expect_error(g.validate(), dg::ErrorCode::INVALID_GRAPH, "no tensor is marked as an output");
}

TEST(GraphRules, MissingInput) {
  dg::Graph g = float_graph();
  g.relu(nullptr)->set_output(true);
  expect_error(g.validate(), dg::ErrorCode::ATTRIBUTE_NOT_SET, "node 'pointwise_0' (pointwise): input IN_0 is missing");
}

TEST(GraphRules, NegativeStride) {
  expect_error(relu_of(dg::TensorAttr().set_name("X").set_dim({2, 3}).set_stride({-3, 1})),
               dg::ErrorCode::INVALID_VALUE, "tensor 'X': strides [-3,1] must not be negative");
}

TEST(GraphRules, StrideRankDisagrees) {
  expect_error(relu_of(dg::TensorAttr().set_name("X").set_dim({2, 3}).set_stride({1})),
               dg::ErrorCode::SHAPE_DEDUCTION_FAILED, "tensor 'X': has 2 dims but 1 strides");
}

TEST(GraphRules, NonPositiveDim) {
  expect_error(relu_of(dg::TensorAttr().set_name("X").set_dim({2, 0}).set_stride({1, 1})), dg::ErrorCode::INVALID_VALUE,
               "tensor 'X': dims [2,0] must all be >= 1");
}

TEST(GraphRules, OverlappingOutputStrides) {
  expect_error(relu_output_of({4, 4}, [](dg::TensorAttr& y) { y.set_stride({1, 1}); }), dg::ErrorCode::INVALID_VALUE,
               "tensor 'Y': output strides [1,1] overlap");
}

TEST(GraphRules, BroadcastInputStridesMayOverlap) {
  EXPECT_TRUE(relu_of(dg::TensorAttr().set_name("X").set_dim({4, 4}).set_stride({0, 1})).ok());
}

TEST(GraphRules, UnsetPointwiseMode) {
  expect_error(pointwise_of(dg::PointwiseAttr()), dg::ErrorCode::ATTRIBUTE_NOT_SET, "pointwise mode is not set");
}

TEST(GraphRules, UnknownPointwiseMode) {
  expect_error(pointwise_of(dg::PointwiseAttr().set_mode(static_cast<dg::PointwiseMode>(999))),
               dg::ErrorCode::INVALID_VALUE, "unknown pointwise mode 999");
}

TEST(GraphRules, WrongPointwiseArity) {
  expect_error(pointwise_of(dg::PointwiseAttr().set_mode(dg::PointwiseMode::ADD)), dg::ErrorCode::INVALID_VALUE,
               "ADD takes 2 inputs, got 1");
}

TEST(GraphRules, BroadcastMismatch) {
  expect_error(add_of({2, 3}, {2, 4}), dg::ErrorCode::SHAPE_DEDUCTION_FAILED,
               "tensor 'B': dims [2,4] do not broadcast with [2,3]");
}

TEST(GraphRules, RankMismatch) {
  expect_error(add_of({2, 3}, {3}), dg::ErrorCode::SHAPE_DEDUCTION_FAILED,
               "tensor 'B': rank 1 differs from the first input's rank 2");
}

TEST(GraphRules, OutputDimsDisagree) {
  expect_error(relu_output_of({2, 3}, [](dg::TensorAttr& y) { y.set_dim({3, 2}); }),
               dg::ErrorCode::SHAPE_DEDUCTION_FAILED, "tensor 'Y': dims [3,2] disagree with the inferred [2,3]");
}

TEST(GraphRules, NoDataTypeAnywhere) {
  dg::Graph g;  // no io data type
  auto a = g.tensor(attr("A", {2}));
  g.relu(a)->set_output(true);
  expect_error(g.validate(), dg::ErrorCode::ATTRIBUTE_NOT_SET, "tensor 'A': has no data type and the graph has no io_data_type");
}

TEST(GraphRules, DuplicateUids) {
  dg::Graph g = float_graph();
  auto a = g.tensor(attr("A", {2}).set_uid(7));
  auto b = g.tensor(attr("B", {2}).set_uid(7));
  g.add(a, b)->set_output(true);
  expect_error(g.validate(), dg::ErrorCode::INVALID_GRAPH, "tensors 'A' and 'B' share uid 7");
}

TEST(GraphRules, UidsAreAssignedWhenMissing) {
  dg::Graph g = float_graph();
  auto a = g.tensor(attr("A", {2}).set_uid(3));
  auto b = g.tensor(attr("B", {2}));
  auto y = g.add(a, b);
  y->set_output(true);
  ASSERT_TRUE(g.validate().ok());
  EXPECT_TRUE(b->has_uid());
  EXPECT_TRUE(y->has_uid());
  EXPECT_NE(b->get_uid(), 3);
  EXPECT_NE(y->get_uid(), b->get_uid());
}

TEST(GraphRules, UsedBeforeProduced) {
  dg::Graph g = float_graph();
  auto ghost = g.tensor(attr("ghost", {2}).set_is_virtual(true));
  g.relu(ghost)->set_output(true);
  expect_error(g.validate(), dg::ErrorCode::INVALID_GRAPH, "tensor 'ghost': is used before it is produced");
}

TEST(GraphRules, Cycle) {
  dg::Graph g = float_graph();
  auto x = g.tensor(attr("X", {2}));
  auto a = g.relu(x);
  auto b = g.relu(a);
  b->set_output(true);
  // Rewire the first node to read the second's output: a -> b -> a.
  impl_of(g).nodes[0].inputs[0] = b;
  expect_error(g.validate(), dg::ErrorCode::INVALID_GRAPH, "the graph has a cycle through nodes 'pointwise_0', 'pointwise_1'");
}

TEST(GraphRules, ProducedTwice) {
  dg::Graph g = float_graph();
  auto x = g.tensor(attr("X", {2}));
  auto a = g.relu(x);
  g.relu(x);
  a->set_output(true);
  impl_of(g).nodes[1].outputs[0] = a;
  expect_error(g.validate(), dg::ErrorCode::INVALID_GRAPH, "is produced by two nodes, 'pointwise_0' and 'pointwise_1'");
}

TEST(GraphRules, CallOrder) {
  dg::Graph g = float_graph();
  expect_error(g.create_execution_plans({dg::HeurMode::A}), dg::ErrorCode::INVALID_CALL_ORDER,
               "call build_operation_graph(handle) first");
  int64_t ws = 0;
  expect_error(g.get_workspace_size(ws), dg::ErrorCode::INVALID_CALL_ORDER, "call build_plans first");
}

TEST(GraphRules, UnavailableDeviceHandle) {
  dg::Handle h(dg::Device::cuda(7));
  if (h.status().ok()) GTEST_SKIP() << "this machine has a cuda:7";
  EXPECT_EQ(h.status().code(), dg::ErrorCode::DEVICE_NOT_AVAILABLE);
  EXPECT_NE(h.status().message().find("cuda:7"), std::string::npos) << h.status().message();
  dg::Graph g = float_graph();
  auto x = g.tensor(attr("X", {2}));
  g.relu(x)->set_output(true);
  EXPECT_EQ(g.build_operation_graph(h).code(), dg::ErrorCode::DEVICE_NOT_AVAILABLE);
}

TEST(ExecuteRules, MissingTensor) {
  Built b;
  expect_error(b.g.execute(b.handle, dg::VariantPack{{b.x, b.xs.data()}, {b.y, b.ys.data()}}, nullptr),
               dg::ErrorCode::INVALID_VARIANT_PACK, "tensor 'B' (uid 11) is missing from the variant pack");
}

TEST(ExecuteRules, NullPointer) {
  Built b;
  expect_error(b.g.execute(b.handle, dg::VariantPack{{b.x, b.xs.data()}, {b.b, nullptr}, {b.y, b.ys.data()}}, nullptr),
               dg::ErrorCode::INVALID_VARIANT_PACK, "tensor 'B' (uid 11) has a null pointer in the variant pack");
}

TEST(ExecuteRules, ForeignTensor) {
  Built b;
  auto stranger = std::make_shared<dg::TensorAttr>(attr("stranger", {2}));
  expect_error(b.g.execute(b.handle, dg::VariantPack{{stranger, b.xs.data()}}, nullptr),
               dg::ErrorCode::INVALID_VARIANT_PACK, "tensor 'stranger', which is not part of this graph");
}

TEST(ExecuteRules, UnknownUid) {
  Built b;
  expect_error(b.g.execute(b.handle, dg::UidVariantPack{{99, b.xs.data()}}, nullptr),
               dg::ErrorCode::INVALID_VARIANT_PACK, "uid 99, which no tensor of this graph has");
}

TEST(ExecuteRules, ByUidRuns) {
  Built b;
  auto s = b.g.execute(b.handle, dg::UidVariantPack{{10, b.xs.data()}, {11, b.bs.data()}, {12, b.ys.data()}}, nullptr);
  ASSERT_TRUE(s.ok()) << s.to_string();
  for (float v : b.ys) EXPECT_FLOAT_EQ(v, 0.25f);
}

TEST(ExecuteRules, WorkspaceTooSmall) {
  // Two partitions joined by an intermediate in the workspace: relu(X+B) then a reduction of it.
  dg::Handle handle(dg::Device::cpu());
  dg::Graph g = float_graph();
  auto x = g.tensor(attr("X", {2, 4}));
  auto t = g.transpose(g.relu(x), dg::TransposeAttr().set_permutation({1, 0}));
  t->set_output(true);
  ASSERT_TRUE(g.build_operation_graph(handle).ok());
  ASSERT_TRUE(g.create_execution_plans({dg::HeurMode::A}).ok());
  ASSERT_TRUE(g.build_plans(handle).ok());
  int64_t ws = 0;
  ASSERT_TRUE(g.get_workspace_size(ws).ok());
  ASSERT_GT(ws, 0);
  std::vector<float> xs(8, 1.0f), ts(8);
  std::vector<char> small(static_cast<size_t>(ws - 1));
  expect_error(g.execute(handle, dg::VariantPack{{x, xs.data()}, {t, ts.data()}}, small.data(), ws - 1),
               dg::ErrorCode::WORKSPACE_TOO_SMALL, "smaller than the " + std::to_string(ws) + " bytes asked for");
  expect_error(g.execute(handle, dg::VariantPack{{x, xs.data()}, {t, ts.data()}}, nullptr),
               dg::ErrorCode::WORKSPACE_TOO_SMALL, "but it is null");
}

TEST(ExecuteRules, PassByValueWithoutValue) {
  dg::Handle handle(dg::Device::cpu());
  dg::Graph g = float_graph();
  auto x = g.tensor(attr("X", {4}));
  auto alpha = g.tensor(dg::TensorAttr().set_name("alpha").set_dim({1}).set_stride({1}).set_is_pass_by_value(true));
  auto y = g.mul(x, alpha);
  y->set_output(true);
  ASSERT_TRUE(g.build_operation_graph(handle).ok());
  ASSERT_TRUE(g.create_execution_plans({dg::HeurMode::A}).ok());
  ASSERT_TRUE(g.build_plans(handle).ok());
  std::vector<float> xs(4, 2.0f), ys(4);
  expect_error(g.execute(handle, dg::VariantPack{{x, xs.data()}, {y, ys.data()}}, nullptr),
               dg::ErrorCode::INVALID_VARIANT_PACK, "pass-by-value tensor 'alpha'");
  float a = 3.0f;  // given at execute time, through a host pointer
  ASSERT_TRUE(g.execute(handle, dg::VariantPack{{x, xs.data()}, {alpha, &a}, {y, ys.data()}}, nullptr).ok());
  for (float v : ys) EXPECT_FLOAT_EQ(v, 6.0f);
}

TEST(GraphRules, PassByValueScalarBroadcastsAtAnyRank) {
  dg::Handle handle(dg::Device::cpu());
  dg::Graph g = float_graph();
  auto x = g.tensor(attr("X", {2, 3, 4}));
  auto y = g.scale(x, g.tensor(0.5));  // a rank-1 scalar against a rank-3 tensor
  y->set_output(true);
  ASSERT_TRUE(g.build_operation_graph(handle).ok());
  EXPECT_EQ(y->get_dim(), (std::vector<int64_t>{2, 3, 4}));
  ASSERT_TRUE(g.create_execution_plans({dg::HeurMode::A}).ok());
  ASSERT_TRUE(g.build_plans(handle).ok());
  std::vector<float> xs(24), ys(24, std::nanf(""));
  for (size_t i = 0; i < xs.size(); ++i) xs[i] = static_cast<float>(i) - 7.5f;
  ASSERT_TRUE(g.execute(handle, dg::VariantPack{{x, xs.data()}, {y, ys.data()}}, nullptr).ok());
  for (size_t i = 0; i < xs.size(); ++i) EXPECT_FLOAT_EQ(ys[i], 0.5f * xs[i]);
}

namespace {

// query_tensor_attributes_of_uid: a copy of the tensor with the uid (set by the user or assigned by
// validate), else INVALID_VALUE naming the uid.
TEST(GraphRules, QueryTensorAttributesOfUid) {
  dg::Graph g = float_graph();
  auto x = g.tensor(attr("image", {8, 32, 16, 16}).set_uid(1));
  auto y = g.relu(x);
  y->set_output(true);
  dg::TensorAttr t;
  ASSERT_TRUE(g.query_tensor_attributes_of_uid(1, t).ok());
  EXPECT_EQ(t.get_name(), "image");
  expect_error(g.query_tensor_attributes_of_uid(7, t), dg::ErrorCode::INVALID_VALUE, "no tensor of this graph has uid 7");
  ASSERT_TRUE(g.validate().ok());
  ASSERT_TRUE(g.query_tensor_attributes_of_uid(y->get_uid(), t).ok());
  EXPECT_EQ(t.get_name(), y->get_name());
}

// A composite that cannot be built (adalayernorm with a scale that normalizes nothing) is
// validate()'s first error, naming the node.
TEST(GraphRules, CompositeErrorsComeBackFromValidate) {
  dg::Graph g = float_graph();
  auto x = g.tensor(attr("X", {2, 3, 8}));
  auto s = g.tensor(attr("scale", {2, 1, 1}));
  auto out = g.adalayernorm(x, s, s, dg::AdaLayernormAttr().set_epsilon(1e-5).set_name("ada"));
  out[0]->set_output(true);
  expect_error(g.validate(), dg::ErrorCode::INVALID_VALUE, "node 'ada' (adalayernorm): the scale [2,1,1] normalizes no axis");
}

}  // namespace
