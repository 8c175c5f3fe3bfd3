// Normalizations: batchnorm_inference (per channel), layernorm and rmsnorm (over every dim but
// the first). Parameters have exact dims; epsilon is a pass-by-value scalar.
#include <cctype>

#include <nlohmann/json.hpp>

#include "graph/families.hpp"
#include "graph/infer_util.hpp"
#include "graph/json_fields.hpp"
#include "graph/norm_checks.hpp"

namespace dnngraph {
namespace norm_checks {

Status check_param(const NodeSpec& node, const TensorAttr* t, const char* slot_name,
                   const std::vector<int64_t>& want, const char* why) {
  if (auto s = check_input(node, t, slot_name); !s.ok()) return s;
  if (t->get_dim() != want)
    return node_error(ErrorCode::SHAPE_DEDUCTION_FAILED, node, t,
                      std::string(slot_name) + " dims " + dims_to_string(t->get_dim()) + " must be " +
                          dims_to_string(want) + " (" + why + ")");
  return {};
}

Status check_x(const NodeSpec& node, const TensorAttr* x, const char* shape_name) {
  if (auto s = check_input(node, x, "X"); !s.ok()) return s;
  if (x->get_dim().size() < 2)
    return node_error(ErrorCode::SHAPE_DEDUCTION_FAILED, node, x,
                      "rank " + std::to_string(x->get_dim().size()) + " is below 2 (X's dims are " + shape_name + ")");
  return {};
}

Status check_scalar(const NodeSpec& node, const TensorAttr* t, const char* what, const char* setter) {
  const std::string w = what;
  if (!t)
    return node_error(ErrorCode::ATTRIBUTE_NOT_SET, node, nullptr, w + " is not set (call " + setter + ")");
  std::string slot = w;
  for (char& c : slot) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  if (auto s = check_input(node, t, slot.c_str()); !s.ok()) return s;
  if (!t->get_is_pass_by_value())
    return node_error(ErrorCode::INVALID_VALUE, node, t, w + " must be a pass-by-value scalar (set_value)");
  if (t->get_volume() != 1)
    return node_error(ErrorCode::SHAPE_DEDUCTION_FAILED, node, t,
                      w + " dims " + dims_to_string(t->get_dim()) + " must hold exactly one element");
  return {};
}

}  // namespace norm_checks

namespace {

using norm_checks::check_epsilon;
using norm_checks::check_param;
using norm_checks::check_x;

// Statistics outputs (mean, inverse variance or RMS): one value per row, dims (N, 1, ..., 1). In
// the INFERENCE phase they are not computed for the user, so they must stay virtual; they still
// get dims so that the IR is complete.
Status fill_stat(const NodeSpec& node, TensorAttr& stat, const std::vector<int64_t>& x_dims, NormFwdPhase phase,
                 const GraphDefaults& defaults) {
  if (phase == NormFwdPhase::INFERENCE && stat.get_is_output())
    return node_error(ErrorCode::INVALID_VALUE, node, &stat,
                      "is marked as an output, but the INFERENCE phase does not produce it "
                      "(set_forward_phase(NormFwdPhase::TRAINING) to get it)");
  std::vector<int64_t> dims(x_dims.size(), 1);
  dims[0] = x_dims[0];
  return fill_output(node, stat, dims, {}, defaults, DataType::FLOAT);
}

std::vector<int64_t> row_param_dims(const std::vector<int64_t>& x_dims) {
  std::vector<int64_t> d = x_dims;
  d[0] = 1;
  return d;
}

Status infer(const BatchnormInferenceAttr&, NodeSpec& node, const GraphDefaults& defaults) {
  if (node.inputs.size() != 5)
    return node_error(ErrorCode::INVALID_VALUE, node, nullptr,
                      "batchnorm_inference takes 5 inputs, got " + std::to_string(node.inputs.size()));
  const TensorAttr* x = node.inputs[slot::BN_X].get();
  if (auto s = check_x(node, x, "N, C, ..."); !s.ok()) return s;
  std::vector<int64_t> per_channel(x->get_dim().size(), 1);
  per_channel[1] = x->get_dim()[1];
  static const char* kNames[] = {"X", "MEAN", "INV_VARIANCE", "SCALE", "BIAS"};
  for (int i = slot::BN_MEAN; i <= slot::BN_BIAS; ++i)
    if (auto s = check_param(node, node.inputs[static_cast<size_t>(i)].get(), kNames[i], per_channel,
                             "one value per channel: 1, C, 1, ...");
        !s.ok())
      return s;
  return fill_output(node, *node.outputs[0], x->get_dim(), x->get_stride(), defaults, x->get_data_type());
}

// Layernorm and rmsnorm: X (N, normalized dims...), SCALE and BIAS (optional for rmsnorm) with X's
// dims but dim 0 = 1, a scalar epsilon; Y like X, then one statistic per row for each of `stats`.
Status infer_row_norm(const NodeSpec& node, NormFwdPhase phase, bool bias_optional, const GraphDefaults& defaults) {
  if (auto s = check_mode(node, phase, "forward phase"); !s.ok()) return s;
  if (node.inputs.size() != 4)
    return node_error(ErrorCode::INVALID_VALUE, node, nullptr,
                      "takes 4 input slots (X, SCALE, BIAS, EPSILON), got " + std::to_string(node.inputs.size()));
  const TensorAttr* x = node.inputs[slot::LN_X].get();
  if (auto s = check_x(node, x, "N, normalized dims..."); !s.ok()) return s;
  const auto param = row_param_dims(x->get_dim());
  const std::string why =
      "X's dims with dim 0 = 1: " + std::string(op_name(node.attr)) + " normalizes over every dim but the first";
  if (auto s = check_param(node, node.inputs[slot::LN_SCALE].get(), "SCALE", param, why.c_str()); !s.ok()) return s;
  if (const TensorAttr* bias = node.inputs[slot::LN_BIAS].get(); bias || !bias_optional)
    if (auto s = check_param(node, bias, "BIAS", param, why.c_str()); !s.ok()) return s;
  if (auto s = check_epsilon(node, node.inputs[slot::LN_EPS].get()); !s.ok()) return s;
  if (auto s = fill_output(node, *node.outputs[0], x->get_dim(), x->get_stride(), defaults, x->get_data_type());
      !s.ok())
    return s;
  for (size_t i = 1; i < node.outputs.size(); ++i)
    if (auto s = fill_stat(node, *node.outputs[i], x->get_dim(), phase, defaults); !s.ok()) return s;
  return {};
}

Status infer(const LayernormAttr& attr, NodeSpec& node, const GraphDefaults& defaults) {
  return infer_row_norm(node, attr.get_forward_phase(), false, defaults);
}

Status infer(const RmsnormAttr& attr, NodeSpec& node, const GraphDefaults& defaults) {
  return infer_row_norm(node, attr.get_forward_phase(), true, defaults);
}

// ---- JSON fields: the phase, when it is not INFERENCE; epsilon and bias are node inputs

template <class A>
void write_norm(const A& a, nlohmann::json& j) {
  if (a.get_forward_phase() != NormFwdPhase::INFERENCE) j["forward_phase"] = std::string(to_string(a.get_forward_phase()));
}

template <class A>
void read_norm(JsonFields& f, A& a) {
  if (auto p = f.enumeration("forward_phase", &norm_fwd_phase_from_string, "norm forward phase"))
    a.set_forward_phase(*p);
}

TensorPtr input_at(const NodeSpec& n, size_t k) { return k < n.inputs.size() ? n.inputs[k] : nullptr; }

void attach_layernorm(NodeSpec& n) {
  if (auto eps = input_at(n, slot::LN_EPS)) std::get<LayernormAttr>(n.attr).set_epsilon(eps);
}

void attach_rmsnorm(NodeSpec& n) {
  auto& a = std::get<RmsnormAttr>(n.attr);
  if (auto eps = input_at(n, slot::LN_EPS)) a.set_epsilon(eps);
  a.set_bias(input_at(n, slot::LN_BIAS));
}


// Layernorm and rmsnorm: X, SCALE, optional BIAS, EPSILON; Y and their statistics.
template <class A, Status (*Infer)(const A&, NodeSpec&, const GraphDefaults&)>
OpTraits row_norm_traits(std::string_view name, std::vector<std::string_view> outputs, void (*attach)(NodeSpec&)) {
  return typed<A, Infer, write_norm<A>, read_norm<A>>(
      {.name = name, .inputs = {"X", "SCALE", "BIAS", "EPSILON"}, .required_inputs = 2, .outputs = std::move(outputs),
       .fusion_pattern = "norm_epilogue", .attach_inputs = attach, .flops = elementwise_flops});
}

}  // namespace

const OpTraits& traits(OpTag<BatchnormInferenceAttr>) {
  static const auto t = typed<BatchnormInferenceAttr, infer>(
      {.name = "batchnorm_inference", .inputs = {"X", "MEAN", "INV_VARIANCE", "SCALE", "BIAS"}, .required_inputs = 5,
       .outputs = {"Y"}, .fusion_pattern = "norm_epilogue", .flops = elementwise_flops});
  return t;
}

const OpTraits& traits(OpTag<LayernormAttr>) {
  static const auto t =
      row_norm_traits<LayernormAttr, infer>("layernorm", {"Y", "MEAN", "INV_VARIANCE"}, attach_layernorm);
  return t;
}

const OpTraits& traits(OpTag<RmsnormAttr>) {
  static const auto t = row_norm_traits<RmsnormAttr, infer>("rmsnorm", {"Y", "INV_RMS"}, attach_rmsnorm);
  return t;
}

}  // namespace dnngraph
