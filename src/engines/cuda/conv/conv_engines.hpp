// cuda_conv_implicit_gemm: conv_fprop (1D/2D/3D, stride, dilation, padding) on NHWC activations
// and KRSC filters as an implicit GEMM, on the Hopper wgmma core (knob core=1: cp.async im2col
// gathers + TMA filters) or the mma.sync core (core=0, any sm_80+); conv_dgrad (the transposed
// convolution) on the mma.sync core. The partition's epilogue is fused through the CUDA emitter.
#pragma once
#include "planning/engine.hpp"

namespace dnngraph::cuda {

const Engine& conv_implicit_gemm_engine();
// cuda_conv_depthwise_direct: conv_fprop with groups == C == K on NHWC activations, direct, with
// the fused epilogue (src/engines/cuda/conv/depthwise.cpp).
const Engine& conv_depthwise_direct_engine();

}  // namespace dnngraph::cuda
