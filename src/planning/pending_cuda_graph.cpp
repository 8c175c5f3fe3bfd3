// SCAFFOLDING: delete when src/planning/cuda_graph.cpp lands.
#include "dnngraph/graph.hpp"
namespace dnngraph {
Status Graph::populate_cuda_graph(const Handle&, const VariantPack&, void*, void*) const { return {ErrorCode::GRAPH_NOT_SUPPORTED, "pending"}; }
Status Graph::update_cuda_graph(const Handle&, const VariantPack&, void*, void*) const { return {ErrorCode::GRAPH_NOT_SUPPORTED, "pending"}; }
}  // namespace dnngraph
