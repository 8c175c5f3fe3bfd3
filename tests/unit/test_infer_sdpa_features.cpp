// Validation of sdpa's and sdpa_backward's optional inputs (bias, dropout, rng_dump, ragged
// offsets, paged K and V, dBias): every rule's code and message; JSON round trips that keep them;
// the fingerprint telling graphs with and without them apart.
#include <gtest/gtest.h>

#include <functional>

#include "common/status_checks.hpp"
#include "dnngraph/dnngraph.hpp"
#include "graph/graph_impl.hpp"

namespace dg = dnngraph;

namespace {

using dg::ErrorCode;

// Q [2,4,5,8], K [2,2,7,8], V [2,2,7,8] BSHD, HALF; `edit` adjusts the attribute and tensors
// before the node is built, `after` the outputs after.
struct Fixture {
  dg::Graph g;
  dg::TensorPtr Q, K, V, SQ, SKV, O, STATS;
  dg::SdpaAttr a;
  Fixture() {
    g.set_io_data_type(dg::DataType::HALF).set_compute_data_type(dg::DataType::FLOAT);
    Q = t("Q", {2, 4, 5, 8}, {160, 8, 32, 1});
    K = t("K", {2, 2, 7, 8}, {112, 8, 16, 1});
    V = t("V", {2, 2, 7, 8}, {112, 8, 16, 1});
    SQ = t("SQ", {2, 1, 1, 1}, {1, 1, 1, 1}, dg::DataType::INT32);
    SKV = t("SKV", {2, 1, 1, 1}, {1, 1, 1, 1}, dg::DataType::INT32);
    a.set_name("attn").set_is_inference(false);
  }
  dg::TensorPtr t(const char* name, std::vector<int64_t> dims, std::vector<int64_t> strides,
                  dg::DataType type = dg::DataType::HALF) {
    return g.tensor(dg::TensorAttr().set_name(name).set_dim(dims).set_stride(strides).set_data_type(type));
  }
  dg::TensorPtr index(const char* name, int64_t n, dg::DataType type = dg::DataType::INT64) {
    return t(name, {n, 1, 1, 1}, {1, 1, 1, 1}, type);
  }
  Fixture& padding() {
    a.set_padding_mask(true).set_seq_len_q(SQ).set_seq_len_kv(SKV);
    return *this;
  }
  dg::Status build(const std::function<void(Fixture&)>& after = {}) {
    auto outs = g.sdpa(Q, K, V, a);
    O = outs[0], STATS = outs[1];
    O->set_output(true);
    STATS->set_output(true);
    if (after) after(*this);
    return g.validate();
  }
};

void expect_error(const dg::Status& s, ErrorCode code, const std::string& tensor, const std::string& rule) {
  test_status::expect_error(s, code, "node 'attn' (sdpa)", tensor, rule);
}

}  // namespace

TEST(InferSdpaFeatures, EveryFeatureValidates) {
  Fixture f;
  f.padding();
  f.a.set_bias(f.t("B", {1, 4, 5, 7}, {140, 35, 7, 1})).set_alibi_mask(true);
  f.a.set_dropout(0.1, f.index("SEED", 1), f.index("OFFSET", 1, dg::DataType::INT32));
  f.a.set_rng_dump(f.t("DUMP", {2, 4, 5, 7}, {140, 35, 7, 1}, dg::DataType::FLOAT));
  f.Q->set_ragged_offset(f.index("QR", 3));
  f.K->set_ragged_offset(f.index("KR", 3, dg::DataType::INT32));
  ASSERT_TRUE(f.build([&](Fixture& x) { x.O->set_ragged_offset(x.index("OR", 3)); }).ok());
  // JSON keeps every input: read back, it writes the same text and validates.
  const std::string json = f.g.to_json();
  dg::Graph g2;
  ASSERT_TRUE(dg::Graph::from_json(json, g2).ok());
  EXPECT_EQ(g2.to_json(), json);
  EXPECT_TRUE(g2.validate().ok());
  for (const char* field : {"\"alibi_mask\"", "\"dropout_probability\"", "\"O_RAGGED_OFFSET\"", "\"BIAS\"", "\"RNG_DUMP\""})
    EXPECT_NE(json.find(field), std::string::npos) << field;
}

// Written before validate(), the ragged offsets (held by the tensors) are written too.
TEST(InferSdpaFeatures, JsonBeforeValidateKeepsRaggedOffsets) {
  Fixture f;
  f.padding();
  f.Q->set_ragged_offset(f.index("QR", 3));
  auto outs = f.g.sdpa(f.Q, f.K, f.V, f.a);
  outs[0]->set_output(true).set_ragged_offset(f.index("OR", 3));
  const std::string json = f.g.to_json();
  EXPECT_NE(json.find("\"Q_RAGGED_OFFSET\": \"QR\""), std::string::npos) << json;
  EXPECT_NE(json.find("\"O_RAGGED_OFFSET\": \"OR\""), std::string::npos) << json;
  dg::Graph g2;
  ASSERT_TRUE(dg::Graph::from_json(json, g2).ok());
  ASSERT_TRUE(g2.validate().ok());  // validate() fills in dims and uids; the offsets stay
  EXPECT_NE(g2.to_json().find("\"O_RAGGED_OFFSET\": \"OR\""), std::string::npos);
}

