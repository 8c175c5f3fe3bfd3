// Graph-wide validation: ordering, producers, uids, default types; then each node's own rules.
#include <algorithm>
#include <set>
#include <unordered_map>
#include <unordered_set>

#include "core/no_throw.hpp"
#include "graph/graph_impl.hpp"
#include "graph/infer_util.hpp"
#include "graph/op_traits.hpp"

namespace dnngraph {
namespace {

Status graph_error(const std::string& msg) { return {ErrorCode::INVALID_GRAPH, msg}; }

// Kahn's algorithm over producer -> consumer edges, keeping build order among ready nodes.
Status topological_order(GraphImpl& g, const std::unordered_map<const TensorAttr*, int>& producer) {
  const size_t n = g.nodes.size();
  std::vector<int> indegree(n, 0);
  std::vector<std::vector<int>> users(n);
  for (size_t i = 0; i < n; ++i) {
    for (const auto& in : g.nodes[i].inputs) {
      if (!in) continue;
      auto it = producer.find(in.get());
      if (it == producer.end()) continue;
      users[static_cast<size_t>(it->second)].push_back(static_cast<int>(i));
      ++indegree[i];
    }
  }
  std::set<int> ready;
  for (size_t i = 0; i < n; ++i)
    if (indegree[i] == 0) ready.insert(static_cast<int>(i));
  g.topo_order.clear();
  while (!ready.empty()) {
    int v = *ready.begin();
    ready.erase(ready.begin());
    g.topo_order.push_back(v);
    for (int u : users[static_cast<size_t>(v)])
      if (--indegree[static_cast<size_t>(u)] == 0) ready.insert(u);
  }
  if (g.topo_order.size() != n) {
    std::string names;
    for (size_t i = 0; i < n; ++i)
      if (indegree[i] > 0) names += (names.empty() ? "'" : ", '") + g.nodes[i].name + "'";
    return graph_error("the graph has a cycle through nodes " + names);
  }
  return {};
}

Status check_producers(GraphImpl& g, std::unordered_map<const TensorAttr*, int>& producer) {
  for (size_t i = 0; i < g.nodes.size(); ++i) {
    for (const auto& out : g.nodes[i].outputs) {
      auto [it, inserted] = producer.emplace(out.get(), static_cast<int>(i));
      if (!inserted)
        return graph_error("tensor '" + out->get_name() + "' is produced by two nodes, '" +
                           g.nodes[static_cast<size_t>(it->second)].name + "' and '" + g.nodes[i].name + "'");
    }
  }
  for (const auto& node : g.nodes) {
    for (const auto& in : node.inputs) {
      if (in && in->get_is_virtual() && !producer.count(in.get()))
        return graph_error(where(node, in.get()) + ": is used before it is produced (a virtual tensor that no node outputs)");
    }
  }
  return {};
}

Status default_input_types(GraphImpl& g, const std::unordered_map<const TensorAttr*, int>& producer) {
  for (auto& node : g.nodes) {
    for (auto& in : node.inputs) {
      if (!in || producer.count(in.get()) || in->get_data_type() != DataType::NOT_SET) continue;
      if (g.defaults.io == DataType::NOT_SET)
        return node_error(ErrorCode::ATTRIBUTE_NOT_SET, node, in.get(),
                          "has no data type and the graph has no io_data_type to default to");
      in->set_data_type(g.defaults.io);
    }
  }
  return {};
}

// The engines read a pass-by-value tensor as one host scalar (a baked value or a host pointer):
// it must hold one element. Ops with a scalar input of their own (epsilon) have said so already.
Status check_pass_by_value(const GraphImpl& g) {
  for (const auto& node : g.nodes)
    for (const auto& t : node.inputs)
      if (t && t->get_is_pass_by_value() && t->get_volume() != 1)
        return node_error(ErrorCode::INVALID_VALUE, node, t.get(),
                          "is pass-by-value (one host scalar) but its dims " + dims_to_string(t->get_dim()) +
                              " hold " + std::to_string(t->get_volume()) + " elements");
  return {};
}

// Only data the user hands in can be constant: a produced tensor is rewritten by every execute.
Status check_constants(const GraphImpl& g) {
  for (const auto& node : g.nodes)
    for (const auto& t : node.outputs)
      if (t && t->get_is_constant())
        return node_error(ErrorCode::INVALID_VALUE, node, t.get(),
                          "is marked constant but this node produces it (only graph inputs can be constant)");
  return {};
}

// Every non-virtual tensor gets a uid; duplicates are an error.
Status assign_uids(GraphImpl& g) {
  std::vector<TensorAttr*> all;
  std::unordered_set<const TensorAttr*> seen;
  auto visit = [&](const TensorPtr& t) {
    if (t && !t->get_is_virtual() && seen.insert(t.get()).second) all.push_back(t.get());
  };
  for (auto& node : g.nodes) {
    for (auto& t : node.inputs) visit(t);
    for (auto& t : node.outputs) visit(t);
  }
  std::unordered_map<int64_t, const TensorAttr*> by_uid;
  int64_t next = 0;
  for (auto* t : all) {
    if (!t->has_uid()) continue;
    if (t->get_uid() < 0 || t->get_uid() == INT64_MAX)
      return graph_error("tensor '" + t->get_name() + "' has uid " + std::to_string(t->get_uid()) +
                         "; uids are in [0, 2^63 - 2]");
    auto [it, inserted] = by_uid.emplace(t->get_uid(), t);
    if (!inserted)
      return graph_error("tensors '" + it->second->get_name() + "' and '" + t->get_name() + "' share uid " +
                         std::to_string(t->get_uid()) + "; uids must be unique");
    next = std::max(next, t->get_uid() + 1);
  }
  for (auto* t : all) {
    if (t->has_uid()) continue;
    if (next == INT64_MAX)
      return graph_error("tensor '" + t->get_name() + "' needs a uid, but every uid above the largest given (" +
                         std::to_string(next - 1) + ") is taken");
    t->set_uid(next++);
  }
  return {};
}

}  // namespace

Status validate_graph(GraphImpl& g) {
  g.invalidate();
  if (!g.build_error.ok()) return g.build_error;
  if (g.nodes.empty()) return graph_error("the graph has no operations");
  for (auto& node : g.nodes)
    if (const auto collect = op_traits(node.attr).collect_inputs) collect(node);
  std::unordered_map<const TensorAttr*, int> producer;
  if (auto s = check_producers(g, producer); !s.ok()) return s;
  if (auto s = topological_order(g, producer); !s.ok()) return s;
  if (auto s = default_input_types(g, producer); !s.ok()) return s;
  for (int i : g.topo_order) {
    if (auto s = infer_node(g.nodes[static_cast<size_t>(i)], g.defaults); !s.ok()) return s;
  }
  if (auto s = check_pass_by_value(g); !s.ok()) return s;
  if (auto s = check_constants(g); !s.ok()) return s;
  bool any_output = false;
  for (const auto& node : g.nodes)
    for (const auto& out : node.outputs) any_output |= !out->get_is_virtual();
  if (!any_output) return graph_error("no tensor is marked as an output (call set_output(true) on a result)");
  if (auto s = assign_uids(g); !s.ok()) return s;
  g.stage = Stage::VALIDATED;
  return {};
}

TensorPtr tensor_with_uid(const GraphImpl& g, int64_t uid) {
  auto find = [&](const std::vector<TensorPtr>& ts) {
    for (const auto& t : ts)
      if (t && t->has_uid() && t->get_uid() == uid) return t;
    return TensorPtr();
  };
  TensorPtr hit = find(g.tensors);
  for (size_t i = 0; !hit && i < g.nodes.size(); ++i) {
    hit = find(g.nodes[i].inputs);
    if (!hit) hit = find(g.nodes[i].outputs);
  }
  return hit;
}

Status Graph::query_tensor_attributes_of_uid(int64_t uid, TensorAttr& out) const {
  const TensorPtr hit = tensor_with_uid(*impl_, uid);
  if (!hit)
    return {ErrorCode::INVALID_VALUE, "query_tensor_attributes_of_uid: no tensor of this graph has uid " +
                                          std::to_string(uid) + " (uids are set by set_uid or assigned by validate)"};
  out = *hit;
  return {};
}

Status Graph::validate() {
  return no_throw(ErrorCode::INVALID_GRAPH, "validate", [&] { return validate_graph(*impl_); });
}

}  // namespace dnngraph
