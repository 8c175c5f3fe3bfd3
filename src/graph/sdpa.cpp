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
#include <cmath>

#include <nlohmann/json.hpp>

#include "graph/families.hpp"
#include "graph/infer_util.hpp"
#include "graph/ir.hpp"
#include "graph/json_fields.hpp"

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

Status check_qkv_shapes(const NodeSpec& n, const TensorAttr& q, const TensorAttr& k, const TensorAttr& v) {
  for (const TensorAttr* t : {&q, &k, &v})
    if (t->get_dim().size() != 4)
      return node_error(ErrorCode::SHAPE_DEDUCTION_FAILED, n, t,
                        "rank " + std::to_string(t->get_dim().size()) + " is not 4 (sdpa tensors are [b,h,s,d])");
  const auto &qd = q.get_dim(), &kd = k.get_dim(), &vd = v.get_dim();
  for (const TensorAttr* t : {&k, &v})
    if (t->get_dim()[0] != qd[0])
      return node_error(ErrorCode::SHAPE_DEDUCTION_FAILED, n, t,
                        "batch " + std::to_string(t->get_dim()[0]) + " differs from Q's batch " + std::to_string(qd[0]));
  if (vd[1] != kd[1])
    return node_error(ErrorCode::SHAPE_DEDUCTION_FAILED, n, &v,
                      "heads " + std::to_string(vd[1]) + " differ from K's heads " + std::to_string(kd[1]));
  if (qd[1] % kd[1] != 0)
    return node_error(ErrorCode::SHAPE_DEDUCTION_FAILED, n, &k,
                      "heads " + std::to_string(kd[1]) + " do not divide Q's heads " + std::to_string(qd[1]) +
                          " (grouped-query attention needs h % hk == 0)");
  if (kd[3] != qd[3])
    return node_error(ErrorCode::SHAPE_DEDUCTION_FAILED, n, &k,
                      "head dim " + std::to_string(kd[3]) + " differs from Q's head dim " + std::to_string(qd[3]));
  if (vd[2] != kd[2])
    return node_error(ErrorCode::SHAPE_DEDUCTION_FAILED, n, &v,
                      "sequence length " + std::to_string(vd[2]) + " differs from K's " + std::to_string(kd[2]));
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

Status infer(const SdpaAttr& attr, NodeSpec& node, const GraphDefaults& defaults) {
  static const char* kSlot[] = {"Q", "K", "V"};
  if (node.inputs.size() < 3 || node.outputs.size() != 2)
    return node_error(ErrorCode::INVALID_GRAPH, node, nullptr, "sdpa takes Q, K, V and gives O and STATS");
  for (size_t i = 0; i < 3; ++i)
    if (auto s = check_input(node, node.inputs[i].get(), kSlot[i]); !s.ok()) return s;
  const TensorAttr &q = *node.inputs[slot::SDPA_Q], &k = *node.inputs[slot::SDPA_K], &v = *node.inputs[slot::SDPA_V];
  if (auto s = check_qkv_shapes(node, q, k, v); !s.ok()) return s;
  if (auto s = check_qkv_types(node, q, k, v); !s.ok()) return s;
  const DataType compute = resolve_compute_type(attr.get_compute_data_type(), defaults);
  if (compute != DataType::FLOAT)
    return node_error(ErrorCode::INVALID_DATA_TYPE, node, nullptr,
                      "compute data type " + std::string(to_string(compute)) + " is not supported (sdpa computes in FLOAT)");
  if (auto s = check_masks(attr, node, q.get_dim()[0], slot::SDPA_SEQ_Q); !s.ok()) return s;
  const auto& qd = q.get_dim();
  const std::vector<int64_t> o_dims{qd[0], qd[1], qd[2], v.get_dim()[3]};
  if (auto s = fill_output(node, *node.outputs[0], o_dims, q.get_stride(), defaults, q.get_data_type()); !s.ok())
    return s;
  return fill_stats(attr, node, *node.outputs[1], {qd[0], qd[1], qd[2], 1}, defaults);
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

Status infer_backward(const SdpaBackwardAttr& attr, NodeSpec& node, const GraphDefaults& defaults) {
  static const char* kSlot[] = {"Q", "K", "V", "O", "DO", "STATS"};
  if (node.inputs.size() < 6 || node.outputs.size() != 3)
    return node_error(ErrorCode::INVALID_GRAPH, node, nullptr,
                      "sdpa_backward takes Q, K, V, O, dO and STATS and gives dQ, dK and dV");
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
  if (auto s = check_masks(attr, node, q.get_dim()[0], slot::SB_SEQ_Q); !s.ok()) return s;
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
  return {};
}

// Fields that differ from their defaults; seq_len_q and seq_len_kv are node inputs.
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
}

void write_sdpa(const SdpaAttr& a, nlohmann::json& j) {
  if (!a.get_is_inference()) j["is_inference"] = false;
  write_masks(a, j);
}
void write_sdpa_backward(const SdpaBackwardAttr& a, nlohmann::json& j) { write_masks(a, j); }

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
}

