// Graph::to_json and Graph::from_json: the graph JSON format (docs/graph-json.md). The reader never
// throws: every problem becomes a Status naming the JSON path, the node or tensor, and the rule.
// Graph-level rules (cycles, types, shapes) are left to validate().
#include <algorithm>
#include <map>
#include <set>
#include <unordered_map>
#include <unordered_set>

#include "graph/graph_impl.hpp"
#include "graph/json_attr.hpp"
#include "graph/json_fields.hpp"
#include "graph/op_traits.hpp"

namespace dnngraph {
namespace {

using json = nlohmann::json;
using ojson = nlohmann::ordered_json;

constexpr const char* kFormat = "dnngraph-graph";
constexpr int64_t kVersion = 1;
constexpr int kMaxNesting = 16;  // the format needs 5 levels; deeper input is rejected before parsing

std::string input_slot_name(const OpTraits& op, size_t i) {
  return op.variadic ? "IN_" + std::to_string(i) : std::string(op.inputs[i]);
}

// The input slot a key names, or `capacity` when none: variadic ops' slots are IN_0, IN_1, ...
size_t input_slot_index(const OpTraits& op, const std::string& key, size_t capacity) {
  if (!op.variadic) {
    size_t k = 0;
    while (k < capacity && op.inputs[k] != key) ++k;
    return k;
  }
  if (key.size() < 4 || key.compare(0, 3, "IN_") != 0 || key.size() > 3 + 9) return capacity;
  size_t k = 0;
  for (size_t i = 3; i < key.size(); ++i) {
    if (key[i] < '0' || key[i] > '9' || (i == 3 && key[i] == '0' && key.size() > 4)) return capacity;
    k = k * 10 + static_cast<size_t>(key[i] - '0');
  }
  return std::min(k, capacity);
}

// ---- writing

// Names that are unique in the output: a clash gets "_2", "_3", ... (every epsilon made by
// set_epsilon(double) is called "epsilon").
class UniqueNames {
 public:
  std::string take(const std::string& want) {
    std::string name = want;
    for (int k = 2; !used_.insert(name).second; ++k) name = want + "_" + std::to_string(k);
    return name;
  }

