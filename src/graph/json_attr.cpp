// JSON encoding of op attributes (docs/graph-json.md). Rules: enums by name; arrays always written;
// scalar fields left out at their default; optional fields left out when unset. Names are not part
// of an attribute's JSON (the graph writer puts the node's name beside it), so the fingerprint
// ignores them. Tensor-valued attributes (epsilon, seq_len_q, ...) are node inputs, not fields.
#include "graph/json_attr.hpp"

#include <utility>

#include "graph/json_fields.hpp"

namespace dnngraph {
namespace {

using json = nlohmann::json;

template <class E>
json name_of(E e) {
  return std::string(to_string(e));
}

template <class D>
void put_common(json& j, const OpAttrBase<D>& a) {
  if (a.get_compute_data_type() != DataType::NOT_SET) j["compute_data_type"] = name_of(a.get_compute_data_type());
}

template <class D>
void put(json& j, const ConvAttrBase<D>& a) {
  j["pre_padding"] = a.get_pre_padding();
  j["post_padding"] = a.get_post_padding();
  j["stride"] = a.get_stride();
  j["dilation"] = a.get_dilation();
}

void put(json&, const MatmulAttr&) {}
void put(json&, const BatchnormInferenceAttr&) {}

void put(json& j, const PointwiseAttr& a) {
  const PointwiseAttr d;
  j["mode"] = name_of(a.get_mode());
  if (a.get_relu_lower_clip() != d.get_relu_lower_clip()) j["relu_lower_clip"] = json_number(a.get_relu_lower_clip());
  if (a.get_relu_upper_clip()) j["relu_upper_clip"] = json_number(*a.get_relu_upper_clip());
  if (a.get_relu_lower_clip_slope() != d.get_relu_lower_clip_slope())
    j["relu_lower_clip_slope"] = json_number(a.get_relu_lower_clip_slope());
  if (a.get_elu_alpha() != d.get_elu_alpha()) j["elu_alpha"] = json_number(a.get_elu_alpha());
  if (a.get_softplus_beta() != d.get_softplus_beta()) j["softplus_beta"] = json_number(a.get_softplus_beta());
  if (a.get_swish_beta() != d.get_swish_beta()) j["swish_beta"] = json_number(a.get_swish_beta());
  if (a.get_axis() != d.get_axis()) j["axis"] = a.get_axis();
}

void put(json& j, const ReductionAttr& a) { j["mode"] = name_of(a.get_mode()); }

template <class D>
void put(json& j, const NormAttrBase<D>& a) {
  if (a.get_forward_phase() != NormFwdPhase::INFERENCE) j["forward_phase"] = name_of(a.get_forward_phase());
}

void put(json& j, const ResampleAttr& a) {
  j["resampling_mode"] = name_of(a.get_resampling_mode());
  j["window"] = a.get_window();
  j["stride"] = a.get_stride();
  j["pre_padding"] = a.get_pre_padding();
  j["post_padding"] = a.get_post_padding();
  json scale = json::array();
  for (double s : a.get_scale()) scale.push_back(json_number(s));
  j["scale"] = std::move(scale);
}

void put(json& j, const SdpaAttr& a) {
  if (!a.get_is_inference()) j["is_inference"] = false;
  if (a.get_attn_scale()) j["attn_scale"] = json_number(*a.get_attn_scale());
  if (a.get_causal_mask()) j["causal_mask"] = true;
  if (a.get_diagonal_alignment() != DiagonalAlignment::TOP_LEFT)
    j["diagonal_alignment"] = name_of(a.get_diagonal_alignment());
  if (a.get_diagonal_band_left_bound()) j["diagonal_band_left_bound"] = *a.get_diagonal_band_left_bound();
  // A causal mask implies a right bound of 0; only a different bound needs saying.
  auto right = a.get_diagonal_band_right_bound();
  if (right && !(a.get_causal_mask() && *right == 0)) j["diagonal_band_right_bound"] = *right;
  if (a.get_padding_mask()) j["padding_mask"] = true;
}

void put(json& j, const ReshapeAttr& a) { j["dim"] = a.get_dim(); }
void put(json& j, const TransposeAttr& a) { j["permutation"] = a.get_permutation(); }

void put(json& j, const SliceAttr& a) {
  json s = json::array();
  for (const auto& [b, e] : a.get_slices()) s.push_back({b, e});
  j["slices"] = std::move(s);
}

void put(json& j, const ConcatenateAttr& a) {
  if (a.get_axis() != 0) j["axis"] = a.get_axis();
}

template <class D>
void read_common(JsonFields& f, OpAttrBase<D>& a) {
  if (auto t = f.enumeration("compute_data_type", &data_type_from_string, "data type")) a.set_compute_data_type(*t);
}

template <class D>
void read(JsonFields& f, ConvAttrBase<D>& a) {
  // "padding" sets both sides, as set_padding does; the writer always writes the two sides.
  if (auto v = f.integers("padding")) a.set_padding(*v);
  if (auto v = f.integers("pre_padding")) a.set_pre_padding(*v);
  if (auto v = f.integers("post_padding")) a.set_post_padding(*v);
  if (auto v = f.integers("stride")) a.set_stride(*v);
  if (auto v = f.integers("dilation")) a.set_dilation(*v);
}

void read(JsonFields&, MatmulAttr&) {}
void read(JsonFields&, BatchnormInferenceAttr&) {}

void read(JsonFields& f, PointwiseAttr& a) {
  if (auto m = f.enumeration("mode", &pointwise_mode_from_string, "pointwise mode")) a.set_mode(*m);
  if (auto v = f.number("relu_lower_clip")) a.set_relu_lower_clip(*v);
  if (auto v = f.number("relu_upper_clip")) a.set_relu_upper_clip(*v);
  if (auto v = f.number("relu_lower_clip_slope")) a.set_relu_lower_clip_slope(*v);
  if (auto v = f.number("elu_alpha")) a.set_elu_alpha(*v);
  if (auto v = f.number("softplus_beta")) a.set_softplus_beta(*v);
  if (auto v = f.number("swish_beta")) a.set_swish_beta(*v);
  if (auto v = f.integer("axis")) a.set_axis(*v);
}

void read(JsonFields& f, ReductionAttr& a) {
  if (auto m = f.enumeration("mode", &reduction_mode_from_string, "reduction mode")) a.set_mode(*m);
}

template <class D>
void read(JsonFields& f, NormAttrBase<D>& a) {
  if (auto p = f.enumeration("forward_phase", &norm_fwd_phase_from_string, "norm forward phase"))
    a.set_forward_phase(*p);
}

void read(JsonFields& f, ResampleAttr& a) {
  if (auto m = f.enumeration("resampling_mode", &resample_mode_from_string, "resampling mode")) a.set_resampling_mode(*m);
  if (auto v = f.integers("window")) a.set_window(*v);
  if (auto v = f.integers("stride")) a.set_stride(*v);
  if (auto v = f.integers("padding")) a.set_padding(*v);
  if (auto v = f.integers("pre_padding")) a.set_pre_padding(*v);
  if (auto v = f.integers("post_padding")) a.set_post_padding(*v);
  if (auto v = f.numbers("scale")) a.set_scale(*v);
}

void read(JsonFields& f, SdpaAttr& a) {
  if (auto v = f.boolean("is_inference")) a.set_is_inference(*v);
  if (auto v = f.number("attn_scale")) a.set_attn_scale(*v);
  // set_causal_mask resets the alignment, so the alignment is read after it.
  if (auto v = f.boolean("causal_mask")) a.set_causal_mask(*v);
  if (auto v = f.enumeration("diagonal_alignment", &diagonal_alignment_from_string, "diagonal alignment"))
    a.set_diagonal_alignment(*v);
  if (auto v = f.integer("diagonal_band_left_bound")) a.set_diagonal_band_left_bound(*v);
  if (auto v = f.integer("diagonal_band_right_bound")) a.set_diagonal_band_right_bound(*v);
  if (auto v = f.boolean("padding_mask")) a.set_padding_mask(*v);
}

void read(JsonFields& f, ReshapeAttr& a) {
  if (auto v = f.integers("dim")) a.set_dim(*v);
}
void read(JsonFields& f, TransposeAttr& a) {
  if (auto v = f.integers("permutation")) a.set_permutation(*v);
}
void read(JsonFields& f, SliceAttr& a) {
  if (auto v = f.pairs("slices")) a.set_slices(*v);
}
void read(JsonFields& f, ConcatenateAttr& a) {
  if (auto v = f.integer("axis")) a.set_axis(*v);
}

template <size_t... I>
OpAttr make_alternative(size_t index, std::index_sequence<I...>) {
  OpAttr out;
  ((index == I ? (out.emplace<I>(), 0) : 0), ...);
  return out;
}

}  // namespace

nlohmann::json attr_to_json(const OpAttr& attr) {
  json j = json::object();
  j["op"] = std::string(op_name(attr));
  std::visit(
      [&](const auto& a) {
        put_common(j, a);
        put(j, a);
      },
      attr);
  return j;
}

Status attr_from_json(const nlohmann::json& j, OpAttr& attr, const std::string& where) {
  if (!j.is_object()) return {ErrorCode::INVALID_VALUE, where + ": expected an object, but it is " + json_type_name(j)};
  auto op_it = j.find("op");
  if (op_it == j.end()) return {ErrorCode::ATTRIBUTE_NOT_SET, where + ".op: missing (every node names its op)"};
  if (!op_it->is_string())
    return {ErrorCode::INVALID_VALUE, where + ".op: expected a string, but it is " + json_type_name(*op_it)};
  const auto& op = op_it->get_ref<const std::string&>();
  constexpr size_t kOps = std::variant_size_v<OpAttr>;
  size_t index = kOps;
  for (size_t i = 0; i < kOps; ++i)
    if (op_name_of_index(i) == op) index = i;
  if (index == kOps) {
    std::string known;
    for (size_t i = 0; i < kOps; ++i) known += (i ? ", " : "") + std::string(op_name_of_index(i));
    return {ErrorCode::INVALID_VALUE, where + ".op: unknown op '" + op + "' (known: " + known + ")"};
  }
  OpAttr out = make_alternative(index, std::make_index_sequence<kOps>{});
  JsonFields fields(j, where);
  fields.mark_read("op");
  std::visit(
      [&](auto& a) {
        read_common(fields, a);
        read(fields, a);
      },
      out);
  if (auto s = fields.finish("op '" + op + "'"); !s.ok()) return s;
  attr = std::move(out);
  return {};
}

}  // namespace dnngraph
