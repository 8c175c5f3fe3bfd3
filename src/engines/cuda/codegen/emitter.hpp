// The CUDA emitter: an expression program and its layout become CUDA C++ source.
//
// emit_epilogue() writes `struct Epilogue` (see kernels/dg_pointwise.cuh for its members): loads of
// every operand as vectors of V elements, the expression list as straight-line fp32 code, stores
// rounded to each output's type, and reductions folded in registers. A GEMM or convolution kernel
// includes it and calls load/apply per output tile element with its accumulator as `anchor`;
// emit_pointwise() wraps it into the grid-stride pointwise kernels and the reduction finalizer.
#pragma once
#include <string>

#include "engines/cuda/codegen/layout.hpp"

namespace dnngraph::cuda::codegen {

inline constexpr const char* kVectorKernel = "dg_pointwise_vec";
inline constexpr const char* kScalarKernel = "dg_pointwise_scalar";
inline constexpr const char* kFinalizeKernel = "dg_finalize";

// `register_store`: also apply_regs and kStoreType, the chain handing its one stored value back to
// the caller (the wgmma cores' register epilogue, kernels/epilogue_tma_store.cuh); the program
// stores one tensor and its reductions, if any, are full ones (AMAX).
std::string emit_epilogue(const expr::Program& prog, const ir::Graph& g, const Layout& L, bool register_store = false);
// The whole translation unit: includes, the epilogue, and extern "C" kernels named above (the
// scalar one only when vec > 1, the finalizer only when L.needs_finalize()).
std::string emit_pointwise(const expr::Program& prog, const ir::Graph& g, const Layout& L);

// The reduction finalizer's body: a call per reduction not accumulated in its output. `blocks`
// (an expression) counts each full reduction's partials; `deterministic`: they fold in two passes.
std::string emit_finalize_calls(const Layout& L, const std::string& blocks, bool deterministic);

// A float constant as CUDA source ("1.500000000e+00f"; inf and NaN by bit pattern).
std::string float_literal(double v);

}  // namespace dnngraph::cuda::codegen
