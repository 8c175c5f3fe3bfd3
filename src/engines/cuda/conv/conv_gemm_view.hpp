// A convolution that is a plain GEMM over its activation: 1x1 filters, unit strides, no padding
// and the pixels of the NHWC activation at one stride, so X is a row-major [pixels, C] matrix and
// the filters a K-major [K, C] one. The wgmma core then loads both with 2D TMA boxes, exactly as
// the matmul engine loads its operands (kernels/gemm_wgmma.cuh), with no im2col gather.
#pragma once
#include <string>

#include "engines/cuda/conv/conv_problem.hpp"
#include "engines/cuda/gemm/gemm_params.hpp"
#include "runtime/cuda/driver_ext.hpp"

namespace dnngraph::cuda::conv {

// Whether `cp` is such a convolution (fprop only); the stride between its pixels, in elements, or
// the rule it breaks in `why`.
bool gemm_view(const ConvProblem& cp, int64_t& pixel_stride, std::string& why);

// The GEMM's arguments (M pixels x N output channels x K input channels, one batch, no split or
// `splits` k ranges with their partial sums at `ws`) for the pointers and tiles in `p`.
gemm::GemmParams gemm_view_params(const ConvParams& p, int64_t pixel_stride, int splits, void* ws);

// A (k, rows, 1) TMA map of `rows` rows of k elements, `row_elems` apart (the row stride rounded
// up to TMA's 16 bytes), boxes of one 128-byte k step x box_rows rows: a GEMM view's activation
// and (cores 1 and 2) a conv's filters.
TensorMapSpec k_rows_map(DataType dtype, int64_t k, int64_t rows, int64_t row_elems, int box_rows);

// The activation's TMA map: (C, pixels, 1) innermost first, boxes of one 128-byte k step x 128 pixels.
TensorMapSpec gemm_view_activation_map(const ConvProblem& cp, int64_t pixel_stride);

}  // namespace dnngraph::cuda::conv
