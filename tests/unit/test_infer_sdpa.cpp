// Shape inference and validation of sdpa: inferred outputs, and every rule's code and message.
#include <gtest/gtest.h>

#include "common/dims.hpp"
#include "common/status_checks.hpp"
#include "dnngraph/dnngraph.hpp"

namespace dg = dnngraph;

namespace {

// Row-major [b,h,s,d] strides (BHSD), or the strides of a [b,s,h,d] buffer (BSHD).
std::vector<int64_t> bhsd(const std::vector<int64_t>& d) { return {d[1] * d[2] * d[3], d[2] * d[3], d[3], 1}; }
std::vector<int64_t> bshd(const std::vector<int64_t>& d) { return {d[1] * d[2] * d[3], d[3], d[1] * d[3], 1}; }
using test_dims::packed;

struct SdpaCase {
  std::vector<int64_t> q{2, 4, 8, 16}, k{2, 2, 10, 16}, v{2, 2, 10, 8};
  dg::DataType qt = dg::DataType::HALF, kt = dg::DataType::HALF, vt = dg::DataType::HALF;
  bool bshd_layout = false;
  bool stats_output = false;
  dg::TensorPtr seq_q, seq_kv;
  dg::Graph g;
  dg::TensorPtr O, STATS;

  dg::Status build(dg::SdpaAttr attr) {
    g.set_io_data_type(dg::DataType::HALF).set_compute_data_type(dg::DataType::FLOAT);
    auto strides = [&](const std::vector<int64_t>& d) {
      if (d.size() != 4) return packed(d);
      return bshd_layout ? bshd(d) : bhsd(d);
    };
    auto Q = g.tensor(dg::TensorAttr().set_name("Q").set_dim(q).set_stride(strides(q)).set_data_type(qt));
    auto K = g.tensor(dg::TensorAttr().set_name("K").set_dim(k).set_stride(strides(k)).set_data_type(kt));
    auto V = g.tensor(dg::TensorAttr().set_name("V").set_dim(v).set_stride(strides(v)).set_data_type(vt));
    if (seq_q) attr.set_seq_len_q(seq_q);
    if (seq_kv) attr.set_seq_len_kv(seq_kv);
    auto outs = g.sdpa(Q, K, V, attr.set_name("attn"));
    O = outs[0];
    STATS = outs[1];
    O->set_output(true);
    if (stats_output) STATS->set_output(true);
    return g.validate();
  }
  dg::TensorPtr seq_tensor(const char* name, std::vector<int64_t> dims, dg::DataType t = dg::DataType::INT32) {
    auto s = packed(dims);
    return g.tensor(dg::TensorAttr().set_name(name).set_dim(dims).set_stride(s).set_data_type(t));
  }
};

void expect_error(const dg::Status& s, dg::ErrorCode code, const std::string& tensor, const std::string& rule) {
  test_status::expect_error(s, code, "node 'attn' (sdpa)", tensor, rule);
}

}  // namespace

TEST(InferSdpa, OutputsTakeQLayoutAndStatsAreFloat) {
  for (bool bshd_layout : {false, true}) {
    SdpaCase c;
    c.bshd_layout = bshd_layout;
    c.stats_output = true;
    auto s = c.build(dg::SdpaAttr().set_is_inference(false));
    ASSERT_TRUE(s.ok()) << s.to_string();
    const std::vector<int64_t> o_dims{2, 4, 8, 8};
    EXPECT_EQ(c.O->get_dim(), o_dims);
    EXPECT_EQ(c.O->get_stride(), bshd_layout ? bshd(o_dims) : bhsd(o_dims));
    EXPECT_EQ(c.O->get_data_type(), dg::DataType::HALF);
    EXPECT_EQ(c.STATS->get_dim(), (std::vector<int64_t>{2, 4, 8, 1}));
    EXPECT_EQ(c.STATS->get_stride(), (std::vector<int64_t>{32, 8, 1, 1}));
    EXPECT_EQ(c.STATS->get_data_type(), dg::DataType::FLOAT);
  }
}

TEST(InferSdpa, AcceptsMasksAndPadding) {
  SdpaCase c;
  c.seq_q = c.seq_tensor("SEQ_Q", {2, 1, 1, 1});
  c.seq_kv = c.seq_tensor("SEQ_KV", {2, 1, 1, 1});
  auto s = c.build(dg::SdpaAttr()
                       .set_causal_mask_bottom_right(true)
                       .set_diagonal_band_left_bound(3)
                       .set_padding_mask(true)
                       .set_attn_scale(0.5));
  EXPECT_TRUE(s.ok()) << s.to_string();
}

TEST(InferSdpa, AcceptsMqaAndEveryFloatType) {
  for (auto t : {dg::DataType::FLOAT, dg::DataType::HALF, dg::DataType::BFLOAT16, dg::DataType::FP8_E4M3,
                 dg::DataType::FP8_E5M2}) {
    SdpaCase c;
    c.k = {2, 1, 10, 16};
    c.v = {2, 1, 10, 8};
    c.qt = c.kt = c.vt = t;
    auto s = c.build(dg::SdpaAttr());
    EXPECT_TRUE(s.ok()) << s.to_string();
  }
}

