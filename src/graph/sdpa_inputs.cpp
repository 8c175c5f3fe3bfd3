// Rules of sdpa's optional inputs: bias, dropout, ragged offsets, paged K and V (sdpa_checks.hpp).
#include <cmath>
#include <string>

#include "graph/infer_util.hpp"
#include "graph/sdpa_checks.hpp"
#include "graph/sdpa_features.hpp"

namespace dnngraph::sdpa_checks {
namespace {

std::string type_name(DataType t) { return std::string(to_string(t)); }

bool is_index_type(DataType t) { return t == DataType::INT32 || t == DataType::INT64; }

}  // namespace

Status check_bias(const NodeSpec& n, const TensorAttr* bias, const Sizes& s) {
  if (!bias) return {};
  if (auto st = check_input(n, bias, "BIAS"); !st.ok()) return st;
  const auto& d = bias->get_dim();
  const bool ok = d.size() == 4 && (d[0] == 1 || d[0] == s.b) && (d[1] == 1 || d[1] == s.h) && d[2] == s.sq &&
                  d[3] == s.skv;
  if (!ok)
    return node_error(ErrorCode::SHAPE_DEDUCTION_FAILED, n, bias,
                      "dims " + dims_to_string(d) + " must be [" + std::to_string(s.b) + " or 1, " +
                          std::to_string(s.h) + " or 1, " + std::to_string(s.sq) + ", " + std::to_string(s.skv) +
                          "] (a bias on the scores [b, h, sq, skv], broadcast over dims of 1)");
  const DataType t = bias->get_data_type();
  if (t != DataType::HALF && t != DataType::BFLOAT16 && t != DataType::FLOAT)
    return node_error(ErrorCode::INVALID_DATA_TYPE, n, bias,
                      "data type " + type_name(t) + " is not supported (a bias is HALF, BFLOAT16 or FLOAT)");
  return {};
}

Status check_dropout(const NodeSpec& n, std::optional<double> probability, const TensorAttr* seed,
                     const TensorAttr* offset) {
  if (!probability) {
    if (seed || offset)
      return node_error(ErrorCode::INVALID_VALUE, n, seed ? seed : offset,
                        "a dropout seed or offset is given without a dropout probability (set_dropout)");
    return {};
  }
  if (!std::isfinite(*probability) || *probability < 0.0 || *probability >= 1.0)
    return node_error(ErrorCode::INVALID_VALUE, n, nullptr,
                      "dropout probability " + std::to_string(*probability) + " must be in [0, 1)");
  if (!seed || !offset)
    return node_error(ErrorCode::ATTRIBUTE_NOT_SET, n, nullptr,
                      std::string("dropout needs a ") + (seed ? "offset" : "seed") +
                          " tensor (set_dropout(probability, seed, offset))");
  for (auto [t, slot] : {std::pair{seed, "SEED"}, std::pair{offset, "OFFSET"}}) {
    if (auto st = check_input(n, t, slot); !st.ok()) return st;
    if (t->get_volume() != 1)
      return node_error(ErrorCode::SHAPE_DEDUCTION_FAILED, n, t,
                        "dims " + dims_to_string(t->get_dim()) + " hold " + std::to_string(t->get_volume()) +
                            " elements; a dropout " + (t == seed ? "seed" : "offset") + " is one element");
    if (!is_index_type(t->get_data_type()))
      return node_error(ErrorCode::INVALID_DATA_TYPE, n, t,
                        "data type " + type_name(t->get_data_type()) + " must be INT64 or INT32 (a dropout " +
                            (t == seed ? "seed" : "offset") + ")");
  }
  return {};
}

Status check_ragged(const NodeSpec& n, const TensorAttr& owner, const TensorAttr* offset, int64_t batch,
                    bool padding_mask) {
  if (!offset) return {};
  if (!padding_mask)
    return node_error(ErrorCode::INVALID_VALUE, n, &owner,
                      "has a ragged offset but the padding mask is off (seq_len_q and seq_len_kv say how many "
                      "rows each batch of a ragged tensor holds: set_padding_mask(true))");
  if (auto st = check_input(n, offset, "RAGGED_OFFSET"); !st.ok()) return st;
  if (offset->get_dim() != std::vector<int64_t>{batch + 1, 1, 1, 1})
    return node_error(ErrorCode::SHAPE_DEDUCTION_FAILED, n, &owner,
                      "ragged offset '" + offset->get_name() + "' has dims " + dims_to_string(offset->get_dim()) +
                          "; it must be " + dims_to_string({batch + 1, 1, 1, 1}) + " (one start per batch, and the end)");
  if (!is_index_type(offset->get_data_type()))
    return node_error(ErrorCode::INVALID_DATA_TYPE, n, &owner,
                      "ragged offset '" + offset->get_name() + "' has data type " +
                          type_name(offset->get_data_type()) + "; it must be INT32 or INT64");
  if (offset->get_is_virtual())
    return node_error(ErrorCode::INVALID_VALUE, n, &owner,
                      "ragged offset '" + offset->get_name() + "' is virtual; it must be a graph input");
  if (offset->get_ragged_offset())
    return node_error(ErrorCode::INVALID_VALUE, n, &owner,
                      "ragged offset '" + offset->get_name() + "' has a ragged offset of its own");
  return {};
}

Status check_not_ragged(const NodeSpec& n, const TensorAttr* t, const char* applies_to) {
  if (t && t->get_ragged_offset())
    return node_error(ErrorCode::INVALID_VALUE, n, t, std::string("has a ragged offset, which applies to ") + applies_to);
  return {};
}

namespace {

Status check_table(const NodeSpec& n, const TensorAttr* table, const char* slot, int64_t batch, int64_t block_size,
                   int64_t max_seq_len_kv) {
  if (auto st = check_input(n, table, slot); !st.ok()) return st;
  const auto& d = table->get_dim();
  if (d.size() != 4 || d[0] != batch || d[1] != 1 || d[3] != 1)
    return node_error(ErrorCode::SHAPE_DEDUCTION_FAILED, n, table,
                      "dims " + dims_to_string(d) + " must be [" + std::to_string(batch) +
                          ", 1, pages, 1] (a page table: the container block of each page of keys)");
  if (table->get_data_type() != DataType::INT32)
    return node_error(ErrorCode::INVALID_DATA_TYPE, n, table,
                      "data type " + type_name(table->get_data_type()) + " must be INT32 (a page table)");
  if (d[2] * block_size < max_seq_len_kv)
    return node_error(ErrorCode::SHAPE_DEDUCTION_FAILED, n, table,
                      std::to_string(d[2]) + " pages of " + std::to_string(block_size) + " keys hold fewer than " +
                          "paged_attention_max_seq_len_kv " + std::to_string(max_seq_len_kv) + " keys");
  return {};
}

}  // namespace

Status check_paged(const NodeSpec& n, const TensorAttr& k, const TensorAttr* k_table, const TensorAttr* v_table,
                   std::optional<int64_t> max_seq_len_kv, bool padding_mask, int64_t batch) {
  if (!k_table && !v_table) {
    if (max_seq_len_kv)
      return node_error(ErrorCode::INVALID_VALUE, n, nullptr,
                        "paged_attention_max_seq_len_kv is set without page tables");
    return {};
  }
  if (!k_table || !v_table)
    return node_error(ErrorCode::ATTRIBUTE_NOT_SET, n, k_table ? k_table : v_table,
                      std::string("paged attention needs both page tables; the ") + (k_table ? "V" : "K") +
                          " table is missing");
  if (!max_seq_len_kv || *max_seq_len_kv < 1)
    return node_error(ErrorCode::ATTRIBUTE_NOT_SET, n, nullptr,
                      "paged attention needs paged_attention_max_seq_len_kv >= 1 (the keys per batch)");
  if (!padding_mask)
    return node_error(ErrorCode::INVALID_VALUE, n, nullptr,
                      "paged attention needs the padding mask (seq_len_kv says how many keys each batch's pages hold)");
  const int64_t block_size = k.get_dim()[2];
  if (auto st = check_table(n, k_table, "K_TABLE", batch, block_size, *max_seq_len_kv); !st.ok()) return st;
  return check_table(n, v_table, "V_TABLE", batch, block_size, *max_seq_len_kv);
}

}  // namespace dnngraph::sdpa_checks

