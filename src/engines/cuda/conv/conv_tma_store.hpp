// The register epilogue of the wgmma convolution cores (knob epilogue=1; kernels/
// epilogue_tma_store.cuh): which fused epilogues it serves, and the TMA map of the output it stores
// through. Others (residual inputs that vary along the pixels, reductions such as AMAX, several
// outputs, outputs that are not 16-bit or not row-contiguous) keep the staged epilogue.
#pragma once
#include <string>

#include "engines/cuda/conv/conv_problem.hpp"
#include "runtime/cuda/driver_ext.hpp"

namespace dnngraph::cuda::conv {

// Whether `epi` (over [pixels, output channels]) runs in registers with a TMA store; the rule it
// breaks in `why`.
bool register_epilogue(const EpiloguePlan& epi, const ConvProblem& cp, std::string& why);
// The stored output's IR tensor id (register_epilogue holds).
int stored_tensor(const EpiloguePlan& epi);
// The output as a 2D (channels, pixels) map of 64-row boxes of one 128-byte row, 128-byte swizzled.
TensorMapSpec output_map(const EpiloguePlan& epi, const ConvProblem& cp);

}  // namespace dnngraph::cuda::conv