// Each shape rule, broken by the K and V dims of a row (Q is SdpaCase's [2,4,8,16]; K and V are
// [2,2,10,16] and [2,2,10,8] where a row keeps them): the tensor the error names and the rule.
TEST(InferSdpa, ShapeRulesNameTheTensor) {
  struct Rule {
    std::vector<int64_t> k, v;
    const char* tensor;
    const char* rule;
  };
  const std::vector<int64_t> k{2, 2, 10, 16}, v{2, 2, 10, 8};
  const Rule rules[] = {
      {k, {2, 10, 8}, "V", "rank 3 is not 4"},
      {{2, 2, 10, 32}, v, "K", "head dim 32 differs from Q's head dim 16"},
      {k, {3, 2, 10, 8}, "V", "batch 3 differs from Q's batch 2"},
      {k, {2, 3, 10, 8}, "V", "heads 3 do not divide Q's heads 4"},
      {{2, 3, 10, 16}, {2, 3, 10, 8}, "K", "heads 3 do not divide Q's heads 4"},
      {k, {2, 2, 11, 8}, "V", "sequence length 11 differs from K's 10"},
  };
  for (const Rule& r : rules) {
    SCOPED_TRACE(r.rule);
    SdpaCase c;
    c.k = r.k;
    c.v = r.v;
    expect_error(c.build(dg::SdpaAttr()), dg::ErrorCode::SHAPE_DEDUCTION_FAILED, r.tensor, r.rule);
  }
}

TEST(InferSdpa, DataTypeMustBeAFloatFormat) {
  SdpaCase c;
  c.qt = c.kt = c.vt = dg::DataType::INT8;
  expect_error(c.build(dg::SdpaAttr()), dg::ErrorCode::INVALID_DATA_TYPE, "Q", "data type INT8 is not supported");
}

TEST(InferSdpa, QKVMustShareOneType) {
  SdpaCase c;
  c.kt = dg::DataType::FLOAT;
  expect_error(c.build(dg::SdpaAttr()), dg::ErrorCode::INVALID_DATA_TYPE, "K", "differs from Q's HALF");
}

TEST(InferSdpa, ComputeTypeMustBeFloat) {
  SdpaCase c;
  expect_error(c.build(dg::SdpaAttr().set_compute_data_type(dg::DataType::HALF)), dg::ErrorCode::INVALID_DATA_TYPE,
               "", "compute data type HALF is not supported");
}

TEST(InferSdpa, PaddingMaskNeedsSequenceLengths) {
  SdpaCase c;
  c.seq_q = c.seq_tensor("SEQ_Q", {2, 1, 1, 1});
  expect_error(c.build(dg::SdpaAttr().set_padding_mask(true)), dg::ErrorCode::ATTRIBUTE_NOT_SET, "",
               "the padding mask needs seq_len_kv");
}

TEST(InferSdpa, SequenceLengthsNeedThePaddingMask) {
  SdpaCase c;
  c.seq_q = c.seq_tensor("SEQ_Q", {2, 1, 1, 1});
  c.seq_kv = c.seq_tensor("SEQ_KV", {2, 1, 1, 1});
  expect_error(c.build(dg::SdpaAttr()), dg::ErrorCode::INVALID_VALUE, "SEQ_Q", "the padding mask is off");
}

TEST(InferSdpa, SequenceLengthShapeAndType) {
  {
    SdpaCase c;
    c.seq_q = c.seq_tensor("SEQ_Q", {2, 1, 1, 1});
    c.seq_kv = c.seq_tensor("SEQ_KV", {1, 1, 1, 1});
    expect_error(c.build(dg::SdpaAttr().set_padding_mask(true)), dg::ErrorCode::SHAPE_DEDUCTION_FAILED, "SEQ_KV",
                 "dims [1,1,1,1] must be [2,1,1,1]");
  }
  {
    SdpaCase c;
    c.seq_q = c.seq_tensor("SEQ_Q", {2, 1, 1, 1}, dg::DataType::INT64);
    c.seq_kv = c.seq_tensor("SEQ_KV", {2, 1, 1, 1});
    expect_error(c.build(dg::SdpaAttr().set_padding_mask(true)), dg::ErrorCode::INVALID_DATA_TYPE, "SEQ_Q",
                 "data type INT64 must be INT32");
  }
}

TEST(InferSdpa, BoundsMustNotBeNegative) {
  {
    SdpaCase c;
    expect_error(c.build(dg::SdpaAttr().set_diagonal_band_left_bound(-1)), dg::ErrorCode::INVALID_VALUE, "",
                 "left bound -1 must not be negative");
  }
  {
    SdpaCase c;
    expect_error(c.build(dg::SdpaAttr().set_diagonal_band_right_bound(-2)), dg::ErrorCode::INVALID_VALUE, "",
                 "right bound -2 must not be negative");
  }
}

TEST(InferSdpa, StatsAreNotAnOutputInInference) {
  SdpaCase c;
  c.stats_output = true;
  expect_error(c.build(dg::SdpaAttr().set_is_inference(true)), dg::ErrorCode::INVALID_VALUE, "attn::STATS",
               "inference mode");
}

TEST(InferSdpa, StatsMustBeFloat) {
  SdpaCase c;
  c.stats_output = true;
  dg::SdpaAttr attr;
  attr.set_is_inference(false);
  // Build first to get the STATS tensor, then set a wrong type and validate again.
  ASSERT_TRUE(c.build(attr).ok());
  c.STATS->set_data_type(dg::DataType::HALF);
  expect_error(c.g.validate(), dg::ErrorCode::INVALID_DATA_TYPE, "attn::STATS", "data type HALF must be FLOAT");
}