void read_sdpa(JsonFields& f, SdpaAttr& a) {
  if (auto v = f.boolean("is_inference")) a.set_is_inference(*v);
  read_masks(f, a);
}
void read_sdpa_backward(JsonFields& f, SdpaBackwardAttr& a) { read_masks(f, a); }

void attach_sdpa(NodeSpec& n) {
  auto in = [&](size_t k) { return k < n.inputs.size() ? n.inputs[k] : nullptr; };
  auto& a = std::get<SdpaAttr>(n.attr);
  a.set_seq_len_q(in(slot::SDPA_SEQ_Q));
  a.set_seq_len_kv(in(slot::SDPA_SEQ_KV));
}

void attach_sdpa_backward(NodeSpec& n) {
  auto in = [&](size_t k) { return k < n.inputs.size() ? n.inputs[k] : nullptr; };
  auto& a = std::get<SdpaBackwardAttr>(n.attr);
  a.set_seq_len_q(in(slot::SB_SEQ_Q));
  a.set_seq_len_kv(in(slot::SB_SEQ_KV));
}

// Multiply-adds per (query, key) pair: sdpa's S = Q K^T and O = P V; sdpa_backward's recomputed S,
// dP = dO V^T, dV = P^T dO, dQ = dS K and dK = dS^T Q. Masks are not counted.
double attention_flops(const ir::Graph& g, const ir::Node& n, int64_t d_gemms, int64_t dv_gemms) {
  const auto& q = g.tensor(n.inputs[0]).dims;
  const auto& k = g.tensor(n.inputs[1]).dims;
  const auto& v = g.tensor(n.inputs[2]).dims;
  const double scores = static_cast<double>(q[0]) * static_cast<double>(q[1]) * static_cast<double>(q[2]) *
                        static_cast<double>(k[2]);
  return 2.0 * scores * static_cast<double>(d_gemms * q[3] + dv_gemms * v[3]);
}
double sdpa_backward_flops(const ir::Graph& g, const ir::Node& n) { return attention_flops(g, n, 3, 2); }

double sdpa_flops(const ir::Graph& g, const ir::Node& n) { return attention_flops(g, n, 1, 1); }

}  // namespace

const OpTraits& traits(OpTag<SdpaAttr>) {
  static const auto t = typed<SdpaAttr, infer, write_sdpa, read_sdpa>(
      {.name = "sdpa", .inputs = {"Q", "K", "V", "SEQ_LEN_Q", "SEQ_LEN_KV"}, .required_inputs = 3,
       .outputs = {"O", "STATS"}, .fusion_pattern = "sdpa", .attach_inputs = attach_sdpa, .flops = sdpa_flops});
  return t;
}

const OpTraits& traits(OpTag<SdpaBackwardAttr>) {
  static const auto t = typed<SdpaBackwardAttr, infer_backward, write_sdpa_backward, read_sdpa_backward>(
      {.name = "sdpa_backward", .inputs = {"Q", "K", "V", "O", "DO", "STATS", "SEQ_LEN_Q", "SEQ_LEN_KV"},
       .required_inputs = 6, .outputs = {"DQ", "DK", "DV"}, .attach_inputs = attach_sdpa_backward,
       .flops = sdpa_backward_flops});
  return t;
}

}  // namespace dnngraph