TEST(InferSdpaFeatures, FingerprintSeesTheFeatures) {
  dg::Handle handle(dg::Device::cpu());
  auto fingerprint = [&](const std::function<void(Fixture&)>& edit) {
    Fixture f;
    f.padding();
    edit(f);
    EXPECT_TRUE(f.build().ok());
    EXPECT_TRUE(f.g.build_operation_graph(handle).ok());
    return dg::impl_of(f.g).ir->fingerprint();
  };
  const uint64_t plain = fingerprint([](Fixture&) {});
  EXPECT_NE(plain, fingerprint([](Fixture& f) { f.a.set_alibi_mask(true); }));
  EXPECT_NE(plain, fingerprint([](Fixture& f) { f.a.set_bias(f.t("B", {1, 1, 5, 7}, {35, 35, 7, 1})); }));
  EXPECT_NE(plain, fingerprint([](Fixture& f) { f.Q->set_ragged_offset(f.index("QR", 3)); }));
  EXPECT_NE(plain, fingerprint([](Fixture& f) { f.a.set_dropout(0.2, f.index("S", 1), f.index("O", 1)); }));
}

TEST(InferSdpaFeatures, BiasRules) {
  Fixture f;
  f.a.set_bias(f.t("B", {2, 4, 5, 6}, {120, 30, 6, 1}));
  expect_error(f.build(), ErrorCode::SHAPE_DEDUCTION_FAILED, "B", "dims [2,4,5,6] must be [2 or 1, 4 or 1, 5, 7]");
  Fixture g;
  g.a.set_bias(g.t("B", {1, 1, 5, 7}, {35, 35, 7, 1}, dg::DataType::INT32));
  expect_error(g.build(), ErrorCode::INVALID_DATA_TYPE, "B", "data type INT32 is not supported (a bias is HALF");
}

TEST(InferSdpaFeatures, DropoutRules) {
  Fixture f;
  f.a.set_dropout(1.0, f.index("S", 1), f.index("O", 1));
  expect_error(f.build(), ErrorCode::INVALID_VALUE, "", "dropout probability 1.000000 must be in [0, 1)");
  Fixture g;
  g.a.set_dropout(0.1, g.index("S", 1), nullptr);
  expect_error(g.build(), ErrorCode::ATTRIBUTE_NOT_SET, "", "dropout needs a offset tensor");
  Fixture h;
  h.a.set_dropout(0.1, h.index("S", 2), h.index("O", 1));
  expect_error(h.build(), ErrorCode::SHAPE_DEDUCTION_FAILED, "S", "hold 2 elements; a dropout seed is one element");
  Fixture k;
  k.a.set_dropout(0.1, k.index("S", 1), k.index("O", 1, dg::DataType::FLOAT));
  expect_error(k.build(), ErrorCode::INVALID_DATA_TYPE, "O", "data type FLOAT must be INT64 or INT32 (a dropout offset)");
  Fixture m;
  m.a.set_rng_dump(m.t("DUMP", {2, 4, 5, 7}, {140, 35, 7, 1}, dg::DataType::FLOAT));
  expect_error(m.build(), ErrorCode::INVALID_VALUE, "DUMP", "is the rng_dump output but dropout is off");
  Fixture n;
  n.a.set_dropout(0.1, n.index("S", 1), n.index("O", 1));
  n.a.set_rng_dump(n.t("DUMP", {2, 4, 5, 7}, {140, 35, 7, 1}, dg::DataType::HALF));
  expect_error(n.build(), ErrorCode::INVALID_DATA_TYPE, "DUMP", "data type HALF must be FLOAT (the dropout mask)");
}

TEST(InferSdpaFeatures, RaggedRules) {
  Fixture f;
  f.Q->set_ragged_offset(f.index("QR", 3));
  expect_error(f.build(), ErrorCode::INVALID_VALUE, "Q", "has a ragged offset but the padding mask is off");
  Fixture g;
  g.padding();
  g.K->set_ragged_offset(g.index("KR", 2));
  expect_error(g.build(), ErrorCode::SHAPE_DEDUCTION_FAILED, "K",
               "ragged offset 'KR' has dims [2,1,1,1]; it must be [3,1,1,1]");
  Fixture h;
  h.padding();
  h.V->set_ragged_offset(h.index("VR", 3, dg::DataType::FLOAT));
  expect_error(h.build(), ErrorCode::INVALID_DATA_TYPE, "V", "ragged offset 'VR' has data type FLOAT; it must be INT32 or INT64");
  Fixture k;
  k.padding();
  expect_error(k.build([](Fixture& x) { x.STATS->set_ragged_offset(x.index("SR", 3)); }), ErrorCode::INVALID_VALUE,
               "attn::STATS", "has a ragged offset, which applies to Q, K, V, O");
}

