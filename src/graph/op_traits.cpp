// The table of op traits, indexed like OpAttr's alternatives, and the dispatch of inference.
#include "graph/op_traits.hpp"

#include <array>
#include <utility>

#include "graph/families.hpp"
#include "graph/ir.hpp"

namespace dnngraph {
namespace {

template <size_t... I>
std::array<const OpTraits*, kOpCount> make_table(std::index_sequence<I...>) {
  return {&traits(OpTag<std::variant_alternative_t<I, OpAttr>>{})...};
}

const std::array<const OpTraits*, kOpCount>& table() {
  static const auto kTable = make_table(std::make_index_sequence<kOpCount>{});
  return kTable;
}

}  // namespace

const OpTraits& op_traits(const OpAttr& attr) { return *table()[attr.index()]; }
const OpTraits& op_traits_at(size_t alternative) { return *table().at(alternative); }

const OpTraits* op_traits_named(std::string_view name) {
  for (const OpTraits* t : table())
    if (t->name == name) return t;
  return nullptr;
}

double elementwise_flops(const ir::Graph& g, const ir::Node& n) {
  return static_cast<double>(g.tensor(n.outputs[0]).volume() + g.tensor(n.inputs[0]).volume());
}

OpTraits x_to_y(std::string_view name, std::string_view fusion_pattern) {
  return OpTraits{.name = name, .inputs = {"X"}, .required_inputs = 1, .outputs = {"Y"},
                  .fusion_pattern = fusion_pattern, .flops = elementwise_flops};
}

Status infer_node(NodeSpec& node, const GraphDefaults& defaults) {
  return op_traits(node.attr).infer(node.attr, node, defaults);
}

}  // namespace dnngraph
