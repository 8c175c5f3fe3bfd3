// Status: every fallible call returns one; nothing in the API throws or aborts.
#pragma once
#include <string>
#include <utility>

#include "dnngraph/export.hpp"

DNNGRAPH_API_BEGIN
namespace dnngraph {

enum class ErrorCode : int {
  OK = 0,
  ATTRIBUTE_NOT_SET,             // a required attribute or tensor property is missing
  INVALID_VALUE,                 // a value breaks a rule (negative stride, unknown mode, ...)
  SHAPE_DEDUCTION_FAILED,        // dims/ranks of an op's operands do not agree
  INVALID_DATA_TYPE,             // a data type or a combination of them is not allowed
  INVALID_GRAPH,                 // cycles, tensors used before produced, duplicate uids, ...
  INVALID_VARIANT_PACK,          // a tensor missing from the pack, a null or wrong-device pointer
  WORKSPACE_TOO_SMALL,
  GRAPH_NOT_SUPPORTED,           // no engine accepts (part of) the graph
  GRAPH_EXECUTION_PLAN_CREATION_FAILED,
  GRAPH_EXECUTION_FAILED,
  INVALID_CALL_ORDER,            // e.g. execute before build_plans
  DEVICE_NOT_AVAILABLE,          // a device was asked for that this machine cannot give
  CUDA_API_FAILED,
  COMPILATION_FAILED,            // NVRTC or another JIT compiler rejected generated code
  SERIALIZATION_FAILED,          // corrupt, truncated, foreign-version or foreign-device bytes
  IO_ERROR,
  INTERNAL_ERROR,
};

std::string_view to_string(ErrorCode c);

class [[nodiscard]] Status {
 public:
  Status() = default;
  Status(ErrorCode code, std::string message) : code_(code), message_(std::move(message)) {}
  static Status success() { return {}; }

  bool ok() const { return code_ == ErrorCode::OK; }
  bool is_good() const { return ok(); }  // cuDNN frontend spelling
  bool is_bad() const { return !ok(); }
  ErrorCode code() const { return code_; }
  ErrorCode get_code() const { return code_; }
  const std::string& message() const { return message_; }
  const std::string& get_message() const { return message_; }
  // "CODE: message", for printing.
  std::string to_string() const;

 private:
  ErrorCode code_ = ErrorCode::OK;
  std::string message_;
};

}  // namespace dnngraph
DNNGRAPH_API_END
