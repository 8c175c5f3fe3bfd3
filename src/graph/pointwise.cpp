// Pointwise: 1-3 inputs of equal rank, numpy-style broadcasting of size-1 dims.
#include <nlohmann/json.hpp>

#include "graph/families.hpp"
#include "graph/infer_util.hpp"
#include "graph/json_fields.hpp"

namespace dnngraph {
namespace {

Status infer(const PointwiseAttr& attr, NodeSpec& node, const GraphDefaults& defaults) {
  const PointwiseMode mode = attr.get_mode();
  if (auto s = check_mode(node, mode, "pointwise mode"); !s.ok()) return s;
  const size_t want = static_cast<size_t>(arity(mode));
  if (auto s = check_input_count(node, want, std::string(to_string(mode))); !s.ok()) return s;
  static const char* kSlot[] = {"IN_0", "IN_1", "IN_2"};
  std::vector<int64_t> dims;
  const TensorAttr* widest = nullptr;  // the input whose dims equal the output's: its layout is kept
  // Pass-by-value scalars (alpha, g.tensor(0.125)) broadcast at any rank; other inputs need equal ranks.
  auto is_scalar = [](const TensorAttr* t) { return t->get_is_pass_by_value() && t->get_volume() == 1; };
  const TensorAttr* first = nullptr;
  for (size_t i = 0; i < want; ++i)
    if (auto s = check_input(node, node.inputs[i].get(), kSlot[i]); !s.ok()) return s;
  for (size_t i = 0; i < want; ++i) {
    const TensorAttr* t = node.inputs[i].get();
    if (is_scalar(t)) continue;
    if (!first) {
      first = t;
      dims = t->get_dim();
      continue;
    }
    std::vector<int64_t> out;
    if (t->get_dim().size() != dims.size())
      return node_error(ErrorCode::SHAPE_DEDUCTION_FAILED, node, t,
                        "rank " + std::to_string(t->get_dim().size()) + " differs from the first input's rank " +
                            std::to_string(dims.size()) + " (pointwise inputs must have equal rank)");
    if (!broadcast_dims(dims, t->get_dim(), out))
      return node_error(ErrorCode::SHAPE_DEDUCTION_FAILED, node, t,
                        "dims " + dims_to_string(t->get_dim()) + " do not broadcast with " + dims_to_string(dims));
    dims = out;
  }
  if (!first) dims = node.inputs[0]->get_dim();  // only scalars
  for (size_t i = 0; i < want && !widest; ++i)
    if (node.inputs[i]->get_dim() == dims) widest = node.inputs[i].get();
  if (mode == PointwiseMode::GEN_INDEX && (attr.get_axis() < 0 || attr.get_axis() >= static_cast<int64_t>(dims.size())))
    return node_error(ErrorCode::INVALID_VALUE, node, nullptr,
                      "GEN_INDEX axis " + std::to_string(attr.get_axis()) + " is outside rank " +
                          std::to_string(dims.size()));
  const DataType fallback = has_boolean_result(mode) ? DataType::BOOLEAN : node.inputs[0]->get_data_type();
  // The cuDNN frontend's rule: an output without strides takes those of the input of its dims as
  // they are, gaps included, so that an op on slices can write back into the sliced array (RoPE).
  TensorAttr& out = *node.outputs[0];
  if (widest && out.get_stride().empty() && (out.get_dim().empty() || out.get_dim() == dims) &&
      strides_are_non_overlapping(dims, widest->get_stride()))
    out.set_stride(widest->get_stride());
  return fill_output(node, *node.outputs[0], dims, widest ? widest->get_stride() : std::vector<int64_t>{}, defaults,
                     fallback);
}

// The parameters that are plain doubles (relu_upper_clip is optional, axis an integer).
struct NumberParam {
  const char* key;
  double (PointwiseAttr::*get)() const;
  PointwiseAttr& (PointwiseAttr::*set)(double);
};
constexpr NumberParam kNumberParams[] = {
    {"relu_lower_clip", &PointwiseAttr::get_relu_lower_clip, &PointwiseAttr::set_relu_lower_clip},
    {"relu_lower_clip_slope", &PointwiseAttr::get_relu_lower_clip_slope, &PointwiseAttr::set_relu_lower_clip_slope},
    {"elu_alpha", &PointwiseAttr::get_elu_alpha, &PointwiseAttr::set_elu_alpha},
    {"softplus_beta", &PointwiseAttr::get_softplus_beta, &PointwiseAttr::set_softplus_beta},
    {"swish_beta", &PointwiseAttr::get_swish_beta, &PointwiseAttr::set_swish_beta},
};

// The mode, and each parameter that differs from its default.
void write_pointwise(const PointwiseAttr& a, nlohmann::json& j) {
  const PointwiseAttr d;
  j["mode"] = std::string(to_string(a.get_mode()));
  for (const NumberParam& p : kNumberParams)
    if ((a.*p.get)() != (d.*p.get)()) j[p.key] = json_number((a.*p.get)());
  if (a.get_relu_upper_clip()) j["relu_upper_clip"] = json_number(*a.get_relu_upper_clip());
  if (a.get_axis() != d.get_axis()) j["axis"] = a.get_axis();
}

void read_pointwise(JsonFields& f, PointwiseAttr& a) {
  if (auto m = f.enumeration("mode", &pointwise_mode_from_string, "pointwise mode")) a.set_mode(*m);
  for (const NumberParam& p : kNumberParams)
    if (auto v = f.number(p.key)) (a.*p.set)(*v);
  if (auto v = f.number("relu_upper_clip")) a.set_relu_upper_clip(*v);
  if (auto v = f.integer("axis")) a.set_axis(*v);
}

}  // namespace

// Inputs IN_0.. IN_2, as many as the mode takes.
const OpTraits& traits(OpTag<PointwiseAttr>) {
  static const auto t = typed<PointwiseAttr, infer, write_pointwise, read_pointwise>(
      {.name = "pointwise", .inputs = {}, .required_inputs = 1, .outputs = {"OUT"}, .variadic = true, .max_inputs = 3,
       .fusion_pattern = "pointwise_chain", .flops = elementwise_flops});
  return t;
}

}  // namespace dnngraph
