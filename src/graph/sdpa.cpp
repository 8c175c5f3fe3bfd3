// Scaled dot-product attention: shape inference and validation.
//
// Q[b,h,sq,d], K[b,hk,skv,d], V[b,hk,skv,dv] -> O[b,h,sq,dv] (in Q's layout), STATS[b,h,sq,1] FLOAT.
// sdpa_backward: (Q, K, V, O, dO, STATS) -> dQ, dK, dV (in the layouts of Q, K, V), with
// P = exp(attn_scale * q.k - STATS) over the visible keys, dS = P * (dO.v - rowsum(dO * O)),
// dQ = attn_scale * dS K, dK = attn_scale * dS^T Q, dV = P^T dO (GQA: summed over a group's heads);
// padded query rows give dQ = 0 and add nothing to dK, dV; padded keys get dK = dV = 0.
// Masking rules, shared by every engine (see also src/engines/ref/ref_sdpa.cpp):
//  - With the padding mask, sq and skv below are the per-batch lengths seq_len_q[b] and seq_len_kv[b]
//    (clamped to [0, dim]); rows i >= sq give O = 0 and STATS = 0, keys j >= skv are masked.
//  - Diagonal offset: 0 for TOP_LEFT, skv - sq for BOTTOM_RIGHT.
//  - Key j is visible to query i when j <= i + offset + right (if a right bound is set; causal masks
//    set right = 0) and j > i + offset - left (if a left bound is set: a sliding window of `left`).
//  - A row that sees no key at all gives O = 0 and STATS = 0 (never NaN).
//  - STATS = logsumexp over the visible keys of attn_scale * q.k (natural log).
// Optional inputs (rules: sdpa_inputs.cpp):
//  - Scores are s = attn_scale * q.k + bias[b, h, i, j] (broadcast) + slope(h) * (j - i) with ALiBi,
//    slope(h) as in Press et al. (2^(-8 (h + 1) / n) for the n = 2^floor(log2 H) first heads, then
//    2^(-4 (2 (h - n) + 1) / n)); STATS is the logsumexp of s.
//  - Dropout: P's element (b, h, i, j) is kept when core/philox.hpp's DropoutMask::keep says so, and
//    scaled by 1 / (1 - p); STATS and the softmax's sum are those before dropout. RNG_DUMP gets
//    the mask (1 or 0) of every element of [b, h, sq, skv].
//  - Ragged tensors: batch b's rows start at element ragged_offset[b]; rows past the batch's
//    length are neither read nor written (padded rows of a ragged O or dQ keep their bytes).
//  - Paged K, V: key j of batch b is row j % block_size of container block table[b, 0, j / block_size, 0].
//  - K and V may have different head counts; each divides Q's (head h reads K head h / (h_q / h_k)).
//  - dBIAS = sum of dS over the dims the bias broadcasts, where dS = d loss / d s.
#include <cmath>

#include <nlohmann/json.hpp>

#include "graph/families.hpp"
#include "graph/infer_util.hpp"
#include "graph/ir.hpp"
#include "graph/json_fields.hpp"
#include "graph/sdpa_checks.hpp"

