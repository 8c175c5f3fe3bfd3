// A convolution whose activation tiles the copy engine can gather itself: TMA in im2col mode
// (cuTensorMapEncodeIm2col) loads 128 output pixels x one 128-byte channel block of one filter
// tap per instruction (kernels/conv_im2col_tma.cuh). The GEMM's k then runs over (tap, channel
// block) pairs, so the filters are read as a (C, taps, K) map whose channels past C are zeros.
#pragma once
#include <string>

#include "engines/cuda/conv/conv_problem.hpp"
#include "runtime/cuda/driver_ext.hpp"

namespace dnngraph::cuda::conv {

// Whether `cp` (fprop) fits the im2col maps' limits (bounding-box corners and tap offsets within
// the rank's range, traversal strides up to 8); the rule it breaks in `why`.
bool im2col_view(const ConvProblem& cp, std::string& why);
// 4 (C, W, H, N: 1D and 2D convolutions) or 5 (C, W, H, D, N: 3D).
int im2col_rank(const ConvParams& p);
// k steps of BK channels: taps x ceil(C / BK).
int64_t im2col_ktiles(const ConvParams& p, int bk);

// The NHWC (NDHWC) activation as a TMA tensor of `rank` 4 (C, W, H, N) or 5 (C, W, H, D, N):
// dims innermost first and the byte strides of dims 1.., a dim of one element given the packed
// stride; the im2col map's and the halo tiles' (conv_halo_view.hpp).
void activation_layout(const ConvProblem& cp, int rank, uint64_t (&dims)[5], uint64_t (&strides_bytes)[4]);
// The activation's map: `bk` channels x `pixels` pixels per load (128: a tile's; fewer: a
// cluster CTA's piece of it).
Im2colMapSpec im2col_activation_map(const ConvProblem& cp, int bk, int pixels = 128);
// The filters as (C, taps, K), boxes of `bk` channels x 1 tap x `bn` output channels.
TensorMapSpec im2col_filter_map(const ConvProblem& cp, int bk, int bn);

}  // namespace dnngraph::cuda::conv
