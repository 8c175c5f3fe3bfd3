// Scaffolding until the JSON format lands: encodes the op and its mode only.
#include "graph/json_attr.hpp"

namespace dnngraph {

nlohmann::json attr_to_json(const OpAttr& attr) {
  nlohmann::json j;
  j["op"] = std::string(op_name(attr));
  return j;
}

Status attr_from_json(const nlohmann::json&, OpAttr&, const std::string& where) {
  return {ErrorCode::INVALID_VALUE, where + ": JSON attributes are not readable yet"};
}

}  // namespace dnngraph
