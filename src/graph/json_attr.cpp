// JSON encoding of op attributes (docs/graph-json.md). Rules: enums by name; arrays always written;
// scalar fields left out at their default; optional fields left out when unset. Names are not part
// of an attribute's JSON (the graph writer puts the node's name beside it), so the fingerprint
// ignores them. Tensor-valued attributes (epsilon, seq_len_q, ...) are node inputs, not fields.
// Each op's own fields are written and read by its traits (graph/op_traits.hpp).
#include "graph/json_attr.hpp"

#include <utility>

#include "graph/json_fields.hpp"
#include "graph/op_traits.hpp"

namespace dnngraph {
namespace {

using json = nlohmann::json;

template <size_t... I>
OpAttr make_alternative(size_t index, std::index_sequence<I...>) {
  OpAttr out;
  ((index == I ? (out.emplace<I>(), 0) : 0), ...);
  return out;
}

}  // namespace

nlohmann::json attr_to_json(const OpAttr& attr) {
  json j = json::object();
  const OpTraits& t = op_traits(attr);
  j["op"] = std::string(t.name);
  const DataType compute = std::visit([](const auto& a) { return a.get_compute_data_type(); }, attr);
  if (compute != DataType::NOT_SET) j["compute_data_type"] = std::string(to_string(compute));
  if (t.write_json) t.write_json(attr, j);
  return j;
}

Status attr_from_json(const nlohmann::json& j, OpAttr& attr, const std::string& where) {
  if (!j.is_object()) return {ErrorCode::INVALID_VALUE, where + ": expected an object, but it is " + json_type_name(j)};
  auto op_it = j.find("op");
  if (op_it == j.end()) return {ErrorCode::ATTRIBUTE_NOT_SET, where + ".op: missing (every node names its op)"};
  if (!op_it->is_string())
    return {ErrorCode::INVALID_VALUE, where + ".op: expected a string, but it is " + json_type_name(*op_it)};
  const auto& op = op_it->get_ref<const std::string&>();
  size_t index = kOpCount;
  for (size_t i = 0; i < kOpCount; ++i)
    if (op_traits_at(i).name == op) index = i;
  if (index == kOpCount) {
    std::string known;
    for (size_t i = 0; i < kOpCount; ++i) known += (i ? ", " : "") + std::string(op_traits_at(i).name);
    return {ErrorCode::INVALID_VALUE, where + ".op: unknown op '" + op + "' (known: " + known + ")"};
  }
  OpAttr out = make_alternative(index, std::make_index_sequence<kOpCount>{});
  JsonFields fields(j, where);
  fields.mark_read("op");
  if (auto t = fields.enumeration("compute_data_type", &data_type_from_string, "data type"))
    std::visit([&](auto& a) { a.set_compute_data_type(*t); }, out);
  if (const OpTraits& t = op_traits_at(index); t.read_json) t.read_json(fields, out);
  if (auto s = fields.finish("op '" + op + "'"); !s.ok()) return s;
  attr = std::move(out);
  return {};
}

}  // namespace dnngraph
