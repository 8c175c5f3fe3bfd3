// Pointwise: 1-3 inputs of equal rank, numpy-style broadcasting of size-1 dims.
#include "graph/families.hpp"
#include "graph/infer_util.hpp"

namespace dnngraph {

namespace {
bool is_comparison_or_logic(PointwiseMode m) { return m >= PointwiseMode::CMP_EQ && m <= PointwiseMode::LOGICAL_NOT; }
}  // namespace

Status infer(const PointwiseAttr& attr, NodeSpec& node, const GraphDefaults& defaults) {
  const PointwiseMode mode = attr.get_mode();
  if (mode == PointwiseMode::NOT_SET)
    return node_error(ErrorCode::ATTRIBUTE_NOT_SET, node, nullptr, "pointwise mode is not set");
  if (to_string(mode) == "UNKNOWN")
    return node_error(ErrorCode::INVALID_VALUE, node, nullptr,
                      "unknown pointwise mode " + std::to_string(static_cast<int>(mode)));
  const size_t want = static_cast<size_t>(arity(mode));
  if (node.inputs.size() != want)
    return node_error(ErrorCode::INVALID_VALUE, node, nullptr,
                      std::string(to_string(mode)) + " takes " + std::to_string(want) + " inputs, got " +
                          std::to_string(node.inputs.size()));
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
  const DataType fallback = is_comparison_or_logic(mode) ? DataType::BOOLEAN : node.inputs[0]->get_data_type();
  return fill_output(node, *node.outputs[0], dims, widest ? widest->get_stride() : std::vector<int64_t>{}, defaults,
                     fallback);
}

}  // namespace dnngraph
