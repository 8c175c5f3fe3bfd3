// Shape inference and validation of sdpa_backward: inferred gradients, every rule's code and
// message, and the JSON round trip of its attributes.
#include <gtest/gtest.h>

#include "common/dims.hpp"
#include "common/status_checks.hpp"
#include "dnngraph/dnngraph.hpp"

namespace dg = dnngraph;

namespace {

using test_dims::packed;
// The strides of a [b,s,h,d] buffer viewed as [b,h,s,d].
std::vector<int64_t> bshd(const std::vector<int64_t>& d) { return {d[1] * d[2] * d[3], d[3], d[1] * d[3], 1}; }

struct BwdCase {
  std::vector<int64_t> q{2, 4, 8, 16}, k{2, 2, 10, 16}, v{2, 2, 10, 8};
  std::vector<int64_t> o{2, 4, 8, 8}, d_o{2, 4, 8, 8}, stats{2, 4, 8, 1};
  dg::DataType qkv_type = dg::DataType::BFLOAT16, o_type = dg::DataType::BFLOAT16, do_type = dg::DataType::BFLOAT16;
  dg::DataType stats_type = dg::DataType::FLOAT;
  bool bshd_layout = false;
  dg::TensorPtr seq_q, seq_kv;
  dg::Graph g;
  dg::TensorPtr dQ, dK, dV;

  dg::TensorPtr input(const char* name, const std::vector<int64_t>& dims, dg::DataType t) {
    const auto strides = bshd_layout && dims.size() == 4 && dims[3] > 1 ? bshd(dims) : packed(dims);
    return g.tensor(dg::TensorAttr().set_name(name).set_dim(dims).set_stride(strides).set_data_type(t));
  }
  dg::Status build(dg::SdpaBackwardAttr attr) {
    g.set_io_data_type(dg::DataType::BFLOAT16).set_compute_data_type(dg::DataType::FLOAT);
    auto Q = input("Q", q, qkv_type), K = input("K", k, qkv_type), V = input("V", v, qkv_type);
    auto O = input("O", o, o_type), dO = input("dO", d_o, do_type), S = input("Stats", stats, stats_type);
    if (seq_q) attr.set_seq_len_q(seq_q);
    if (seq_kv) attr.set_seq_len_kv(seq_kv);
    auto outs = g.sdpa_backward(Q, K, V, O, dO, S, attr.set_name("bwd"));
    dQ = outs[0], dK = outs[1], dV = outs[2];
    for (auto& t : outs) t->set_output(true);
    return g.validate();
  }
  dg::TensorPtr seq_tensor(const char* name, std::vector<int64_t> dims, dg::DataType t = dg::DataType::INT32) {
    return g.tensor(dg::TensorAttr().set_name(name).set_dim(dims).set_stride(packed(dims)).set_data_type(t));
  }
};

void expect_error(const dg::Status& s, dg::ErrorCode code, const std::string& tensor, const std::string& rule) {
  test_status::expect_error(s, code, "node 'bwd' (sdpa_backward)", tensor, rule);
}

}  // namespace

TEST(InferSdpaBackward, GradientsTakeTheLayoutsOfQKV) {
  for (bool bshd_layout : {false, true}) {
    BwdCase c;
    c.bshd_layout = bshd_layout;
    auto s = c.build(dg::SdpaBackwardAttr().set_causal_mask(true));
    ASSERT_TRUE(s.ok()) << s.to_string();
    EXPECT_EQ(c.dQ->get_dim(), c.q);
    EXPECT_EQ(c.dK->get_dim(), c.k);
    EXPECT_EQ(c.dV->get_dim(), c.v);
    EXPECT_EQ(c.dQ->get_stride(), bshd_layout ? bshd(c.q) : packed(c.q));
    EXPECT_EQ(c.dK->get_stride(), bshd_layout ? bshd(c.k) : packed(c.k));
    EXPECT_EQ(c.dV->get_stride(), bshd_layout ? bshd(c.v) : packed(c.v));
    EXPECT_EQ(c.dQ->get_data_type(), dg::DataType::BFLOAT16);
  }
}

TEST(InferSdpaBackward, UserStridesOfGradientsAreKept) {
  BwdCase c;
  ASSERT_TRUE(c.build(dg::SdpaBackwardAttr()).ok());
  c.dK->set_stride(bshd(c.k));
  auto s = c.g.validate();
  ASSERT_TRUE(s.ok()) << s.to_string();
  EXPECT_EQ(c.dK->get_stride(), bshd(c.k));
}

TEST(InferSdpaBackward, AcceptsMasksPaddingAndEveryFloatType) {
  for (auto t : {dg::DataType::FLOAT, dg::DataType::HALF, dg::DataType::BFLOAT16}) {
    BwdCase c;
    c.k = {2, 1, 10, 16};
    c.v = {2, 1, 10, 8};
    c.qkv_type = c.o_type = c.do_type = t;
    c.seq_q = c.seq_tensor("SEQ_Q", {2, 1, 1, 1});
    c.seq_kv = c.seq_tensor("SEQ_KV", {2, 1, 1, 1});
    auto s = c.build(dg::SdpaBackwardAttr().set_causal_mask_bottom_right(true).set_diagonal_band_left_bound(3)
                         .set_padding_mask(true).set_attn_scale(0.5));
    EXPECT_TRUE(s.ok()) << s.to_string();
  }
}