namespace dnngraph {
namespace {

bool is_sdpa_io_type(DataType t) {
  return t == DataType::FLOAT || t == DataType::HALF || t == DataType::BFLOAT16 || t == DataType::FP8_E4M3 ||
         t == DataType::FP8_E5M2;
}

Status check_qkv_types(const NodeSpec& n, const TensorAttr& q, const TensorAttr& k, const TensorAttr& v) {
  if (!is_sdpa_io_type(q.get_data_type()))
    return node_error(ErrorCode::INVALID_DATA_TYPE, n, &q,
                      "data type " + std::string(to_string(q.get_data_type())) +
                          " is not supported (sdpa takes HALF, BFLOAT16, FLOAT, FP8_E4M3 or FP8_E5M2)");
  for (const TensorAttr* t : {&k, &v})
    if (t->get_data_type() != q.get_data_type())
      return node_error(ErrorCode::INVALID_DATA_TYPE, n, t,
                        "data type " + std::string(to_string(t->get_data_type())) + " differs from Q's " +
                            std::string(to_string(q.get_data_type())) + " (Q, K and V must share one type)");
  return {};
}

// With paged K and V (`paged`), K and V are containers of blocks whose dim 0 is no batch.
Status check_qkv_shapes(const NodeSpec& n, const TensorAttr& q, const TensorAttr& k, const TensorAttr& v,
                        bool paged = false) {
  for (const TensorAttr* t : {&q, &k, &v})
    if (t->get_dim().size() != 4)
      return node_error(ErrorCode::SHAPE_DEDUCTION_FAILED, n, t,
                        "rank " + std::to_string(t->get_dim().size()) + " is not 4 (sdpa tensors are [b,h,s,d])");
  const auto &qd = q.get_dim(), &kd = k.get_dim(), &vd = v.get_dim();
  for (const TensorAttr* t : {&k, &v})
    if (!paged && t->get_dim()[0] != qd[0])
      return node_error(ErrorCode::SHAPE_DEDUCTION_FAILED, n, t,
                        "batch " + std::to_string(t->get_dim()[0]) + " differs from Q's batch " + std::to_string(qd[0]));
  if (paged && vd[0] != kd[0])
    return node_error(ErrorCode::SHAPE_DEDUCTION_FAILED, n, &v,
                      "blocks " + std::to_string(vd[0]) + " differ from K's " + std::to_string(kd[0]) +
                          " (paged K and V containers hold the same number of blocks)");
  for (const TensorAttr* t : {&k, &v})
    if (qd[1] % t->get_dim()[1] != 0)
      return node_error(ErrorCode::SHAPE_DEDUCTION_FAILED, n, t,
                        "heads " + std::to_string(t->get_dim()[1]) + " do not divide Q's heads " +
                            std::to_string(qd[1]) + " (grouped-query attention needs h % hk == 0)");
  if (kd[3] != qd[3])
    return node_error(ErrorCode::SHAPE_DEDUCTION_FAILED, n, &k,
                      "head dim " + std::to_string(kd[3]) + " differs from Q's head dim " + std::to_string(qd[3]));
  if (vd[2] != kd[2])
    return node_error(ErrorCode::SHAPE_DEDUCTION_FAILED, n, &v,
                      (paged ? "block size " : "sequence length ") + std::to_string(vd[2]) + " differs from K's " +
                          std::to_string(kd[2]));
  return {};
}

Status check_seq_len(const NodeSpec& n, const TensorAttr* t, const char* slot_name, int64_t batch) {
  if (auto s = check_input(n, t, slot_name); !s.ok()) return s;
  const std::vector<int64_t> want{batch, 1, 1, 1};
  if (t->get_dim() != want)
    return node_error(ErrorCode::SHAPE_DEDUCTION_FAILED, n, t,
                      "dims " + dims_to_string(t->get_dim()) + " must be " + dims_to_string(want) +
                          " (one sequence length per batch)");
  if (t->get_data_type() != DataType::INT32)
    return node_error(ErrorCode::INVALID_DATA_TYPE, n, t,
                      "data type " + std::string(to_string(t->get_data_type())) + " must be INT32");
  return {};
}

// The masks of sdpa (seq_q_slot SDPA_SEQ_Q) and sdpa_backward (SB_SEQ_Q); SEQ_KV is the next slot.
template <class Attr>
Status check_masks(const Attr& a, const NodeSpec& n, int64_t batch, size_t seq_q_slot) {
  if (auto l = a.get_diagonal_band_left_bound(); l && *l < 0)
    return node_error(ErrorCode::INVALID_VALUE, n, nullptr,
                      "diagonal band left bound " + std::to_string(*l) + " must not be negative");
  if (auto r = a.get_diagonal_band_right_bound(); r && *r < 0)
    return node_error(ErrorCode::INVALID_VALUE, n, nullptr,
                      "diagonal band right bound " + std::to_string(*r) + " must not be negative");
  if (auto s = a.get_attn_scale(); s && !std::isfinite(*s))
    return node_error(ErrorCode::INVALID_VALUE, n, nullptr, "attn_scale must be finite");
  const TensorAttr* sq = n.inputs.size() > seq_q_slot ? n.inputs[seq_q_slot].get() : nullptr;
  const TensorAttr* skv = n.inputs.size() > seq_q_slot + 1 ? n.inputs[seq_q_slot + 1].get() : nullptr;
  if (!a.get_padding_mask()) {
    if (sq || skv)
      return node_error(ErrorCode::INVALID_VALUE, n, sq ? sq : skv,
                        "a sequence-length tensor is given but the padding mask is off (set_padding_mask(true))");
    return {};
  }
  if (!sq || !skv)
    return node_error(ErrorCode::ATTRIBUTE_NOT_SET, n, nullptr,
                      std::string("the padding mask needs ") + (sq ? "seq_len_kv" : "seq_len_q") +
                          " (set_seq_len_q and set_seq_len_kv)");
  if (auto s = check_seq_len(n, sq, "SEQ_LEN_Q", batch); !s.ok()) return s;
  return check_seq_len(n, skv, "SEQ_LEN_KV", batch);
}

Status fill_stats(const SdpaAttr& a, const NodeSpec& n, TensorAttr& stats, const std::vector<int64_t>& dims,
                  const GraphDefaults& defaults) {
  if (a.get_is_inference() && stats.get_is_output())
    return node_error(ErrorCode::INVALID_VALUE, n, &stats,
                      "is marked as an output but the node is in inference mode (set_is_inference(false) to get stats)");
  if (stats.get_data_type() == DataType::NOT_SET) stats.set_data_type(DataType::FLOAT);
  if (stats.get_data_type() != DataType::FLOAT)
    return node_error(ErrorCode::INVALID_DATA_TYPE, n, &stats,
                      "data type " + std::string(to_string(stats.get_data_type())) + " must be FLOAT");
  return fill_output(n, stats, dims, {}, defaults, DataType::FLOAT);  // packed [b,h,sq,1]
}

const TensorAttr* input_at(const NodeSpec& n, size_t k) { return k < n.inputs.size() ? n.inputs[k].get() : nullptr; }

// The bias's and dropout's rules (ALiBi has none), which sdpa and sdpa_backward share.
template <class Attr>
Status check_score_inputs(const Attr& a, const NodeSpec& n, const sdpa_checks::Sizes& s, size_t bias_slot,
                          size_t seed_slot) {
  if (auto st = sdpa_checks::check_bias(n, input_at(n, bias_slot), s); !st.ok()) return st;
  return sdpa_checks::check_dropout(n, a.get_dropout_probability(), input_at(n, seed_slot),
                                    input_at(n, seed_slot + 1));
}

// Only the tensors that hold rows (and page tables) may be ragged.
Status check_ragged_owners(const NodeSpec& n, const std::vector<const TensorAttr*>& others) {
  for (const TensorAttr* t : others)
    if (auto st = sdpa_checks::check_not_ragged(n, t, "Q, K, V, O, dO, dQ, dK, dV and page tables"); !st.ok())
      return st;
  return {};
}

// An output slot whose feature is off (RNG_DUMP without dropout, dBIAS without a bias): one FLOAT,
// so that no engine stages [b, h, sq, skv] elements for nothing.
Status fill_placeholder(const NodeSpec& n, TensorAttr& t, const GraphDefaults& defaults) {
  if (t.get_data_type() == DataType::NOT_SET) t.set_data_type(DataType::FLOAT);
  return fill_output(n, t, {1, 1, 1, 1}, {}, defaults, DataType::FLOAT);
}

// RNG_DUMP: [b, h, sq, skv] FLOAT; an output only with dropout.
Status fill_rng_dump(const SdpaAttr& a, const NodeSpec& n, TensorAttr& dump, const sdpa_checks::Sizes& s,
                     const GraphDefaults& defaults) {
  if (dump.get_is_output() && !a.get_dropout_probability())
    return node_error(ErrorCode::INVALID_VALUE, n, &dump, "is the rng_dump output but dropout is off (set_dropout)");
  if (!a.get_dropout_probability()) return fill_placeholder(n, dump, defaults);
  if (dump.get_data_type() == DataType::NOT_SET) dump.set_data_type(DataType::FLOAT);
  if (dump.get_data_type() != DataType::FLOAT)
    return node_error(ErrorCode::INVALID_DATA_TYPE, n, &dump,
                      "data type " + std::string(to_string(dump.get_data_type())) + " must be FLOAT (the dropout mask)");
  return fill_output(n, dump, {s.b, s.h, s.sq, s.skv}, {}, defaults, DataType::FLOAT);
}

Status check_forward_ragged(const SdpaAttr& attr, const NodeSpec& node) {
  const bool pad = attr.get_padding_mask();
  const int64_t b = node.inputs[slot::SDPA_Q]->get_dim()[0];
  const std::pair<size_t, const TensorAttr*> owners[] = {
      {slot::SDPA_Q_RAGGED, node.inputs[slot::SDPA_Q].get()},     {slot::SDPA_K_RAGGED, node.inputs[slot::SDPA_K].get()},
      {slot::SDPA_V_RAGGED, node.inputs[slot::SDPA_V].get()},     {slot::SDPA_O_RAGGED, node.outputs[0].get()},
      {slot::SDPA_K_TABLE_RAGGED, input_at(node, slot::SDPA_K_TABLE)},
      {slot::SDPA_V_TABLE_RAGGED, input_at(node, slot::SDPA_V_TABLE)}};
  for (auto [k, owner] : owners)
    if (owner)
      if (auto s = sdpa_checks::check_ragged(node, *owner, input_at(node, k), b, pad); !s.ok()) return s;
  if (input_at(node, slot::SDPA_K_TABLE) && (input_at(node, slot::SDPA_K_RAGGED) || input_at(node, slot::SDPA_V_RAGGED)))
    return node_error(ErrorCode::INVALID_VALUE, node, node.inputs[slot::SDPA_K].get(),
                      "paged K and V are containers of blocks and cannot be ragged (a ragged offset belongs on the "
                      "page tables)");
  return check_ragged_owners(node, {input_at(node, slot::SDPA_SEQ_Q), input_at(node, slot::SDPA_SEQ_KV),
                                    input_at(node, slot::SDPA_BIAS), input_at(node, slot::SDPA_SEED),
                                    input_at(node, slot::SDPA_OFFSET), node.outputs[1].get(), node.outputs[2].get()});
}

Status infer(const SdpaAttr& attr, NodeSpec& node, const GraphDefaults& defaults) {
  static const char* kSlot[] = {"Q", "K", "V"};
  if (node.inputs.size() < 3 || node.outputs.size() != 3)
    return node_error(ErrorCode::INVALID_GRAPH, node, nullptr, "sdpa takes Q, K, V and gives O, STATS and RNG_DUMP");
  node.inputs.resize(slot::SDPA_INPUT_COUNT);
  for (size_t i = 0; i < 3; ++i)
    if (auto s = check_input(node, node.inputs[i].get(), kSlot[i]); !s.ok()) return s;
  const TensorAttr &q = *node.inputs[slot::SDPA_Q], &k = *node.inputs[slot::SDPA_K], &v = *node.inputs[slot::SDPA_V];
  const auto& qd = q.get_dim();
  const bool paged = node.inputs[slot::SDPA_K_TABLE] || node.inputs[slot::SDPA_V_TABLE];
  if (auto s = check_qkv_shapes(node, q, k, v, paged); !s.ok()) return s;
  if (auto s = check_qkv_types(node, q, k, v); !s.ok()) return s;
  const DataType compute = resolve_compute_type(attr.get_compute_data_type(), defaults);
  if (compute != DataType::FLOAT)
    return node_error(ErrorCode::INVALID_DATA_TYPE, node, nullptr,
                      "compute data type " + std::string(to_string(compute)) + " is not supported (sdpa computes in FLOAT)");
  if (auto s = check_masks(attr, node, qd[0], slot::SDPA_SEQ_Q); !s.ok()) return s;
  if (auto s = sdpa_checks::check_paged(node, k, input_at(node, slot::SDPA_K_TABLE), input_at(node, slot::SDPA_V_TABLE),
                                        attr.get_paged_attention_max_seq_len_kv(), attr.get_padding_mask(), qd[0]);
      !s.ok())
    return s;
  const sdpa_checks::Sizes sizes{qd[0], qd[1], qd[2],
                                 paged ? *attr.get_paged_attention_max_seq_len_kv() : k.get_dim()[2]};
  if (auto s = check_score_inputs(attr, node, sizes, slot::SDPA_BIAS, slot::SDPA_SEED); !s.ok()) return s;
  const std::vector<int64_t> o_dims{qd[0], qd[1], qd[2], v.get_dim()[3]};
  if (auto s = fill_output(node, *node.outputs[0], o_dims, q.get_stride(), defaults, q.get_data_type()); !s.ok())
    return s;
  if (auto s = fill_stats(attr, node, *node.outputs[1], {qd[0], qd[1], qd[2], 1}, defaults); !s.ok()) return s;
  if (auto s = fill_rng_dump(attr, node, *node.outputs[2], sizes, defaults); !s.ok()) return s;
  return check_forward_ragged(attr, node);
}

// ---- sdpa_backward

bool is_sdpa_backward_type(DataType t) {
  return t == DataType::FLOAT || t == DataType::HALF || t == DataType::BFLOAT16;
}

// `t` has dims `want` and the data type `type`; `what` says where the rule comes from.
Status check_like(const NodeSpec& n, const TensorAttr& t, const std::vector<int64_t>& want, DataType type,
                  const std::string& what) {
  if (t.get_dim() != want)
    return node_error(ErrorCode::SHAPE_DEDUCTION_FAILED, n, &t,
                      "dims " + dims_to_string(t.get_dim()) + " must be " + dims_to_string(want) + " (" + what + ")");
  if (t.get_data_type() != type)
    return node_error(ErrorCode::INVALID_DATA_TYPE, n, &t,
                      "data type " + std::string(to_string(t.get_data_type())) + " must be " +
                          std::string(to_string(type)) + " (" + what + ")");
  return {};
}

// O and dO are [b,h,sq,dv] of Q's type; STATS is the forward's [b,h,sq,1] FLOAT logsumexp.
Status check_backward_inputs(const NodeSpec& n, const TensorAttr& q, const TensorAttr& v) {
  const auto& qd = q.get_dim();
  const std::vector<int64_t> o_dims{qd[0], qd[1], qd[2], v.get_dim()[3]};
  const DataType type = q.get_data_type();
  if (!is_sdpa_backward_type(type))
    return node_error(ErrorCode::INVALID_DATA_TYPE, n, &q,
                      "data type " + std::string(to_string(type)) +
                          " is not supported (sdpa_backward takes HALF, BFLOAT16 or FLOAT)");
  if (auto s = check_like(n, *n.inputs[slot::SB_O], o_dims, type, "O is the forward's output [b,h,sq,dv] of Q's type");
      !s.ok())
    return s;
  if (auto s = check_like(n, *n.inputs[slot::SB_DO], o_dims, type, "dO is O's gradient, of O's dims and type"); !s.ok())
    return s;
  return check_like(n, *n.inputs[slot::SB_STATS], {qd[0], qd[1], qd[2], 1}, DataType::FLOAT,
                    "STATS is the forward's logsumexp [b,h,sq,1]");
}

// dBIAS: the bias's dims, HALF, BFLOAT16 or FLOAT; an output only with a bias.
Status fill_dbias(const NodeSpec& n, TensorAttr& dbias, const TensorAttr* bias, const GraphDefaults& defaults) {
  if (!bias) {
    if (dbias.get_is_output())
      return node_error(ErrorCode::INVALID_VALUE, n, &dbias, "is the dBias output but the node has no bias (set_bias)");
    return fill_placeholder(n, dbias, defaults);
  }
  if (auto s = fill_output(n, dbias, bias->get_dim(), bias->get_stride(), defaults, bias->get_data_type()); !s.ok())
    return s;
  const DataType t = dbias.get_data_type();
  if (t != DataType::HALF && t != DataType::BFLOAT16 && t != DataType::FLOAT)
    return node_error(ErrorCode::INVALID_DATA_TYPE, n, &dbias,
                      "data type " + std::string(to_string(t)) + " is not supported (dBias is HALF, BFLOAT16 or FLOAT)");
  return {};
}

Status check_backward_ragged(const SdpaBackwardAttr& attr, const NodeSpec& node) {
  const int64_t b = node.inputs[slot::SB_Q]->get_dim()[0];
  const std::pair<size_t, const TensorAttr*> owners[] = {
      {slot::SB_Q_RAGGED, node.inputs[slot::SB_Q].get()},  {slot::SB_K_RAGGED, node.inputs[slot::SB_K].get()},
      {slot::SB_V_RAGGED, node.inputs[slot::SB_V].get()},  {slot::SB_O_RAGGED, node.inputs[slot::SB_O].get()},
      {slot::SB_DO_RAGGED, node.inputs[slot::SB_DO].get()}, {slot::SB_DQ_RAGGED, node.outputs[0].get()},
      {slot::SB_DK_RAGGED, node.outputs[1].get()},         {slot::SB_DV_RAGGED, node.outputs[2].get()}};
  for (auto [k, owner] : owners)
    if (auto s = sdpa_checks::check_ragged(node, *owner, input_at(node, k), b, attr.get_padding_mask()); !s.ok())
      return s;
  return check_ragged_owners(node, {input_at(node, slot::SB_STATS), input_at(node, slot::SB_SEQ_Q),
                                    input_at(node, slot::SB_SEQ_KV), input_at(node, slot::SB_BIAS),
                                    input_at(node, slot::SB_SEED), input_at(node, slot::SB_OFFSET),
                                    node.outputs[3].get()});
}

Status infer_backward(const SdpaBackwardAttr& attr, NodeSpec& node, const GraphDefaults& defaults) {
  static const char* kSlot[] = {"Q", "K", "V", "O", "DO", "STATS"};
  if (node.inputs.size() < 6 || node.outputs.size() != 4)
    return node_error(ErrorCode::INVALID_GRAPH, node, nullptr,
                      "sdpa_backward takes Q, K, V, O, dO and STATS and gives dQ, dK, dV and dBIAS");
  node.inputs.resize(slot::SB_INPUT_COUNT);
  for (size_t i = 0; i < 6; ++i)
    if (auto s = check_input(node, node.inputs[i].get(), kSlot[i]); !s.ok()) return s;
  const TensorAttr &q = *node.inputs[slot::SB_Q], &k = *node.inputs[slot::SB_K], &v = *node.inputs[slot::SB_V];
  if (auto s = check_qkv_shapes(node, q, k, v); !s.ok()) return s;
  if (auto s = check_qkv_types(node, q, k, v); !s.ok()) return s;
  if (auto s = check_backward_inputs(node, q, v); !s.ok()) return s;
  const DataType compute = resolve_compute_type(attr.get_compute_data_type(), defaults);
  if (compute != DataType::FLOAT)
    return node_error(ErrorCode::INVALID_DATA_TYPE, node, nullptr,
                      "compute data type " + std::string(to_string(compute)) +
                          " is not supported (sdpa_backward computes in FLOAT)");
  const auto& qd = q.get_dim();
  if (auto s = check_masks(attr, node, qd[0], slot::SB_SEQ_Q); !s.ok()) return s;
  if (auto s = check_score_inputs(attr, node, {qd[0], qd[1], qd[2], k.get_dim()[2]}, slot::SB_BIAS, slot::SB_SEED);
      !s.ok())
    return s;
  for (size_t i = 0; i < 3; ++i) {
    const TensorAttr& like = *node.inputs[i];  // dQ, dK, dV take the dims and layout of Q, K, V
    if (auto s = fill_output(node, *node.outputs[i], like.get_dim(), like.get_stride(), defaults, q.get_data_type());
        !s.ok())
      return s;
    if (!is_sdpa_backward_type(node.outputs[i]->get_data_type()))
      return node_error(ErrorCode::INVALID_DATA_TYPE, node, node.outputs[i].get(),
                        "data type " + std::string(to_string(node.outputs[i]->get_data_type())) +
                            " is not supported (gradients are HALF, BFLOAT16 or FLOAT)");
  }
  if (auto s = fill_dbias(node, *node.outputs[3], input_at(node, slot::SB_BIAS), defaults); !s.ok()) return s;
  return check_backward_ragged(attr, node);
}

// Fields that differ from their defaults; tensors (seq_len, bias, seed, tables, ragged offsets) are
// node inputs.
template <class Attr>
void write_masks(const Attr& a, nlohmann::json& j) {
  if (a.get_attn_scale()) j["attn_scale"] = json_number(*a.get_attn_scale());
  if (a.get_causal_mask()) j["causal_mask"] = true;
  if (a.get_diagonal_alignment() != DiagonalAlignment::TOP_LEFT)
    j["diagonal_alignment"] = std::string(to_string(a.get_diagonal_alignment()));
  if (a.get_diagonal_band_left_bound()) j["diagonal_band_left_bound"] = *a.get_diagonal_band_left_bound();
  // A causal mask implies a right bound of 0; only a different bound needs saying.
  auto right = a.get_diagonal_band_right_bound();
  if (right && !(a.get_causal_mask() && *right == 0)) j["diagonal_band_right_bound"] = *right;
  if (a.get_padding_mask()) j["padding_mask"] = true;
  if (a.get_alibi_mask()) j["alibi_mask"] = true;
  if (a.get_dropout_probability()) j["dropout_probability"] = json_number(*a.get_dropout_probability());
}

void write_sdpa(const SdpaAttr& a, nlohmann::json& j) {
  if (!a.get_is_inference()) j["is_inference"] = false;
  write_masks(a, j);
  if (a.get_paged_attention_max_seq_len_kv())
    j["paged_attention_max_seq_len_kv"] = *a.get_paged_attention_max_seq_len_kv();
}
void write_sdpa_backward(const SdpaBackwardAttr& a, nlohmann::json& j) {
  write_masks(a, j);
  if (a.get_deterministic_algorithm()) j["deterministic_algorithm"] = true;
}

template <class Attr>
void read_masks(JsonFields& f, Attr& a) {
  if (auto v = f.number("attn_scale")) a.set_attn_scale(*v);
  // set_causal_mask resets the alignment, so the alignment is read after it.
  if (auto v = f.boolean("causal_mask")) a.set_causal_mask(*v);
  if (auto v = f.enumeration("diagonal_alignment", &diagonal_alignment_from_string, "diagonal alignment"))
    a.set_diagonal_alignment(*v);
  if (auto v = f.integer("diagonal_band_left_bound")) a.set_diagonal_band_left_bound(*v);
  if (auto v = f.integer("diagonal_band_right_bound")) a.set_diagonal_band_right_bound(*v);
  if (auto v = f.boolean("padding_mask")) a.set_padding_mask(*v);
  if (auto v = f.boolean("alibi_mask")) a.set_alibi_mask(*v);
  // The seed and offset are node inputs, attached after the read.
  if (auto v = f.number("dropout_probability")) a.set_dropout(*v, nullptr, nullptr);
}

void read_sdpa(JsonFields& f, SdpaAttr& a) {
  if (auto v = f.boolean("is_inference")) a.set_is_inference(*v);
  read_masks(f, a);
  if (auto v = f.integer("paged_attention_max_seq_len_kv")) a.set_paged_attention_max_seq_len_kv(*v);
}
void read_sdpa_backward(JsonFields& f, SdpaBackwardAttr& a) {
  read_masks(f, a);
  if (auto v = f.boolean("deterministic_algorithm")) a.set_deterministic_algorithm(*v);
}

TensorPtr slot_or_null(const NodeSpec& n, size_t k) { return k < n.inputs.size() ? n.inputs[k] : nullptr; }
TensorPtr output_or_null(const NodeSpec& n, size_t k) {
  return k < n.outputs.size() && n.outputs[k] && n.outputs[k]->get_is_output() ? n.outputs[k] : nullptr;
}

// (ragged slot, tensor that carries it) pairs of each op.
using RaggedPairs = std::vector<std::pair<size_t, TensorPtr>>;
RaggedPairs sdpa_ragged_pairs(const NodeSpec& n) {
  auto in = [&](size_t k) { return slot_or_null(n, k); };
  return {{slot::SDPA_Q_RAGGED, in(slot::SDPA_Q)},        {slot::SDPA_K_RAGGED, in(slot::SDPA_K)},
          {slot::SDPA_V_RAGGED, in(slot::SDPA_V)},        {slot::SDPA_O_RAGGED, n.outputs.empty() ? nullptr : n.outputs[0]},
          {slot::SDPA_K_TABLE_RAGGED, in(slot::SDPA_K_TABLE)}, {slot::SDPA_V_TABLE_RAGGED, in(slot::SDPA_V_TABLE)}};
}
RaggedPairs sdpa_backward_ragged_pairs(const NodeSpec& n) {
  auto in = [&](size_t k) { return slot_or_null(n, k); };
  auto out = [&](size_t k) { return k < n.outputs.size() ? n.outputs[k] : nullptr; };
  return {{slot::SB_Q_RAGGED, in(slot::SB_Q)},  {slot::SB_K_RAGGED, in(slot::SB_K)},  {slot::SB_V_RAGGED, in(slot::SB_V)},
          {slot::SB_O_RAGGED, in(slot::SB_O)},  {slot::SB_DO_RAGGED, in(slot::SB_DO)}, {slot::SB_DQ_RAGGED, out(0)},
          {slot::SB_DK_RAGGED, out(1)},         {slot::SB_DV_RAGGED, out(2)}};
}

void collect_ragged(NodeSpec& n, size_t count, const RaggedPairs& pairs) {
  n.inputs.resize(count);
  for (const auto& [k, owner] : pairs) n.inputs[k] = owner ? owner->get_ragged_offset() : nullptr;
}
void attach_ragged(const RaggedPairs& pairs, const NodeSpec& n) {
  for (const auto& [k, owner] : pairs)
    if (owner && slot_or_null(n, k)) owner->set_ragged_offset(n.inputs[k]);
}

void collect_sdpa(NodeSpec& n) { collect_ragged(n, slot::SDPA_INPUT_COUNT, sdpa_ragged_pairs(n)); }
void collect_sdpa_backward(NodeSpec& n) { collect_ragged(n, slot::SB_INPUT_COUNT, sdpa_backward_ragged_pairs(n)); }

template <class Attr>
void attach_common(const NodeSpec& n, Attr& a, size_t seq_q, size_t bias, size_t seed) {
  a.set_seq_len_q(slot_or_null(n, seq_q));
  a.set_seq_len_kv(slot_or_null(n, seq_q + 1));
  a.set_bias(slot_or_null(n, bias));
  if (auto p = a.get_dropout_probability()) a.set_dropout(*p, slot_or_null(n, seed), slot_or_null(n, seed + 1));
}

void attach_sdpa(NodeSpec& n) {
  auto& a = std::get<SdpaAttr>(n.attr);
  attach_common(n, a, slot::SDPA_SEQ_Q, slot::SDPA_BIAS, slot::SDPA_SEED);
  a.set_paged_attention_k_table(slot_or_null(n, slot::SDPA_K_TABLE));
  a.set_paged_attention_v_table(slot_or_null(n, slot::SDPA_V_TABLE));
  a.set_rng_dump(output_or_null(n, 2));
  attach_ragged(sdpa_ragged_pairs(n), n);
}

void attach_sdpa_backward(NodeSpec& n) {
  auto& a = std::get<SdpaBackwardAttr>(n.attr);
  attach_common(n, a, slot::SB_SEQ_Q, slot::SB_BIAS, slot::SB_SEED);
  a.set_dbias(output_or_null(n, 3));
  attach_ragged(sdpa_backward_ragged_pairs(n), n);
}

// Multiply-adds per (query, key) pair: sdpa's S = Q K^T and O = P V; sdpa_backward's recomputed S,
// dP = dO V^T, dV = P^T dO, dQ = dS K and dK = dS^T Q. Masks are not counted.
double attention_flops(const ir::Graph& g, const ir::Node& n, int64_t d_gemms, int64_t dv_gemms) {
  const auto& q = g.tensor(n.inputs[0]).dims;
  const auto& k = g.tensor(n.inputs[1]).dims;
  const auto& v = g.tensor(n.inputs[2]).dims;
  int64_t keys = k[2];  // paged K holds blocks: the keys per batch are max_seq_len_kv
  if (const auto* a = std::get_if<SdpaAttr>(&n.attr); a && a->get_paged_attention_max_seq_len_kv())
    keys = *a->get_paged_attention_max_seq_len_kv();
  const double scores = static_cast<double>(q[0]) * static_cast<double>(q[1]) * static_cast<double>(q[2]) *
                        static_cast<double>(keys);
  return 2.0 * scores * static_cast<double>(d_gemms * q[3] + dv_gemms * v[3]);
}
double sdpa_backward_flops(const ir::Graph& g, const ir::Node& n) { return attention_flops(g, n, 3, 2); }

double sdpa_flops(const ir::Graph& g, const ir::Node& n) { return attention_flops(g, n, 1, 1); }

}  // namespace

const OpTraits& traits(OpTag<SdpaAttr>) {
  static const auto t = typed<SdpaAttr, infer, write_sdpa, read_sdpa>(
      {.name = "sdpa",
       .inputs = {"Q", "K", "V", "SEQ_LEN_Q", "SEQ_LEN_KV", "BIAS", "SEED", "OFFSET", "PAGE_TABLE_K", "PAGE_TABLE_V",
                  "Q_RAGGED_OFFSET", "K_RAGGED_OFFSET", "V_RAGGED_OFFSET", "O_RAGGED_OFFSET",
                  "PAGE_TABLE_K_RAGGED_OFFSET", "PAGE_TABLE_V_RAGGED_OFFSET"},
       .required_inputs = 3, .outputs = {"O", "STATS", "RNG_DUMP"}, .fusion_pattern = "sdpa",
       .attach_inputs = attach_sdpa, .collect_inputs = collect_sdpa, .flops = sdpa_flops});
  return t;
}

const OpTraits& traits(OpTag<SdpaBackwardAttr>) {
  static const auto t = typed<SdpaBackwardAttr, infer_backward, write_sdpa_backward, read_sdpa_backward>(
      {.name = "sdpa_backward",
       .inputs = {"Q", "K", "V", "O", "DO", "STATS", "SEQ_LEN_Q", "SEQ_LEN_KV", "BIAS", "SEED", "OFFSET",
                  "Q_RAGGED_OFFSET", "K_RAGGED_OFFSET", "V_RAGGED_OFFSET", "O_RAGGED_OFFSET", "DO_RAGGED_OFFSET",
                  "DQ_RAGGED_OFFSET", "DK_RAGGED_OFFSET", "DV_RAGGED_OFFSET"},
       .required_inputs = 6, .outputs = {"DQ", "DK", "DV", "DBIAS"}, .attach_inputs = attach_sdpa_backward,
       .collect_inputs = collect_sdpa_backward, .flops = sdpa_backward_flops});
  return t;
}

}  // namespace dnngraph
