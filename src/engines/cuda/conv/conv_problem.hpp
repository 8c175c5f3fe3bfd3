// A conv_fprop partition as the implicit-GEMM kernels see it: NHWC activations, KTRSC filters,
// sizes padded to three spatial dims, the GEMM view (pixels x output channels x taps*channels), and
// the epilogue axes (output N and spatial dims fold into the GEMM row, K is the column).
#pragma once
#include <string>

#include "engines/cuda/conv/conv_params.hpp"
#include "engines/cuda/common/epilogue_layout.hpp"

namespace dnngraph::cuda::conv {

struct ConvProblem {
  DataType dtype = DataType::BFLOAT16;  // BFLOAT16, HALF, or FLOAT (multiplied as TF32 where the graph allows)
  int x = -1, w = -1;  // IR tensor ids
  ConvParams params{};  // sizes and strides; pointers and tiles are filled at execute
  EpilogueAxes axes;
  bool dgrad = false;   // conv_dgrad: x is DY, the GEMM output is DX
  bool wgrad = false;   // conv_wgrad: x is X (gathered as B), w is DY (A), the GEMM output is DW
  // conv_fprop of FLOAT inputs the graph does not let round to TF32: only 3xTF32 (core 3's
  // tf32x3=1) multiplies them.
  bool exact_fp32 = false;
};

// Checks and describes; false with `why` (the node, the tensor and the rule).
bool describe_conv_fprop(const Partition& p, ConvProblem& out, std::string& why);
// Channel counts below are multiples of 8 (FLOAT: 4), one 16-byte chunk.
// conv_dgrad: DY NHWC (K a multiple of 8), W KRSC, DX NHWC (C a multiple of 8).
bool describe_conv_dgrad(const Partition& p, ConvProblem& out, std::string& why);
// conv_wgrad: DY packed NHWC (K a multiple of 8), X NHWC (C a multiple of 8), DW KRSC.
bool describe_conv_wgrad(const Partition& p, ConvProblem& out, std::string& why);
// Any of the three, by the anchor's op.
bool describe_conv(const Partition& p, ConvProblem& out, std::string& why);

}  // namespace dnngraph::cuda::conv
