// OpTraits: what the rest of the library knows about an op, declared once, in the op family's
// file (src/graph/<family>.cpp). The JSON reader and writer, the slot tables, the anchors of the
// fusion patterns, the cost model's FLOP count and the node names in messages all come from it.
#pragma once
#include <cstddef>
#include <string_view>
#include <variant>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "graph/node.hpp"

namespace dnngraph {

class JsonFields;
namespace ir {
struct Graph;
struct Node;
}  // namespace ir

struct OpTraits {
  std::string_view name;                  // "conv_fprop": messages, JSON, default node names
  std::vector<std::string_view> inputs;   // input slot names; variadic ops take IN_0, IN_1, ...
  size_t required_inputs = 0;             // leading inputs that must be present
  std::vector<std::string_view> outputs;  // output slot names
  bool variadic = false;
  size_t max_inputs = 0;                  // variadic ops: 0 = no limit
  std::string_view fusion_pattern = "single_op";  // the pattern (fusion/patterns.cpp) the op anchors or starts
  // Shape, stride and type inference plus validation of a node whose inputs are inferred.
  Status (*infer)(const OpAttr&, NodeSpec&, const GraphDefaults&) = nullptr;
  // The attribute's own JSON fields (not "op", "compute_data_type" or tensor inputs); null: none.
  void (*write_json)(const OpAttr&, nlohmann::json&) = nullptr;
  void (*read_json)(JsonFields&, OpAttr&) = nullptr;
  // Hands the attribute the tensor inputs it also holds (epsilon, seq_len_q) after a JSON read.
  void (*attach_inputs)(NodeSpec&) = nullptr;
  // The reverse, before validation: copies inputs that other tensors hold (sdpa's ragged offsets,
  // set on Q, K, V and on its outputs) into their slots.
  void (*collect_inputs)(NodeSpec&) = nullptr;
  // Arithmetic operations of one node, for the cost model.
  double (*flops)(const ir::Graph&, const ir::Node&) = nullptr;
};

// The traits of an op, by its attribute, by OpAttr's alternative index, or by name (null if unknown).
const OpTraits& op_traits(const OpAttr& attr);
const OpTraits& op_traits_at(size_t alternative);
const OpTraits* op_traits_named(std::string_view name);
inline constexpr size_t kOpCount = std::variant_size_v<OpAttr>;
inline std::string_view op_name(const OpAttr& attr) { return op_traits(attr).name; }

// An op without FLOPs of its own: one operation per element read and written.
double elementwise_flops(const ir::Graph& g, const ir::Node& n);

// Adapters from a family's typed functions to the signatures above.
template <class A, Status (*F)(const A&, NodeSpec&, const GraphDefaults&)>
Status erase_infer(const OpAttr& a, NodeSpec& n, const GraphDefaults& d) {
  return F(std::get<A>(a), n, d);
}
template <class A, void (*F)(const A&, nlohmann::json&)>
void erase_write(const OpAttr& a, nlohmann::json& j) {
  F(std::get<A>(a), j);
}
template <class A, void (*F)(JsonFields&, A&)>
void erase_read(JsonFields& f, OpAttr& a) {
  F(f, std::get<A>(a));
}

// `t` with the typed inference and JSON functions of attribute A filled in (the JSON pair may be
// left out: the op has no fields of its own). A family file defines an op in one line:
//   traits(OpTag<ReshapeAttr>) { static const auto t = typed<ReshapeAttr, infer, write, read>(x_to_y("reshape")); ... }
template <class A, Status (*Infer)(const A&, NodeSpec&, const GraphDefaults&),
          void (*Write)(const A&, nlohmann::json&) = nullptr, void (*Read)(JsonFields&, A&) = nullptr>
OpTraits typed(OpTraits t) {
  t.infer = erase_infer<A, Infer>;
  if constexpr (Write != nullptr) t.write_json = erase_write<A, Write>;
  if constexpr (Read != nullptr) t.read_json = erase_read<A, Read>;
  return t;
}

// An op of one input X and one output Y, standing alone, one operation per element.
OpTraits x_to_y(std::string_view name, std::string_view fusion_pattern = "single_op");

}  // namespace dnngraph