 private:
  std::set<std::string> used_;
};

void write_compact(const ojson& v, std::string& out);

// "a": 1, "b": [1, 2]: an object's members, without the braces.
void write_members(const ojson& obj, std::string& out) {
  bool first = true;
  for (const auto& [key, value] : obj.items()) {
    out += first ? "" : ", ";
    first = false;
    out += ojson(key).dump(-1, ' ', false, ojson::error_handler_t::replace) + ": ";
    write_compact(value, out);
  }
}

// {"a": 1, "b": [1, 2]}: one line, with spaces, for tensors and nodes.
void write_compact(const ojson& v, std::string& out) {
  if (v.is_object()) {
    out += '{';
    write_members(v, out);
    out += '}';
  } else if (v.is_array()) {
    out += '[';
    for (size_t i = 0; i < v.size(); ++i) {
      out += i ? ", " : "";
      write_compact(v[i], out);
    }
    out += ']';
  } else {
    out += v.dump(-1, ' ', false, ojson::error_handler_t::replace);
  }
}

// {"IN_0": "x", ...}: a node's slots and the tensors in them, written as they come (slot names are
// unique; an ordered_json object finds each new key by a linear search, so a concatenate of 100k
// inputs took minutes).
void write_slots(const std::vector<std::pair<std::string, const std::string*>>& slots, std::string& out) {
  out += '{';
  for (size_t i = 0; i < slots.size(); ++i) {
    out += i ? ", " : "";
    out += ojson(slots[i].first).dump(-1, ' ', false, ojson::error_handler_t::replace) + ": ";
    out += ojson(*slots[i].second).dump(-1, ' ', false, ojson::error_handler_t::replace);
  }
  out += '}';
}

ojson tensor_to_json(const TensorAttr& t, const std::string& name, bool produced) {
  ojson j;
  j["name"] = name;
  if (t.has_uid()) j["uid"] = t.get_uid();
  if (!t.get_dim().empty()) j["dim"] = t.get_dim();
  if (!t.get_stride().empty()) j["stride"] = t.get_stride();
  if (t.get_data_type() != DataType::NOT_SET) j["data_type"] = std::string(to_string(t.get_data_type()));
  if (t.get_is_virtual()) j["virtual"] = true;
  if (produced && !t.get_is_virtual()) j["output"] = true;
  if (t.get_is_constant()) j["constant"] = true;
  if (t.get_value()) {
    j["value"] = json_number(*t.get_value());
    if (!t.get_is_pass_by_value()) j["pass_by_value"] = false;
  } else if (t.get_is_pass_by_value()) {
    j["pass_by_value"] = true;
  }
  return j;
}

}  // namespace

std::string Graph::to_json() const {
  const GraphImpl& g = *impl_;
  // Inputs that other tensors hold (sdpa's ragged offsets) join their slots as validation does,
  // so a graph written before validate() keeps them.
  std::vector<NodeSpec> nodes = g.nodes;
  for (auto& n : nodes)
    if (const auto collect = op_traits(n.attr).collect_inputs) collect(n);
  std::unordered_set<const TensorAttr*> produced;
  for (const auto& n : nodes)
    for (const auto& t : n.outputs)
      if (t) produced.insert(t.get());
  // Graph inputs first (declared ones in order, then undeclared ones such as epsilon tensors in
  // node order), then outputs, then virtual tensors, both in node order: from_json keeps it.
  std::vector<const TensorAttr*> order;
  std::unordered_set<const TensorAttr*> seen;
  auto add = [&](const TensorPtr& t) {
    if (t && seen.insert(t.get()).second) order.push_back(t.get());
  };
  for (const auto& t : g.tensors)
    if (!produced.count(t.get())) add(t);
  for (const auto& n : nodes)
    for (const auto& t : n.inputs)
      if (t && !produced.count(t.get())) add(t);
  for (const bool virtual_pass : {false, true})
    for (const auto& n : nodes)
      for (const auto& t : n.outputs)
        if (t && t->get_is_virtual() == virtual_pass) add(t);

  UniqueNames tensor_names, node_names;
  std::unordered_map<const TensorAttr*, std::string> name_of;
  std::string out = "{\n";
  auto line = [&](const char* key, const ojson& v) {
    out += "  \"" + std::string(key) + "\": ";
    write_compact(v, out);
    out += ",\n";
  };
  line("format", kFormat);
  line("version", kVersion);
  line("name", g.name);
  auto type_line = [&](const char* key, DataType t) {
    if (t != DataType::NOT_SET) line(key, std::string(to_string(t)));
  };
  type_line("io_data_type", g.defaults.io);
  type_line("intermediate_data_type", g.defaults.intermediate);
  type_line("compute_data_type", g.defaults.compute);
  line("dynamic_shapes", g.dynamic_shapes);
  if (g.allow_tf32) line("allow_tf32", true);
  out += "  \"tensors\": [";
  for (size_t i = 0; i < order.size(); ++i) {
    const TensorAttr* t = order[i];
    name_of[t] = tensor_names.take(t->get_name());
    out += i ? ",\n    " : "\n    ";
    write_compact(tensor_to_json(*t, name_of[t], produced.count(t) > 0), out);
  }
  out += order.empty() ? "],\n" : "\n  ],\n";
  out += "  \"nodes\": [";
  for (size_t i = 0; i < nodes.size(); ++i) {
    const NodeSpec& n = nodes[i];
    const OpTraits& slots = op_traits(n.attr);
    ojson j;
    j["name"] = node_names.take(n.name);
    const json attr = attr_to_json(n.attr);
    j["op"] = attr["op"];
    for (const auto& [key, value] : attr.items())
      if (key != "op") j[key] = value;
    std::vector<std::pair<std::string, const std::string*>> inputs, outputs;  // slot, tensor name
    for (size_t k = 0; k < n.inputs.size(); ++k)
      if (n.inputs[k] && (slots.variadic || k < slots.inputs.size()))
        inputs.emplace_back(input_slot_name(slots, k), &name_of[n.inputs[k].get()]);
    for (size_t k = 0; k < n.outputs.size() && k < slots.outputs.size(); ++k)
      if (n.outputs[k]) outputs.emplace_back(slots.outputs[k], &name_of[n.outputs[k].get()]);
    out += i ? ",\n    {" : "\n    {";
    write_members(j, out);
    out += ", \"inputs\": ";
    write_slots(inputs, out);
    out += ", \"outputs\": ";
    write_slots(outputs, out);
    out += '}';
  }
  out += nodes.empty() ? "]\n}\n" : "\n  ]\n}\n";
  return out;
}

// ---- reading

namespace {

Status json_error(ErrorCode code, const std::string& msg) { return {code, "graph JSON: " + msg}; }

// Rejects nesting deeper than the format needs before the parser sees it.
Status check_nesting(const std::string& text) {
  int depth = 0;
  bool in_string = false, escaped = false;
  for (size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    if (in_string) {
      if (escaped) escaped = false;
      else if (c == '\\') escaped = true;
      else if (c == '"') in_string = false;
    } else if (c == '"') {
      in_string = true;
    } else if (c == '[' || c == '{') {
      if (++depth > kMaxNesting)
        return json_error(ErrorCode::INVALID_VALUE, "nesting deeper than " + std::to_string(kMaxNesting) +
                                                        " levels at byte " + std::to_string(i) + "; the format needs 5");
    } else if (c == ']' || c == '}') {
      --depth;
    }
  }
  return {};
}

// The "name" of the object at `path` (a tensor or a node): a non-empty string.
Status read_object_name(const json& j, const std::string& path, const char* what, std::string& name) {
  if (!j.is_object()) return json_error(ErrorCode::INVALID_VALUE, path + ": expected an object, but it is " + json_type_name(j));
  auto it = j.find("name");
  if (it == j.end())
    return json_error(ErrorCode::ATTRIBUTE_NOT_SET, path + ".name: missing (every " + what + " has a name)");
  if (!it->is_string() || it->get_ref<const std::string&>().empty())
    return json_error(ErrorCode::INVALID_VALUE, path + ".name: expected a non-empty string");
  name = it->get<std::string>();
  return {};
}

struct TensorDecl {
  TensorPtr tensor;
  std::string path;  // "$.tensors[3]"
  std::optional<bool> is_virtual, is_output;
};

struct Reader {
  Graph graph;
  std::vector<TensorDecl> decls;
  std::map<std::string, size_t> decl_by_name;
  std::map<std::string, std::string> node_path_by_name;
  std::unordered_map<const TensorAttr*, std::string> producer_of;  // tensor -> node name

