// SCAFFOLDING: delete when src/graph/json.cpp lands.
#include "dnngraph/graph.hpp"
namespace dnngraph {
std::string Graph::to_json() const { return "{}"; }
Status Graph::from_json(const std::string&, Graph&) { return {ErrorCode::GRAPH_NOT_SUPPORTED, "pending"}; }
}  // namespace dnngraph
