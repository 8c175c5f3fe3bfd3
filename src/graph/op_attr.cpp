// Op names and the dispatch of inference to the op families.
#include <array>

#include "graph/families.hpp"
#include "graph/node.hpp"

namespace dnngraph {
namespace {
// Indexed like OpAttr's alternatives.
constexpr std::array<std::string_view, std::variant_size_v<OpAttr>> kOpNames{
    "conv_fprop", "conv_dgrad", "conv_wgrad", "matmul", "pointwise", "reduction", "batchnorm_inference",
    "layernorm", "rmsnorm", "resample", "sdpa", "reshape", "transpose", "slice", "concatenate",
};
}  // namespace

std::string_view op_name(const OpAttr& attr) { return kOpNames[attr.index()]; }
std::string_view op_name_of_index(size_t i) { return i < kOpNames.size() ? kOpNames[i] : "unknown"; }

Status infer_node(NodeSpec& node, const GraphDefaults& defaults) {
  return std::visit([&](const auto& attr) { return infer(attr, node, defaults); }, node.attr);
}

}  // namespace dnngraph