  GraphImpl& g() { return impl_of(graph); }

  Status read_settings(JsonFields& f) {
    if (auto name = f.string("name")) graph.set_name(*name);
    if (auto t = f.enumeration("io_data_type", &data_type_from_string, "data type")) graph.set_io_data_type(*t);
    if (auto t = f.enumeration("intermediate_data_type", &data_type_from_string, "data type"))
      graph.set_intermediate_data_type(*t);
    if (auto t = f.enumeration("compute_data_type", &data_type_from_string, "data type")) graph.set_compute_data_type(*t);
    if (auto d = f.boolean("dynamic_shapes")) graph.set_dynamic_shape_enabled(*d);
    if (auto a = f.boolean("allow_tf32")) graph.set_allow_tf32(*a);
    return f.error();
  }

  Status read_tensor(const json& j, size_t index) {
    const std::string path = "$.tensors[" + std::to_string(index) + "]";
    std::string name;
    if (auto s = read_object_name(j, path, "tensor", name); !s.ok()) return s;
    if (auto it = decl_by_name.find(name); it != decl_by_name.end())
      return json_error(ErrorCode::INVALID_GRAPH, path + ".name: tensor '" + name + "' is declared twice (also at " +
                                                      decls[it->second].path + ")");
    JsonFields f(j, "graph JSON: tensor '" + name + "' at " + path);
    f.mark_read("name");
    TensorDecl d{std::make_shared<TensorAttr>(), path, std::nullopt, std::nullopt};
    TensorAttr& t = *d.tensor;
    t.set_name(name);
    if (auto uid = f.integer("uid")) t.set_uid(*uid);
    if (auto dim = f.integers("dim")) t.set_dim(*dim);
    if (auto stride = f.integers("stride")) t.set_stride(*stride);
    if (auto dt = f.enumeration("data_type", &data_type_from_string, "data type")) t.set_data_type(*dt);
    d.is_virtual = f.boolean("virtual");
    d.is_output = f.boolean("output");
    if (auto v = f.number("value")) t.set_value(*v);
    if (auto p = f.boolean("pass_by_value")) t.set_is_pass_by_value(*p);
    if (auto c = f.boolean("constant")) t.set_is_constant(*c);
    if (d.is_virtual && d.is_output && *d.is_virtual == *d.is_output)
      f.fail(ErrorCode::INVALID_VALUE, "output", "disagrees with \"virtual\" (an output is never virtual)");
    if (auto s = f.finish("a tensor"); !s.ok()) return s;
    decl_by_name.emplace(name, decls.size());
    decls.push_back(std::move(d));
    return {};
  }

  // The declared tensor a node names in one of its slots.
  Status lookup(const json& v, const std::string& path, const std::string& node, const char* verb, TensorPtr& out) {
    if (!v.is_string())
      return json_error(ErrorCode::INVALID_VALUE, path + ": expected a tensor name, but it is " + json_type_name(v));
    auto it = decl_by_name.find(v.get<std::string>());
    if (it == decl_by_name.end())
      return json_error(ErrorCode::INVALID_GRAPH, path + ": node '" + node + "' " + verb + " tensor '" +
                                                      v.get<std::string>() + "', which $.tensors does not declare");
    out = decls[it->second].tensor;
    return {};
  }

