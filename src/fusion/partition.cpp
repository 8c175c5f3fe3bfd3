// The partitioner: patterns claim nodes greedily, by priority, then in topological order.
#include "fusion/partition.hpp"

#include <algorithm>
#include <set>
#include <unordered_map>

#include <nlohmann/json.hpp>

#include "core/hash.hpp"
#include "fusion/patterns.hpp"
#include "graph/json_attr.hpp"

namespace dnngraph {

// nodes, inputs and outputs are sorted (finish_partition sorts them).
bool Partition::contains_node(int node_index) const {
  return std::binary_search(nodes.begin(), nodes.end(), node_index);
}

bool Partition::is_internal(int tensor_id) const {
  return !std::binary_search(outputs.begin(), outputs.end(), tensor_id) &&
         !std::binary_search(inputs.begin(), inputs.end(), tensor_id);
}

void finish_partition(Partition& p) {
  std::sort(p.nodes.begin(), p.nodes.end());
  std::set<int> produced, inputs, outputs;
  for (int n : p.nodes)
    for (int t : p.graph->nodes[static_cast<size_t>(n)].outputs) produced.insert(t);
  for (int n : p.nodes)
    for (int t : p.graph->nodes[static_cast<size_t>(n)].inputs)
      if (t >= 0 && !produced.count(t)) inputs.insert(t);
  for (int t : produced) {
    bool used_outside = false;
    for (int c : p.graph->consumers(t)) used_outside |= !p.contains_node(c);
    if (!p.graph->tensor(t).is_virtual || used_outside) outputs.insert(t);
  }
  p.inputs.assign(inputs.begin(), inputs.end());
  p.outputs.assign(outputs.begin(), outputs.end());
}

uint64_t structural_fingerprint(const Partition& p) {
  std::unordered_map<int, int> local;  // tensor id -> its number in order of first use
  nlohmann::json tensors = nlohmann::json::array(), nodes = nlohmann::json::array();
  auto number = [&](int id) {
    if (id < 0) return -1;
    auto [it, added] = local.emplace(id, static_cast<int>(local.size()));
    if (added) {
      const ir::Tensor& t = p.tensor(id);
      tensors.push_back({static_cast<int>(t.dtype), t.dims, t.strides, t.is_virtual, p.is_internal(id),
                         t.is_pass_by_value, t.has_value ? t.value : 0.0, t.is_constant});
    }
    return it->second;
  };
  for (size_t i = 0; i < p.nodes.size(); ++i) {
    const ir::Node& n = p.node(i);
    std::vector<int> in, out;
    for (int t : n.inputs) in.push_back(number(t));
    for (int t : n.outputs) out.push_back(number(t));
    nodes.push_back({attr_to_json(n.attr), static_cast<int>(n.compute_type), in, out,
                     p.anchor == p.nodes[i]});
  }
  nlohmann::json j = {tensors, nodes, p.pattern, p.graph->allow_tf32, p.graph->dynamic_shapes};
  return hash64(j.dump());
}

namespace {

// Whether `node` may join partition `part` (the nodes whose owner is `part`): it is a pointwise op
// (or a reduction) the pattern takes, it reads a value produced in the partition that is final
// (no reading a reduction's result), and each of its other inputs is a graph input or a tensor
// already computed elsewhere (one whose producer is still unplaced may depend on the partition).
bool may_join(const ir::Graph& g, int node, const FusionPattern& pat, const std::vector<int>& owner, int part) {
  if (owner[static_cast<size_t>(node)] >= 0) return false;
  const ir::Node& n = g.nodes[static_cast<size_t>(node)];
  const bool reduces = ir::is<ReductionAttr>(n) || ir::is<GenstatsAttr>(n);  // genstats: two sums
  const bool takes = (ir::is<PointwiseAttr>(n) && pat.epilogue) || (reduces && pat.terminal_reduction);
  if (!takes) return false;
  bool reads_partition = false;
  for (int t : n.inputs) {
    const int prod = t < 0 ? -1 : g.tensor(t).producer;
    if (prod < 0) continue;
    if (owner[static_cast<size_t>(prod)] < 0) return false;
    if (owner[static_cast<size_t>(prod)] != part) continue;
    const ir::Node& from = g.nodes[static_cast<size_t>(prod)];
    if (ir::is<ReductionAttr>(from) || ir::is<GenstatsAttr>(from)) return false;
    reads_partition = true;
  }
  return reads_partition;
}

// Adds every node that may join, through the consumers of each node that joined. A join never
// bars another node (a reader of a reduction's result could not join before the reduction did),
// so this closure is the one that rescanning every node until nothing changes would reach.
void grow(const ir::Graph& g, Partition& p, const FusionPattern& pat, std::vector<int>& owner, int part_index) {
  std::vector<int> joined = p.nodes;  // nodes whose consumers are still to be asked
  while (!joined.empty()) {
    const int from = joined.back();
    joined.pop_back();
    for (int t : g.nodes[static_cast<size_t>(from)].outputs)
      for (int c : g.consumers(t)) {
        if (!may_join(g, c, pat, owner, part_index)) continue;
        p.nodes.push_back(c);
        owner[static_cast<size_t>(c)] = part_index;
        joined.push_back(c);
      }
  }
}

}  // namespace

Status partition_graph(const ir::Graph& g, std::vector<Partition>& out) {
  out.clear();
  std::vector<int> owner(g.nodes.size(), -1);
  // Claim in topological order so a node's producers are placed before it is considered.
  for (size_t i = 0; i < g.nodes.size(); ++i) {
    if (owner[i] >= 0) continue;
    const ir::Node& n = g.nodes[i];
    const FusionPattern* match = pattern_named(op_traits(n.attr).fusion_pattern);
    Partition p;
    p.graph = &g;
    p.nodes = {static_cast<int>(i)};
    p.pattern = match ? std::string(match->name) : "single_op";
    p.anchor = match && match->anchored ? static_cast<int>(i) : -1;
    owner[i] = static_cast<int>(out.size());
    if (match) grow(g, p, *match, owner, static_cast<int>(out.size()));
    finish_partition(p);
    out.push_back(std::move(p));
  }
  merge_pointwise_siblings(g, out);
  return {};
}

std::vector<Partition> split_anchor_from_epilogue(const Partition& p) {
  if (p.anchor < 0 || p.nodes.size() < 3) return {};
  Partition anchor, rest;
  anchor.graph = rest.graph = p.graph;
  anchor.nodes = {p.anchor};
  anchor.anchor = p.anchor;
  anchor.pattern = "split:" + std::string(op_name(p.graph->nodes[static_cast<size_t>(p.anchor)].attr));
  for (int n : p.nodes)
    if (n != p.anchor) rest.nodes.push_back(n);
  rest.pattern = "split:epilogue";
  finish_partition(anchor);
  finish_partition(rest);
  return {std::move(anchor), std::move(rest)};
}

std::vector<Partition> split_per_node(const Partition& p) {
  std::vector<Partition> parts;
  for (int n : p.nodes) {
    Partition q;
    q.graph = p.graph;
    q.nodes = {n};
    const auto& node = p.graph->nodes[static_cast<size_t>(n)];
    q.pattern = "split:" + std::string(op_name(node.attr));
    q.anchor = (n == p.anchor) ? n : -1;
    finish_partition(q);
    parts.push_back(std::move(q));
  }
  return parts;
}

}  // namespace dnngraph
