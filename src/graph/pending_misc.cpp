// SCAFFOLDING: delete this file when these families land in their own files.
#include "graph/families.hpp"
#include "graph/infer_util.hpp"
namespace dnngraph {
Status infer(const ReductionAttr&, NodeSpec& n, const GraphDefaults&) { return node_error(ErrorCode::GRAPH_NOT_SUPPORTED, n, nullptr, "pending"); }
Status infer(const BatchnormInferenceAttr&, NodeSpec& n, const GraphDefaults&) { return node_error(ErrorCode::GRAPH_NOT_SUPPORTED, n, nullptr, "pending"); }
Status infer(const LayernormAttr&, NodeSpec& n, const GraphDefaults&) { return node_error(ErrorCode::GRAPH_NOT_SUPPORTED, n, nullptr, "pending"); }
Status infer(const RmsnormAttr&, NodeSpec& n, const GraphDefaults&) { return node_error(ErrorCode::GRAPH_NOT_SUPPORTED, n, nullptr, "pending"); }
Status infer(const ResampleAttr&, NodeSpec& n, const GraphDefaults&) { return node_error(ErrorCode::GRAPH_NOT_SUPPORTED, n, nullptr, "pending"); }
Status infer(const ReshapeAttr&, NodeSpec& n, const GraphDefaults&) { return node_error(ErrorCode::GRAPH_NOT_SUPPORTED, n, nullptr, "pending"); }
Status infer(const TransposeAttr&, NodeSpec& n, const GraphDefaults&) { return node_error(ErrorCode::GRAPH_NOT_SUPPORTED, n, nullptr, "pending"); }
Status infer(const SliceAttr&, NodeSpec& n, const GraphDefaults&) { return node_error(ErrorCode::GRAPH_NOT_SUPPORTED, n, nullptr, "pending"); }
Status infer(const ConcatenateAttr&, NodeSpec& n, const GraphDefaults&) { return node_error(ErrorCode::GRAPH_NOT_SUPPORTED, n, nullptr, "pending"); }
}