  Status read_inputs(const json* j, const std::string& path, const std::string& node, const OpTraits& slots,
                     std::string_view op, std::vector<TensorPtr>& inputs) {
    const std::string where = path + ".inputs";
    if (!j) return json_error(ErrorCode::ATTRIBUTE_NOT_SET, where + ": missing (node '" + node + "' reads tensors)");
    if (!j->is_object())
      return json_error(ErrorCode::INVALID_VALUE, where + ": expected an object {slot: tensor name}, but it is " + json_type_name(*j));
    const size_t capacity = slots.variadic ? (slots.max_inputs ? slots.max_inputs : j->size()) : slots.inputs.size();
    inputs.assign(capacity, nullptr);
    for (const auto& [key, value] : j->items()) {
      const size_t k = input_slot_index(slots, key, capacity);
      if (k == capacity) {
        std::string known;
        for (size_t i = 0; i < slots.inputs.size(); ++i) known += (i ? ", " : "") + std::string(slots.inputs[i]);
        if (slots.variadic) known = slots.max_inputs ? "IN_0 to IN_" + std::to_string(slots.max_inputs - 1) : "IN_0, IN_1, ... in order";
        return json_error(ErrorCode::INVALID_VALUE, where + "." + key + ": node '" + node + "' (" + std::string(op) +
                                                        ") has no input slot '" + key + "' (slots: " + known + ")");
      }
      if (auto s = lookup(value, where + "." + key, node, "reads", inputs[k]); !s.ok()) return s;
    }
    size_t required = slots.required_inputs;
    if (slots.variadic) {  // IN_0 .. IN_{n-1}, none left out
      size_t used = 0;
      for (size_t k = 0; k < inputs.size(); ++k)
        if (inputs[k]) used = k + 1;
      inputs.resize(used);
      required = std::max(required, used);
    }
    for (size_t k = 0; k < required; ++k)
      if (k >= inputs.size() || !inputs[k])
        return json_error(ErrorCode::ATTRIBUTE_NOT_SET, where + ": node '" + node + "' (" + std::string(op) +
                                                            ") has no input '" + input_slot_name(slots, k) + "'");
    return {};
  }

  Status read_outputs(const json* j, const std::string& path, const std::string& node, const OpTraits& slots,
                      std::string_view op, std::vector<TensorPtr>& outputs) {
    const std::string where = path + ".outputs";
    outputs.assign(slots.outputs.size(), nullptr);
    if (j && !j->is_object())
      return json_error(ErrorCode::INVALID_VALUE, where + ": expected an object {slot: tensor name}, but it is " + json_type_name(*j));
    static const json kNone = json::object();
    for (const auto& [key, value] : (j ? *j : kNone).items()) {
      size_t k = 0;
      while (k < slots.outputs.size() && slots.outputs[k] != key) ++k;
      if (k == slots.outputs.size()) {
        std::string known;
        for (size_t i = 0; i < slots.outputs.size(); ++i) known += (i ? ", " : "") + std::string(slots.outputs[i]);
        return json_error(ErrorCode::INVALID_VALUE, where + "." + key + ": node '" + node + "' (" + std::string(op) +
                                                        ") has no output slot '" + key + "' (slots: " + known + ")");
      }
      if (auto s = lookup(value, where + "." + key, node, "writes", outputs[k]); !s.ok()) return s;
      auto [it, inserted] = producer_of.emplace(outputs[k].get(), node);
      if (!inserted)
        return json_error(ErrorCode::INVALID_GRAPH, where + "." + key + ": tensor '" + outputs[k]->get_name() +
                                                        "' is written by node '" + it->second + "' and by node '" + node + "'");
    }
    // Slots left out get fresh virtual tensors, named as the builder names them.
    for (size_t k = 0; k < outputs.size(); ++k) {
      if (outputs[k]) continue;
      outputs[k] = std::make_shared<TensorAttr>();
      outputs[k]->set_name(node + "::" + std::string(slots.outputs[k])).set_is_virtual(true);
      producer_of.emplace(outputs[k].get(), node);
    }
    return {};
  }

