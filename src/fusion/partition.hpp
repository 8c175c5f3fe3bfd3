// Partition: a connected piece of the IR that one engine runs as one unit (ideally one kernel).
#pragma once
#include <string>
#include <vector>

#include "dnngraph/status.hpp"
#include "graph/ir.hpp"

namespace dnngraph {

struct Partition {
  const ir::Graph* graph = nullptr;
  // Each list sorted ascending (finish_partition sorts them); node indices ascend in topological order.
  std::vector<int> nodes;    // node indices
  std::vector<int> inputs;   // tensor ids read from outside the partition (graph inputs included)
  std::vector<int> outputs;  // tensor ids written here and read outside, or graph outputs
  int anchor = -1;           // the conv/matmul/sdpa/norm node it is built around; -1 if none
  std::string pattern;       // the fusion pattern that formed it

  const ir::Node& node(size_t i) const { return graph->nodes[static_cast<size_t>(nodes[i])]; }
  const ir::Tensor& tensor(int id) const { return graph->tensor(id); }
  bool contains_node(int node_index) const;
  bool is_internal(int tensor_id) const;  // produced and consumed only inside, and virtual
};

// Splits the graph into partitions by the fusion patterns (src/fusion/patterns.cpp).
Status partition_graph(const ir::Graph& graph, std::vector<Partition>& out);
// Merges pure pointwise partitions of one domain that read the same tensors (or one the other's
// results) into one, where that makes no cycle, and reorders the list topologically
// (src/fusion/pointwise_merge.cpp; partition_graph calls it).
void merge_pointwise_siblings(const ir::Graph& graph, std::vector<Partition>& parts);
// When no engine but ref accepts a fused partition, the planner splits it: first into its anchor
// and the rest of it (so a pointwise engine still fuses the epilogue), then into single nodes.
// split_anchor_from_epilogue is empty for a partition without an anchor or with fewer than 3 nodes.
std::vector<Partition> split_anchor_from_epilogue(const Partition& p);
std::vector<Partition> split_per_node(const Partition& p);
// Computes inputs/outputs of a partition from its node list.
void finish_partition(Partition& p);
// A hash of what the partition computes, whatever its place in the graph: its nodes' ops, attrs
// and compute types, its tensors' types, dims, strides, baked values and whether they are
// internal, and how they connect (tensors numbered in order of first use), plus the graph's TF32
// switch; not ids, uids or names. Partitions with equal fingerprints are the same problem: an
// engine may reuse what it worked out for one (cuDNN's heuristics, say) for the other.
uint64_t structural_fingerprint(const Partition& p);

}  // namespace dnngraph
