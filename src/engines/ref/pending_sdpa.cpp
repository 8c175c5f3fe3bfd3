// SCAFFOLDING: delete this file when these families land in their own files.
#include "engines/ref/ops.hpp"
namespace dnngraph::ref {
Status run(const SdpaAttr&, const NodeArgs&) { return {ErrorCode::GRAPH_NOT_SUPPORTED, "pending"}; }
}
