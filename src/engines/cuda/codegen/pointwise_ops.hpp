// Pointwise modes as fp32 CUDA expressions, for the emitter.
#pragma once
#include <string>

#include "dnngraph/attributes.hpp"
#include "fusion/expr.hpp"

namespace dnngraph::cuda::codegen {

// The expression computing mode(a, b, c) in fp32 (operands are expressions too). False for modes
// that are not plain functions of their operands (GEN_INDEX, NOT_SET) and for modes the emitter
// has no formula for (a mode added to pointwise_modes.def without one).
bool pointwise_expr(const PointwiseAttr& p, const std::string& a, const std::string& b, const std::string& c,
                    std::string& out);

// Rough SASS instructions per element of mode's expression: 1 for arithmetic, comparisons, clamps
// and selects; 8 for one special-function call or IEEE division (exp, log, tanh, sigmoid, rsqrt);
// 24 for erf-based, power and trigonometric ones. What the register epilogue's size budget counts
// (common/register_epilogue.cpp): it is unrolled over every accumulator of a thread.
int expression_cost(PointwiseMode m);

// Checked when a plan is laid out, so that an engine rejects such a program with this reason
// instead of emitting a kernel that cannot compile.
bool has_expressions(const expr::Program& prog, std::string& why_not);

// Ops the generator lowers whose CUDA kernels have not yet run against ref on a GPU (genstats's
// two sums): refused, with this reason, until a GPU run has checked them (common/gpu_checked.hpp:
// DNNGRAPH_UNCHECKED_ENGINES=genstats offers them for that run).
bool checked_on_gpu(const Partition& p, std::string& why_not);

}  // namespace dnngraph::cuda::codegen
