// Reduction: X -> Y, where Y's dims pick the reduced axes (a 1 where X's dim is larger).
#include <nlohmann/json.hpp>

#include "graph/families.hpp"
#include "graph/infer_util.hpp"
#include "graph/ir.hpp"
#include "graph/json_fields.hpp"

namespace dnngraph {
namespace {

Status infer(const ReductionAttr& attr, NodeSpec& node, const GraphDefaults& defaults) {
  const ReductionMode mode = attr.get_mode();
  if (auto s = check_mode(node, mode, "reduction mode"); !s.ok()) return s;
  if (auto s = check_one_input(node); !s.ok()) return s;
  const TensorAttr* x = node.inputs[0].get();
  const auto& xd = x->get_dim();
  TensorAttr& y = *node.outputs[0];
  // Full reduction unless the user chose the kept axes through Y's dims.
  std::vector<int64_t> dims(xd.size(), 1);
  if (!y.get_dim().empty()) {
    const auto& yd = y.get_dim();
    if (yd.size() != xd.size())
      return node_error(ErrorCode::SHAPE_DEDUCTION_FAILED, node, &y,
                        "rank " + std::to_string(yd.size()) + " differs from X's rank " + std::to_string(xd.size()) +
                            " (a reduction keeps the rank; reduced dims are 1)");
    for (size_t i = 0; i < xd.size(); ++i) {
      if (yd[i] != xd[i] && yd[i] != 1)
        return node_error(ErrorCode::SHAPE_DEDUCTION_FAILED, node, &y,
                          "dim " + std::to_string(i) + " is " + std::to_string(yd[i]) + " but must be X's " +
                              std::to_string(xd[i]) + " (kept) or 1 (reduced); Y dims " + dims_to_string(yd) +
                              ", X dims " + dims_to_string(xd));
    }
    dims = yd;
  }
  return fill_output(node, y, dims, x->get_stride(), defaults, DataType::FLOAT);
}

// Genstats: X [N, C, ...] -> SUM, SQ_SUM [1, C, 1, ...], FLOAT unless set (a HALF sum of many
// HALF values would round away or overflow), strides in X's layout (NHWC for an NHWC X).
Status infer_genstats(const GenstatsAttr&, NodeSpec& node, const GraphDefaults& defaults) {
  if (auto s = check_one_input(node); !s.ok()) return s;
  const TensorAttr* x = node.inputs[0].get();
  const auto& xd = x->get_dim();
  if (xd.size() < 2)
    return node_error(ErrorCode::SHAPE_DEDUCTION_FAILED, node, x,
                      "rank " + std::to_string(xd.size()) + " has no channel dim (genstats reduces X [N, C, ...] "
                      "over every dim but dim 1)");
  if (!is_floating(x->get_data_type()))
    return node_error(ErrorCode::INVALID_DATA_TYPE, node, x,
                      "data type " + std::string(to_string(x->get_data_type())) +
                          " is not floating point (genstats sums X and X*X)");
  std::vector<int64_t> dims(xd.size(), 1);
  dims[1] = xd[1];
  for (auto& out : node.outputs) {
    if (out->get_data_type() == DataType::NOT_SET) out->set_data_type(DataType::FLOAT);
    if (auto s = fill_output(node, *out, dims, x->get_stride(), defaults, DataType::FLOAT); !s.ok()) return s;
    if (!is_floating(out->get_data_type()))
      return node_error(ErrorCode::INVALID_DATA_TYPE, node, out.get(),
                        "data type " + std::string(to_string(out->get_data_type())) +
                            " is not floating point (a sum of X's values)");
  }
  return {};
}

// Two operations per element: an add into SUM, a multiply-add into SQ_SUM.
double genstats_flops(const ir::Graph& g, const ir::Node& n) {
  return 3.0 * static_cast<double>(g.tensor(n.inputs[0]).volume());
}

void write_reduction(const ReductionAttr& a, nlohmann::json& j) { j["mode"] = std::string(to_string(a.get_mode())); }

void read_reduction(JsonFields& f, ReductionAttr& a) {
  if (auto m = f.enumeration("mode", &reduction_mode_from_string, "reduction mode")) a.set_mode(*m);
}

}  // namespace

const OpTraits& traits(OpTag<GenstatsAttr>) {
  static const auto t = typed<GenstatsAttr, infer_genstats>({.name = "genstats", .inputs = {"X"}, .required_inputs = 1,
                                                             .outputs = {"SUM", "SQ_SUM"}, .fusion_pattern = "reduction",
                                                             .flops = genstats_flops});
  return t;
}

const OpTraits& traits(OpTag<ReductionAttr>) {
  static const auto t = typed<ReductionAttr, infer, write_reduction, read_reduction>(x_to_y("reduction", "reduction"));
  return t;
}

}  // namespace dnngraph
