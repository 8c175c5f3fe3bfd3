// cuda_conv_implicit_gemm: conv_fprop (1D/2D/3D, stride, dilation, padding) on NHWC activations
// and KRSC filters as an implicit GEMM, on the Hopper wgmma core (knob core=1: cp.async im2col
// gathers + TMA filters; core=2: 1x1 convolutions as plain GEMMs, both operands by TMA; core=3:
// TMA im2col loads of the activation, one producer thread; core=4: unit-stride halo tiles, every
// tap's operand read from one box per tile and channel block) or the mma.sync core (core=0, any
// sm_80+); conv_dgrad (the transposed convolution) on core=3 by phases and on the mma.sync core,
// conv_wgrad on the mma.sync core. The partition's epilogue is fused through the CUDA emitter.
#pragma once
#include <string>

#include "planning/engine.hpp"

namespace dnngraph::cuda {

const Engine& conv_implicit_gemm_engine();

namespace conv {
// The generated kernel source for a conv_fprop, conv_dgrad or conv_wgrad partition and tile
// configuration, without a device (for the NVRTC compile tests).
bool fprop_source_for_test(const Partition& p, int core, int bm, int bn, int stages, std::string& src,
                           std::string& why, int splits = 1, bool pingpong = false, bool resident = false,
                           int cluster = 1, int epilogue = 0, int cluster_n = 1, bool split_cluster = false);
}  // namespace conv

}  // namespace dnngraph::cuda
