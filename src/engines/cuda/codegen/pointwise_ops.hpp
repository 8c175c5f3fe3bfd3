// Pointwise modes as fp32 CUDA expressions, for the emitter.
#pragma once
#include <string>

#include "dnngraph/attributes.hpp"

namespace dnngraph::cuda::codegen {

// The expression computing mode(a, b, c) in fp32 (operands are expressions too). False for modes
// that are not plain functions of their operands (GEN_INDEX, NOT_SET).
bool pointwise_expr(const PointwiseAttr& p, const std::string& a, const std::string& b, const std::string& c,
                    std::string& out);

}  // namespace dnngraph::cuda::codegen
