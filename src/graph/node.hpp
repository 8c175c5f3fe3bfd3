// NodeSpec: one operation as the user built it, before lowering to the IR.
#pragma once
#include <string>
#include <vector>

#include "dnngraph/status.hpp"
#include "dnngraph/tensor.hpp"
#include "graph/op_attr.hpp"

namespace dnngraph {

struct GraphDefaults {
  DataType io = DataType::NOT_SET;
  DataType intermediate = DataType::NOT_SET;
  DataType compute = DataType::NOT_SET;
};

struct NodeSpec {
  std::string name;
  OpAttr attr;
  std::vector<TensorPtr> inputs;   // by slot; optional slots may be null
  std::vector<TensorPtr> outputs;  // by slot; all non-null, created by the builder
};

// Shape, stride and type inference plus validation of one node, whose inputs are already inferred.
// Fills in what the user left out of the outputs and checks what the user set. Dispatches on the
// attribute type to the op family's `infer` (src/graph/<family>.cpp).
Status infer_node(NodeSpec& node, const GraphDefaults& defaults);

}  // namespace dnngraph
