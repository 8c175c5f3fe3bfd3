// SCAFFOLDING: delete this file when these families land in their own files.
#include "engines/ref/ops.hpp"
namespace dnngraph::ref {
Status run(const ConvFpropAttr&, const NodeArgs&) { return {ErrorCode::GRAPH_NOT_SUPPORTED, "pending"}; }
Status run(const ConvDgradAttr&, const NodeArgs&) { return {ErrorCode::GRAPH_NOT_SUPPORTED, "pending"}; }
Status run(const ConvWgradAttr&, const NodeArgs&) { return {ErrorCode::GRAPH_NOT_SUPPORTED, "pending"}; }
Status run(const MatmulAttr&, const NodeArgs&) { return {ErrorCode::GRAPH_NOT_SUPPORTED, "pending"}; }
}
