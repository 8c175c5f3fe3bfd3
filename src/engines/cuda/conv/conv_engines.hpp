// cuda_conv_implicit_gemm: conv_fprop (1D/2D/3D, stride, dilation, padding) on NHWC activations
// and KRSC filters as an implicit GEMM on the mma.sync tensor-core core, with the partition's
// epilogue fused through the shared CUDA emitter.
#pragma once
#include "planning/engine.hpp"

namespace dnngraph::cuda {

const Engine& conv_implicit_gemm_engine();

}  // namespace dnngraph::cuda