namespace dnngraph {

SdpaFeatures sdpa_features(const ir::Graph& g, const ir::Node& n) {
  SdpaFeatures f;
  auto has = [&](size_t k) { return k < n.inputs.size() && n.inputs[k] >= 0; };
  auto visit = [&](const auto& a, size_t bias, size_t first_ragged, size_t end_ragged) {
    f.bias = has(bias);
    f.alibi = a.get_alibi_mask();
    f.dropout = a.get_dropout_probability().has_value();
    for (size_t k = first_ragged; k < end_ragged; ++k) f.ragged |= has(k);
  };
  if (const auto* a = std::get_if<SdpaAttr>(&n.attr)) {
    visit(*a, slot::SDPA_BIAS, slot::SDPA_Q_RAGGED, slot::SDPA_INPUT_COUNT);
    f.paged = has(slot::SDPA_K_TABLE);
  } else if (const auto* b = std::get_if<SdpaBackwardAttr>(&n.attr)) {
    visit(*b, slot::SB_BIAS, slot::SB_Q_RAGGED, slot::SB_INPUT_COUNT);
  }
  if (n.inputs.size() > 2) f.kv_heads_differ = g.tensor(n.inputs[1]).dims[1] != g.tensor(n.inputs[2]).dims[1];
  return f;
}

std::string sdpa_features_missing(const SdpaFeatures& f, const SdpaFeatures& supported) {
  std::string out;
  auto add = [&](bool used, bool ok, const char* what) {
    if (used && !ok) out += (out.empty() ? "" : ", ") + std::string(what);
  };
  add(f.bias, supported.bias, "a bias");
  add(f.alibi, supported.alibi, "ALiBi");
  add(f.dropout, supported.dropout, "dropout");
  add(f.ragged, supported.ragged, "ragged offsets");
  add(f.paged, supported.paged, "paged K and V");
  add(f.kv_heads_differ, supported.kv_heads_differ, "K and V of different head counts");
  return out;
}

}  // namespace dnngraph
