// Reduction: X -> Y, where Y's dims pick the reduced axes (a 1 where X's dim is larger).
#include <nlohmann/json.hpp>

#include "graph/families.hpp"
#include "graph/infer_util.hpp"
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

void write_reduction(const ReductionAttr& a, nlohmann::json& j) { j["mode"] = std::string(to_string(a.get_mode())); }

void read_reduction(JsonFields& f, ReductionAttr& a) {
  if (auto m = f.enumeration("mode", &reduction_mode_from_string, "reduction mode")) a.set_mode(*m);
}

}  // namespace

const OpTraits& traits(OpTag<ReductionAttr>) {
  static const auto t = typed<ReductionAttr, infer, write_reduction, read_reduction>(x_to_y("reduction", "reduction"));
  return t;
}

}  // namespace dnngraph
