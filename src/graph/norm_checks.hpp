// Checks shared by the two norm family files (norm.cpp: the forward norms of inference;
// norm_training.cpp: the training forwards and the backwards), defined in norm.cpp.
#pragma once
#include <string>
#include <vector>

#include "graph/op_traits.hpp"

namespace dnngraph::norm_checks {

// A parameter tensor (mean, scale, bias, ...) must have exactly `want` dims.
Status check_param(const NodeSpec& node, const TensorAttr* t, const char* slot_name, const std::vector<int64_t>& want,
                   const char* why);
// X is a well formed input of rank 2 or more (`shape_name` says what its dims are).
Status check_x(const NodeSpec& node, const TensorAttr* x, const char* shape_name);
// A pass-by-value scalar input (epsilon, momentum) named `what` in messages; `setter` says how to set it.
Status check_scalar(const NodeSpec& node, const TensorAttr* t, const char* what, const char* setter);
inline Status check_epsilon(const NodeSpec& node, const TensorAttr* eps) {
  return check_scalar(node, eps, "epsilon", "set_epsilon");
}

}  // namespace dnngraph::norm_checks