  Status read_node(const json& j, size_t index) {
    const std::string path = "$.nodes[" + std::to_string(index) + "]";
    std::string name;
    if (auto s = read_object_name(j, path, "node", name); !s.ok()) return s;
    if (auto [it, inserted] = node_path_by_name.emplace(name, path); !inserted)
      return json_error(ErrorCode::INVALID_GRAPH, path + ".name: node '" + name + "' appears twice (also at " + it->second + ")");
    json attr_json = j;
    attr_json.erase("name");
    attr_json.erase("inputs");
    attr_json.erase("outputs");
    NodeSpec node;
    node.name = name;
    if (auto s = attr_from_json(attr_json, node.attr, "graph JSON: node '" + name + "' at " + path); !s.ok()) return s;
    const OpTraits& slots = op_traits(node.attr);
    const std::string_view op = slots.name;
    auto find = [&](const char* key) { auto it = j.find(key); return it == j.end() ? nullptr : &*it; };
    if (auto s = read_inputs(find("inputs"), path, name, slots, op, node.inputs); !s.ok()) return s;
    if (auto s = read_outputs(find("outputs"), path, name, slots, op, node.outputs); !s.ok()) return s;
    attach_tensor_attributes(node);
    g().nodes.push_back(std::move(node));
    return {};
  }

  // The attribute classes also hold the tensors that are node inputs (epsilon, seq_len, rmsnorm's
  // bias), as the builder leaves them; and the node's name.
  static void attach_tensor_attributes(NodeSpec& n) {
    std::visit([&](auto& a) { a.set_name(n.name); }, n.attr);
    if (const auto attach = op_traits(n.attr).attach_inputs) attach(n);
  }

  // Virtual unless said otherwise: tensors a node writes; graph inputs are never virtual by default.
  void finish() {
    GraphImpl& impl = g();
    for (auto& d : decls) {
      const bool produced = producer_of.count(d.tensor.get()) > 0;
      bool is_virtual = produced;
      if (d.is_output) is_virtual = !*d.is_output;
      if (d.is_virtual) is_virtual = *d.is_virtual;
      d.tensor->set_is_virtual(is_virtual);
      if (!produced) impl.tensors.push_back(d.tensor);
    }
    impl.tensor_counter = static_cast<int64_t>(impl.tensors.size());
    impl.node_counter = static_cast<int64_t>(impl.nodes.size());
  }

  Status read(const json& top) {
    if (!top.is_object()) return json_error(ErrorCode::INVALID_VALUE, "$: expected an object, but it is " + json_type_name(top));
    JsonFields f(top, "graph JSON: $");
    f.require("format", std::string("\"format\": \"") + kFormat + "\" marks the file");
    f.require("version", "the format version, " + std::to_string(kVersion));
    auto format = f.string("format");
    if (format && *format != kFormat) f.fail(ErrorCode::INVALID_VALUE, "format", "is '" + *format + "', expected '" + kFormat + "'");
    auto version = f.integer("version");
    if (version && *version != kVersion)
      f.fail(ErrorCode::INVALID_VALUE, "version", "is " + std::to_string(*version) + "; this library reads version " +
                                                     std::to_string(kVersion));
    f.require("tensors", "the array of tensors");
    f.require("nodes", "the array of nodes");
    f.mark_read("tensors");
    f.mark_read("nodes");
    if (auto s = read_settings(f); !s.ok()) return s;
    if (auto s = f.finish("the graph"); !s.ok()) return s;
    const json& tensors = top["tensors"];
    const json& nodes = top["nodes"];
    if (!tensors.is_array()) return json_error(ErrorCode::INVALID_VALUE, "$.tensors: expected an array, but it is " + json_type_name(tensors));
    if (!nodes.is_array()) return json_error(ErrorCode::INVALID_VALUE, "$.nodes: expected an array, but it is " + json_type_name(nodes));
    for (size_t i = 0; i < tensors.size(); ++i)
      if (auto s = read_tensor(tensors[i], i); !s.ok()) return s;
    for (size_t i = 0; i < nodes.size(); ++i)
      if (auto s = read_node(nodes[i], i); !s.ok()) return s;
    finish();
    return {};
  }
};

Status read_graph(const std::string& text, Graph& out) {
  if (auto s = check_nesting(text); !s.ok()) return s;
  json top;
  try {
    top = json::parse(text);
  } catch (const json::parse_error& e) {
    return json_error(ErrorCode::INVALID_VALUE, std::string("not valid JSON: ") + e.what());
  }
  Reader r;
  if (auto s = r.read(top); !s.ok()) return s;
  out = std::move(r.graph);
  return {};
}

}  // namespace

Status Graph::from_json(const std::string& text, Graph& graph) {
  try {
    return read_graph(text, graph);
  } catch (const std::exception& e) {  // a case the reader missed must still not escape the API
    return json_error(ErrorCode::INVALID_VALUE, std::string("unreadable: ") + e.what());
  }
}

}  // namespace dnngraph