TEST(InferSdpaBackward, ShapeRulesNameTheTensor) {
  {
    BwdCase c;
    c.v = {2, 2, 11, 8};
    expect_error(c.build(dg::SdpaBackwardAttr()), dg::ErrorCode::SHAPE_DEDUCTION_FAILED, "V",
                 "sequence length 11 differs from K's 10");
  }
  {
    BwdCase c;
    c.k = {2, 3, 10, 16};
    c.v = {2, 3, 10, 8};
    expect_error(c.build(dg::SdpaBackwardAttr()), dg::ErrorCode::SHAPE_DEDUCTION_FAILED, "K",
                 "heads 3 do not divide Q's heads 4");
  }
  {
    BwdCase c;
    c.o = {2, 4, 8, 16};
    expect_error(c.build(dg::SdpaBackwardAttr()), dg::ErrorCode::SHAPE_DEDUCTION_FAILED, "O",
                 "dims [2,4,8,16] must be [2,4,8,8] (O is the forward's output");
  }
  {
    BwdCase c;
    c.d_o = {2, 4, 7, 8};
    expect_error(c.build(dg::SdpaBackwardAttr()), dg::ErrorCode::SHAPE_DEDUCTION_FAILED, "dO",
                 "dims [2,4,7,8] must be [2,4,8,8] (dO is O's gradient");
  }
  {
    BwdCase c;
    c.stats = {2, 4, 8};
    expect_error(c.build(dg::SdpaBackwardAttr()), dg::ErrorCode::SHAPE_DEDUCTION_FAILED, "Stats",
                 "dims [2,4,8] must be [2,4,8,1] (STATS is the forward's logsumexp");
  }
}

TEST(InferSdpaBackward, TypeRulesNameTheTensor) {
  {
    BwdCase c;
    c.qkv_type = c.o_type = c.do_type = dg::DataType::FP8_E4M3;
    expect_error(c.build(dg::SdpaBackwardAttr()), dg::ErrorCode::INVALID_DATA_TYPE, "Q",
                 "data type FP8_E4M3 is not supported (sdpa_backward takes HALF, BFLOAT16 or FLOAT)");
  }
  {
    BwdCase c;
    c.do_type = dg::DataType::HALF;
    expect_error(c.build(dg::SdpaBackwardAttr()), dg::ErrorCode::INVALID_DATA_TYPE, "dO",
                 "data type HALF must be BFLOAT16 (dO is O's gradient");
  }
  {
    BwdCase c;
    c.stats_type = dg::DataType::HALF;
    expect_error(c.build(dg::SdpaBackwardAttr()), dg::ErrorCode::INVALID_DATA_TYPE, "Stats",
                 "data type HALF must be FLOAT (STATS");
  }
  {
    BwdCase c;
    ASSERT_TRUE(c.build(dg::SdpaBackwardAttr()).ok());
    c.dV->set_data_type(dg::DataType::INT8);
    expect_error(c.g.validate(), dg::ErrorCode::INVALID_DATA_TYPE, "bwd::DV",
                 "data type INT8 is not supported (gradients are HALF, BFLOAT16 or FLOAT)");
  }
  {
    BwdCase c;
    expect_error(c.build(dg::SdpaBackwardAttr().set_compute_data_type(dg::DataType::HALF)),
                 dg::ErrorCode::INVALID_DATA_TYPE, "", "compute data type HALF is not supported");
  }
}

TEST(InferSdpaBackward, MaskRules) {
  {
    BwdCase c;
    c.seq_q = c.seq_tensor("SEQ_Q", {2, 1, 1, 1});
    expect_error(c.build(dg::SdpaBackwardAttr().set_padding_mask(true)), dg::ErrorCode::ATTRIBUTE_NOT_SET, "",
                 "the padding mask needs seq_len_kv");
  }
  {
    BwdCase c;
    c.seq_q = c.seq_tensor("SEQ_Q", {2, 1, 1, 1});
    c.seq_kv = c.seq_tensor("SEQ_KV", {2, 1, 1, 1});
    expect_error(c.build(dg::SdpaBackwardAttr()), dg::ErrorCode::INVALID_VALUE, "SEQ_Q", "the padding mask is off");
  }
  {
    BwdCase c;
    c.seq_q = c.seq_tensor("SEQ_Q", {2, 1, 1, 1});
    c.seq_kv = c.seq_tensor("SEQ_KV", {2, 1, 1, 1}, dg::DataType::INT64);
    expect_error(c.build(dg::SdpaBackwardAttr().set_padding_mask(true)), dg::ErrorCode::INVALID_DATA_TYPE, "SEQ_KV",
                 "data type INT64 must be INT32");
  }
  {
    BwdCase c;
    expect_error(c.build(dg::SdpaBackwardAttr().set_diagonal_band_left_bound(-1)), dg::ErrorCode::INVALID_VALUE, "",
                 "left bound -1 must not be negative");
  }
}

TEST(InferSdpaBackward, JsonRoundTripKeepsTheMasks) {
  BwdCase c;
  c.seq_q = c.seq_tensor("SEQ_Q", {2, 1, 1, 1});
  c.seq_kv = c.seq_tensor("SEQ_KV", {2, 1, 1, 1});
  ASSERT_TRUE(c.build(dg::SdpaBackwardAttr().set_causal_mask_bottom_right(true).set_diagonal_band_left_bound(5)
                          .set_padding_mask(true).set_attn_scale(0.25).set_deterministic_algorithm(true))
                  .ok());
  const std::string json = c.g.to_json();
  EXPECT_NE(json.find("\"sdpa_backward\""), std::string::npos) << json;
  EXPECT_NE(json.find("\"diagonal_band_left_bound\""), std::string::npos) << json;
  EXPECT_NE(json.find("\"deterministic_algorithm\": true"), std::string::npos) << json;
  dg::Graph back;
  auto s = dg::Graph::from_json(json, back);
  ASSERT_TRUE(s.ok()) << s.to_string();
  ASSERT_TRUE(back.validate().ok());
  EXPECT_EQ(back.to_json(), json);
}
