// JSON encoding of op attributes (docs/graph-json.md). Used by the graph JSON reader/writer and by
// ir::Graph::fingerprint.
#pragma once
#include <string>

#include <nlohmann/json.hpp>

#include "dnngraph/status.hpp"
#include "graph/op_attr.hpp"

namespace dnngraph {

// {"op": "conv_fprop", "pre_padding": [...], ...}: every attribute, tensor-valued ones excluded.
nlohmann::json attr_to_json(const OpAttr& attr);
// Reads an attribute object written by attr_to_json; `where` prefixes error messages.
Status attr_from_json(const nlohmann::json& j, OpAttr& attr, const std::string& where);

}  // namespace dnngraph
