// SCAFFOLDING: delete this file when these families land in their own files.
#include "graph/families.hpp"
#include "graph/infer_util.hpp"
namespace dnngraph {
Status infer(const ConvFpropAttr&, NodeSpec& n, const GraphDefaults&) { return node_error(ErrorCode::GRAPH_NOT_SUPPORTED, n, nullptr, "pending"); }
Status infer(const ConvDgradAttr&, NodeSpec& n, const GraphDefaults&) { return node_error(ErrorCode::GRAPH_NOT_SUPPORTED, n, nullptr, "pending"); }
Status infer(const ConvWgradAttr&, NodeSpec& n, const GraphDefaults&) { return node_error(ErrorCode::GRAPH_NOT_SUPPORTED, n, nullptr, "pending"); }
Status infer(const MatmulAttr&, NodeSpec& n, const GraphDefaults&) { return node_error(ErrorCode::GRAPH_NOT_SUPPORTED, n, nullptr, "pending"); }
}
