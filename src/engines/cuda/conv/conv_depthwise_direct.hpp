// cuda_conv_depthwise_direct: conv_fprop with groups == C == K (one filter per channel) on NHWC
// activations, computed directly (kernels/conv_depthwise.cuh), with the fused epilogue.
#pragma once
#include <string>

#include "planning/engine.hpp"

namespace dnngraph::cuda {

const Engine& conv_depthwise_direct_engine();

namespace conv {
// The kernel source of a depthwise partition without a device (for the NVRTC compile tests);
// strip 0 = the per-pixel kernel.
bool depthwise_source_for_test(const Partition& p, int strip, std::string& src, std::string& why);
}  // namespace conv

}  // namespace dnngraph::cuda
