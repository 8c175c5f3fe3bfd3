// The input types the CUDA tensor-core engines (matmul and implicit-GEMM convolution) take:
// BFLOAT16 or HALF, both operands the same; FLOAT x FLOAT rounded to TF32 where the graph allows
// it; fp32 accumulation.
#pragma once
#include <string>

#include "planning/engine.hpp"

namespace dnngraph::cuda {

// The rule for FLOAT inputs, for rejections.
inline constexpr const char* kTf32Rule =
    "FLOAT inputs run on tensor cores as TF32 only when the graph allows it (Graph::set_allow_tf32(true))";

// Whether node n's operands a and b and its compute type fit; false with `why` naming the node,
// the tensor (a) and the rule.
bool check_tensor_core_types(const ir::Graph& g, const ir::Node& n, const ir::Tensor& a, const ir::Tensor& b,
                             std::string& why);

}  // namespace dnngraph::cuda