TEST(InferSdpaFeatures, PagedRules) {
  auto paged = [](Fixture& f, int64_t pages, dg::DataType type = dg::DataType::INT32) {
    f.K = f.t("K", {9, 2, 4, 8}, {64, 32, 8, 1});  // 9 blocks of 4 keys
    f.V = f.t("V", {9, 2, 4, 8}, {64, 32, 8, 1});
    f.a.set_paged_attention_k_table(f.t("KT", {2, 1, pages, 1}, {pages, pages, 1, 1}, type));
    f.a.set_paged_attention_v_table(f.t("VT", {2, 1, pages, 1}, {pages, pages, 1, 1}, type));
    f.a.set_paged_attention_max_seq_len_kv(10);
  };
  Fixture ok;
  ok.padding();
  paged(ok, 3);
  EXPECT_TRUE(ok.build().ok());
  Fixture f;
  paged(f, 3);
  expect_error(f.build(), ErrorCode::INVALID_VALUE, "", "paged attention needs the padding mask");
  Fixture g;
  g.padding();
  paged(g, 2);
  expect_error(g.build(), ErrorCode::SHAPE_DEDUCTION_FAILED, "KT",
               "2 pages of 4 keys hold fewer than paged_attention_max_seq_len_kv 10 keys");
  Fixture h;
  h.padding();
  paged(h, 3, dg::DataType::INT64);
  expect_error(h.build(), ErrorCode::INVALID_DATA_TYPE, "KT", "data type INT64 must be INT32 (a page table)");
  Fixture k;
  k.padding();
  paged(k, 3);
  k.a.set_paged_attention_v_table(nullptr);
  expect_error(k.build(), ErrorCode::ATTRIBUTE_NOT_SET, "KT", "paged attention needs both page tables; the V table");
  Fixture m;
  m.padding();
  m.a.set_paged_attention_max_seq_len_kv(10);
  expect_error(m.build(), ErrorCode::INVALID_VALUE, "", "paged_attention_max_seq_len_kv is set without page tables");
  Fixture n;
  n.padding();
  paged(n, 3);
  n.K->set_ragged_offset(n.index("KR", 3));
  expect_error(n.build(), ErrorCode::INVALID_VALUE, "K", "paged K and V are containers of blocks and cannot be ragged");
}

TEST(InferSdpaFeatures, KAndVHeadsEachDivideQHeads) {
  Fixture f;
  f.V = f.t("V", {2, 1, 7, 8}, {56, 8, 8, 1});  // K has 2 heads, V 1: both divide Q's 4
  EXPECT_TRUE(f.build().ok());
  Fixture g;
  g.V = g.t("V", {2, 3, 7, 8}, {168, 8, 24, 1});
  expect_error(g.build(), ErrorCode::SHAPE_DEDUCTION_FAILED, "V", "heads 3 do not divide Q's heads 4");
}

TEST(InferSdpaFeatures, BackwardDbiasAndRaggedGradients) {
  auto backward = [](bool with_bias, dg::DataType dbias_type, bool ragged_dq, bool padding) {
    Fixture f;
    auto O = f.t("O", {2, 4, 5, 8}, {160, 8, 32, 1}), DO = f.t("DO", {2, 4, 5, 8}, {160, 8, 32, 1});
    auto STATS = f.t("ST", {2, 4, 5, 1}, {20, 5, 1, 1}, dg::DataType::FLOAT);
    dg::SdpaBackwardAttr a;
    a.set_name("attn_bwd");
    if (padding) a.set_padding_mask(true).set_seq_len_q(f.SQ).set_seq_len_kv(f.SKV);
    if (with_bias) a.set_bias(f.t("B", {1, 4, 5, 7}, {140, 35, 7, 1}));
    a.set_dbias(f.t("DB", {1, 4, 5, 7}, {140, 35, 7, 1}, dbias_type));
    auto outs = f.g.sdpa_backward(f.Q, f.K, f.V, O, DO, STATS, a);
    for (auto& t : outs) t->set_output(true);
    if (ragged_dq) outs[0]->set_ragged_offset(f.index("DQR", 3));
    return f.g.validate();
  };
  auto err = [](const dg::Status& s, ErrorCode code, const std::string& tensor, const std::string& rule) {
    test_status::expect_error(s, code, "node 'attn_bwd' (sdpa_backward)", tensor, rule);
  };
  EXPECT_TRUE(backward(true, dg::DataType::HALF, true, true).ok());
  err(backward(false, dg::DataType::HALF, false, false), ErrorCode::INVALID_VALUE, "DB",
      "is the dBias output but the node has no bias");
  err(backward(true, dg::DataType::INT8, false, false), ErrorCode::INVALID_DATA_TYPE, "DB",
      "data type INT8 is not supported (dBias is HALF, BFLOAT16 or FLOAT)");
  err(backward(true, dg::DataType::HALF, true, false), ErrorCode::INVALID_VALUE, "attn_bwd::DQ",
      "has a ragged offset but the padding mask is off");
}
