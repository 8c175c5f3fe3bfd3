// The partitioner: patterns claim nodes greedily, by priority, then in topological order.
#include "fusion/partition.hpp"

#include <algorithm>
#include <set>

#include "fusion/patterns.hpp"

namespace dnngraph {

bool Partition::contains_node(int node_index) const {
  return std::find(nodes.begin(), nodes.end(), node_index) != nodes.end();
}

bool Partition::is_internal(int tensor_id) const {
  return std::find(outputs.begin(), outputs.end(), tensor_id) == outputs.end() &&
         std::find(inputs.begin(), inputs.end(), tensor_id) == inputs.end();
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

namespace {

// A consumer may join when each of its inputs is produced inside the partition or comes from
// outside without depending on the partition (a graph input or a tensor already computed).
bool can_join(const ir::Graph& g, const Partition& p, int node, const std::vector<int>& owner) {
  for (int t : g.nodes[static_cast<size_t>(node)].inputs) {
    if (t < 0) continue;
    int prod = g.tensor(t).producer;
    if (prod < 0 || p.contains_node(prod)) continue;
    if (owner[static_cast<size_t>(prod)] < 0) return false;  // not yet placed: may depend on us
  }
  return true;
}

void grow(const ir::Graph& g, Partition& p, const FusionPattern& pat, std::vector<int>& owner, int part_index) {
  bool grew = true;
  while (grew) {
    grew = false;
    for (size_t i = 0; i < g.nodes.size(); ++i) {
      if (owner[i] >= 0) continue;
      const ir::Node& n = g.nodes[i];
      const bool pointwise = ir::is<PointwiseAttr>(n);
      const bool reduction = ir::is<ReductionAttr>(n);
      if (!(pointwise && pat.epilogue) && !(reduction && pat.terminal_reduction)) continue;
      bool reads_partition = false;
      for (int t : n.inputs) reads_partition |= t >= 0 && g.tensor(t).producer >= 0 && p.contains_node(g.tensor(t).producer);
      // Epilogue ops read only values that are already final: no reading a reduction's result.
      for (int t : n.inputs)
        if (t >= 0 && g.tensor(t).producer >= 0 && p.contains_node(g.tensor(t).producer) &&
            ir::is<ReductionAttr>(g.nodes[static_cast<size_t>(g.tensor(t).producer)]))
          reads_partition = false;
      if (!reads_partition || !can_join(g, p, static_cast<int>(i), owner)) continue;
      p.nodes.push_back(static_cast<int>(i));
      owner[i] = part_index;
      grew = true;
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
