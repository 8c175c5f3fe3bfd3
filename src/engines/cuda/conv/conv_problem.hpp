// A conv_fprop partition as the implicit-GEMM kernels see it: NHWC activations, KTRSC filters,
// sizes padded to three spatial dims, the GEMM view (pixels x output channels x taps*channels), and
// the epilogue axes (output N and spatial dims fold into the GEMM row, K is the column).
#pragma once
#include <string>

#include "engines/cuda/conv/conv_params.hpp"
#include "engines/cuda/gemm/epilogue_layout.hpp"

namespace dnngraph::cuda::conv {

struct ConvProblem {
  DataType dtype = DataType::BFLOAT16;
  int x = -1, w = -1;  // IR tensor ids
  ConvParams params{};  // sizes and strides; pointers and tiles are filled at execute
  gemm::EpilogueAxes axes;
};

// Checks and describes; false with `why` (the node, the tensor and the rule).
bool describe_conv_fprop(const Partition& p, ConvProblem& out, std::string& why);

// The generated kernel source for a partition and tile configuration, without a device (for the
// NVRTC compile tests). Defined in conv_engines.cpp.
bool fprop_source_for_test(const Partition& p, int bm, int bn, int stages, std::string& src, std::string& why);

}  // namespace dnngraph::cuda::conv
