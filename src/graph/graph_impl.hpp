// GraphImpl: what a Graph holds, from the user's nodes to the IR and the plans.
#pragma once
#include <memory>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "dnngraph/graph.hpp"
#include "graph/ir.hpp"
#include "graph/node.hpp"

namespace dnngraph {

struct PlanSet;  // src/planning/plan_set.hpp

enum class Stage : int { BUILDING = 0, VALIDATED, LOWERED, PLANS_CREATED, SUPPORT_CHECKED, PLANS_BUILT };

struct GraphImpl {
  std::string name;
  GraphDefaults defaults;
  bool dynamic_shapes = false;
  bool allow_tf32 = false;
  std::shared_ptr<KernelCache> kernel_cache;
  std::vector<std::string> selected_engines, deselected_engines;

  std::vector<TensorPtr> tensors;  // declared with tensor()
  std::vector<NodeSpec> nodes;     // in the order the user built them
  int64_t node_counter = 0;
  int64_t tensor_counter = 0;
  Stage stage = Stage::BUILDING;
  Status build_error;              // the first composite that could not be built (validate returns it)
  std::vector<int> topo_order;     // node indices, after validate

  std::unique_ptr<ir::Graph> ir;                         // after build_operation_graph
  std::unordered_map<const TensorAttr*, int> tensor_id;  // TensorAttr -> IR tensor id
  std::unordered_map<int64_t, int> uid_id;               // uid -> IR tensor id, of non-virtual tensors
  std::vector<std::pair<TensorPtr, uint64_t>> lowered_revisions;  // each tensor as the IR saw it
  std::shared_ptr<PlanSet> plans;                        // after create_execution_plans
  std::unique_ptr<Handle> handle;                        // from build_operation_graph

  GraphImpl();
  ~GraphImpl();
  // Any change to the graph drops what was derived from it.
  void invalidate();
  // Whether a tensor was changed (dims, strides, type, uid, ...) after build_operation_graph;
  // `which` names the first such tensor.
  bool tensors_changed_since_lowering(std::string& which) const;
};

inline GraphImpl& impl_of(const Graph& g) { return *g.impl_; }

// The graph's tensor (declared, or a node's input or output) that has `uid`; null when none has.
TensorPtr tensor_with_uid(const GraphImpl& g, int64_t uid);

// Topologically orders nodes, infers and validates every node, assigns uids. (src/graph/validate.cpp)
Status validate_graph(GraphImpl& g);
// Builds the IR from validated nodes. (src/graph/lower.cpp)
Status lower_to_ir(GraphImpl& g);

}  // namespace dnngraph
