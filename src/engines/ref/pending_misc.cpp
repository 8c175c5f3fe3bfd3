// SCAFFOLDING: delete this file when these families land in their own files.
#include "engines/ref/ops.hpp"
namespace dnngraph::ref {
Status run(const ReductionAttr&, const NodeArgs&) { return {ErrorCode::GRAPH_NOT_SUPPORTED, "pending"}; }
Status run(const BatchnormInferenceAttr&, const NodeArgs&) { return {ErrorCode::GRAPH_NOT_SUPPORTED, "pending"}; }
Status run(const LayernormAttr&, const NodeArgs&) { return {ErrorCode::GRAPH_NOT_SUPPORTED, "pending"}; }
Status run(const RmsnormAttr&, const NodeArgs&) { return {ErrorCode::GRAPH_NOT_SUPPORTED, "pending"}; }
Status run(const ResampleAttr&, const NodeArgs&) { return {ErrorCode::GRAPH_NOT_SUPPORTED, "pending"}; }
Status run(const ReshapeAttr&, const NodeArgs&) { return {ErrorCode::GRAPH_NOT_SUPPORTED, "pending"}; }
Status run(const TransposeAttr&, const NodeArgs&) { return {ErrorCode::GRAPH_NOT_SUPPORTED, "pending"}; }
Status run(const SliceAttr&, const NodeArgs&) { return {ErrorCode::GRAPH_NOT_SUPPORTED, "pending"}; }
Status run(const ConcatenateAttr&, const NodeArgs&) { return {ErrorCode::GRAPH_NOT_SUPPORTED, "pending"}; }
}
