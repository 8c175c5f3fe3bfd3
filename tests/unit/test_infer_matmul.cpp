// Shape inference and validation of matmul: inferred outputs, and every rule's code and message.
#include <gtest/gtest.h>

#include "common/dims.hpp"
#include "common/status_checks.hpp"
#include "common/tensors.hpp"
#include "dnngraph/dnngraph.hpp"

namespace dg = dnngraph;
using dg::DataType;
using dg::ErrorCode;

namespace {

using test_dims::packed;

constexpr const char* kNode = "node 'mm' (matmul)";

struct Matmul {
  dg::Graph g;
  dg::TensorPtr A, B, C;
  Matmul(const std::vector<int64_t>& a, const std::vector<int64_t>& b, DataType at = DataType::NOT_SET,
         DataType bt = DataType::NOT_SET) {
    g.set_io_data_type(DataType::BFLOAT16).set_intermediate_data_type(DataType::FLOAT);
    A = test_tensors::packed_tensor(g, "A", a, at);
    B = test_tensors::packed_tensor(g, "B", b, bt);
    C = g.matmul(A, B, dg::MatmulAttr().set_name("mm"));
    C->set_name("C").set_output(true);
  }
  dg::Status validate() { return g.validate(); }
};

void expect_error(const dg::Status& s, ErrorCode code, const std::string& tensor, const std::string& rule) {
  test_status::expect_error(s, code, kNode, tensor, rule);
}

}  // namespace

TEST(InferMatmul, InfersRowMajorOutput) {
  Matmul m({5, 7}, {7, 3});
  ASSERT_TRUE(m.validate().ok());
  EXPECT_EQ(m.C->get_dim(), (std::vector<int64_t>{5, 3}));
  EXPECT_EQ(m.C->get_stride(), (std::vector<int64_t>{3, 1}));
  EXPECT_EQ(m.C->get_data_type(), DataType::BFLOAT16);
}

TEST(InferMatmul, BatchDimsBroadcast) {
  Matmul m({2, 1, 4, 6}, {1, 3, 6, 5});
  ASSERT_TRUE(m.validate().ok());
  EXPECT_EQ(m.C->get_dim(), (std::vector<int64_t>{2, 3, 4, 5}));
  EXPECT_EQ(m.C->get_stride(), packed({2, 3, 4, 5}));
}

TEST(InferMatmul, UserSetOutputStridesAreKept) {
  Matmul m({4, 6}, {6, 5});
  m.C->set_stride({1, 4});  // column-major
  ASSERT_TRUE(m.validate().ok());
  EXPECT_EQ(m.C->get_stride(), (std::vector<int64_t>{1, 4}));
}

TEST(InferMatmul, ColumnMajorOperandsAreAccepted) {
  Matmul m({4, 6}, {6, 5});
  m.A->set_stride({1, 4});
  m.B->set_stride({1, 6});
  EXPECT_TRUE(m.validate().ok());
}

TEST(InferMatmul, VirtualOutputTakesIntermediateType) {
  dg::Graph g;
  g.set_io_data_type(DataType::HALF).set_intermediate_data_type(DataType::FLOAT);
  auto a = g.tensor(dg::TensorAttr().set_name("A").set_dim({2, 3}).set_stride({3, 1}));
  auto b = g.tensor(dg::TensorAttr().set_name("B").set_dim({3, 4}).set_stride({4, 1}));
  auto c = g.matmul(a, b, dg::MatmulAttr());
  auto r = g.relu(c);
  r->set_output(true);
  ASSERT_TRUE(g.validate().ok());
  EXPECT_EQ(c->get_data_type(), DataType::FLOAT);
}

TEST(InferMatmul, MissingInput) {
  dg::Graph g;
  g.set_io_data_type(DataType::FLOAT);
  auto a = g.tensor(dg::TensorAttr().set_name("A").set_dim({2, 3}).set_stride({3, 1}));
  g.matmul(a, nullptr, dg::MatmulAttr().set_name("mm"))->set_output(true);
  expect_error(g.validate(), ErrorCode::ATTRIBUTE_NOT_SET, "", "input B is missing");
}

TEST(InferMatmul, RankBelowTwo) {
  Matmul m({6}, {6});
  expect_error(m.validate(), ErrorCode::INVALID_VALUE, "A", "rank 1 is below 2");
}

TEST(InferMatmul, RanksMustBeEqual) {
  Matmul m({2, 4, 6}, {6, 5});
  expect_error(m.validate(), ErrorCode::SHAPE_DEDUCTION_FAILED, "B", "rank 2 differs from A's rank 3");
}

TEST(InferMatmul, KMustAgree) {
  Matmul m({4, 6}, {7, 5});
  expect_error(m.validate(), ErrorCode::SHAPE_DEDUCTION_FAILED, "B", "K=7 (dim 0) differs from A's K=6");
}

TEST(InferMatmul, BatchDimsMustBroadcast) {
  Matmul m({2, 4, 6}, {3, 6, 5});
  expect_error(m.validate(), ErrorCode::SHAPE_DEDUCTION_FAILED, "B", "batch dims [3] do not broadcast with A's [2]");
}

TEST(InferMatmul, UserSetOutputDimsMustAgree) {
  Matmul m({4, 6}, {6, 5});
  m.C->set_dim({4, 6});
  expect_error(m.validate(), ErrorCode::SHAPE_DEDUCTION_FAILED, "C", "dims [4,6] disagree with the inferred [4,5]");
}

TEST(InferMatmul, InputsMustShareDataType) {
  Matmul m({4, 6}, {6, 5}, DataType::HALF, DataType::FLOAT);
  expect_error(m.validate(), ErrorCode::INVALID_DATA_TYPE, "B", "data type FLOAT differs from the HALF of 'A'");
}

TEST(InferMatmul, Fp8FormatsMayMix) {
  Matmul m({4, 16}, {16, 8}, DataType::FP8_E4M3, DataType::FP8_E5M2);
  auto s = m.validate();
  EXPECT_TRUE(s.ok()) << s.to_string();
}

TEST(InferMatmul, Int8TimesInt8IsAllowed) {
  Matmul m({4, 16}, {16, 8}, DataType::INT8, DataType::INT8);
  m.C->set_data_type(DataType::INT32);
  auto s = m.validate();
  EXPECT_TRUE(s.ok()) << s.to_string();
}

TEST(InferMatmul, BooleanIsRejected) {
  Matmul in({4, 6}, {6, 5}, DataType::BOOLEAN, DataType::BOOLEAN);
  expect_error(in.validate(), ErrorCode::INVALID_DATA_TYPE, "A", "data type BOOLEAN is not allowed for matmul");
  Matmul out({4, 6}, {6, 5});
  out.C->set_data_type(DataType::BOOLEAN);
  expect_error(out.validate(), ErrorCode::INVALID_DATA_TYPE, "C", "data type BOOLEAN is not allowed for matmul");
}
