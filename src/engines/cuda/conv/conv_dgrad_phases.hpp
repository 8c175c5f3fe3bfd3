// A conv_dgrad (the backward of a convolution, or a transposed convolution) as forward
// convolutions over DY, one per output phase: the DX pixels whose coordinate is `first` modulo the
// stride in every dim take only the filter taps r = r0 + stride * t, r0 = (first + pad) mod stride,
// so each phase is a plain correlation of DY with a smaller filter whose taps run backwards. No
// tap that falls between DY's pixels is multiplied (the mma.sync dgrad walks every tap and skips
// them one by one). Core 3 runs each phase as an im2col forward convolution
// (kernels/conv_im2col_tma.cuh's DgradPhasesOf) whose epilogue writes a strided sub-grid of DX.
#pragma once
#include <string>
#include <vector>

#include "engines/cuda/conv/conv_problem.hpp"
#include "runtime/cuda/driver_ext.hpp"

namespace dnngraph::cuda::conv {

struct DgradPhase {
  // The phase as a forward convolution over DY: in = DY's sizes and strides, out = the phase's
  // sub-grid of DX, filt = its taps per dim, stride and dilation 1, pad = taps - 1 - (first + pad
  // - r0) / stride (negative where the sub-grid starts inside DY); C = DY's channels, N = DX's,
  // K = taps x C, M = the sub-grid's pixels.
  ConvProblem fprop;
  int32_t first[3] = {0, 0, 0};  // the sub-grid's first DX coordinate per dim (D, H, W)
  int32_t tap0[3] = {0, 0, 0};   // the filter coordinate of the phase's tap t = 0 per dim
  // Register epilogues: the phase's sub-grid of the stored output (dgrad_store_map), its base
  // `store_offset` elements past the output's.
  TensorMapSpec store;
  int64_t store_offset = 0;
};

// The phases of `cp` (a conv_dgrad) that hold at least one DX pixel, each a forward convolution
// that fits the im2col maps; false with the rule that does not hold (dilation, a filter narrower
// than the stride: a phase without taps, a phase's window beyond the maps' range).
bool dgrad_phases(const ConvProblem& cp, std::vector<DgradPhase>& out, std::string& why);

// The phase with the most k steps (taps): the one that sizes resident filters.
const DgradPhase& deepest_phase(const std::vector<DgradPhase>& phases);

// The filters a phase reads: W (KRSC: [DY channels][T][R][S][DX channels]) as a 5D map (DX
// channels, S taps, R taps, T taps, DY channels) of the phase's taps, `stride` taps apart from
// tap0, whose base is W + dgrad_filter_offset; boxes of 64 DX channels x `bk` DY channels (an
// MN-major B tile of the GEMM).
TensorMapSpec dgrad_filter_map(const ConvProblem& cp, const DgradPhase& ph, int bk);
int64_t dgrad_filter_offset(const ConvProblem& cp, const DgradPhase& ph);

// The phase's kernel arguments: its forward convolution's sizes, and where its pixels lie in DX
// (ConvParams' sub_* fields).
ConvParams dgrad_phase_params(const ConvProblem& cp, const DgradPhase& ph);

// Host mirror of dg::DgradPhaseArgs (kernels/conv_im2col_tma.cuh): the phases of one launch,
// blockIdx.y picking one.
inline constexpr int kDgradPhasesPerLaunch = 4;
struct DgradPhaseArgs {
  TensorMap mx[kDgradPhasesPerLaunch];
  TensorMap mw[kDgradPhasesPerLaunch];
  TensorMap my[kDgradPhasesPerLaunch];  // register epilogues only
  ConvParams cp[kDgradPhasesPerLaunch];
};
static_assert(sizeof(DgradPhaseArgs) == 12 * 128 + 4 * sizeof(ConvParams), "must match dg::DgradPhaseArgs");

// The register epilogue's store map of a phase: `rows_map` is DX (or the chain's output of its
// shape) as the epilogue sees it, (channels, pixels, 1) (common/register_epilogue.hpp); the phase's
// sub-grid as (channels, its width, its rows), whose base lies `offset` elements past the output's.
// A 64-row box must be a run of one sub-grid row, and the rows evenly strided: a 1D or 2D
// convolution whose phase width is a multiple of 64 and (several images) whose height is the
// stride times the phase's; false with the rule that does not hold.
bool dgrad_store_map(const ConvProblem& cp, const DgradPhase& ph, const TensorMapSpec& rows_map, TensorMapSpec& out,
                     int64_t& offset, std::string& why);

}  // namespace dnngraph::cuda::conv
