// cuda_conv_implicit_gemm's generated kernels: what a plan knows of its problem (ConvPieces) and
// the kernel source of a setting (cores 0-4), with the filters' TMA map of the wgmma cores.
#pragma once
#include <string>
#include <vector>

#include "engines/cuda/common/epilogue_layout.hpp"
#include "engines/cuda/conv/conv_dgrad_phases.hpp"
#include "engines/cuda/conv/conv_halo_view.hpp"
#include "engines/cuda/conv/conv_knobs.hpp"
#include "engines/cuda/conv/conv_problem.hpp"
#include "runtime/cuda/driver_ext.hpp"

namespace dnngraph::cuda::conv {

inline constexpr const char* kFpropKernel = "dg_conv_fprop";

struct ConvPieces {
  ConvProblem cp;
  EpiloguePlan epi;
  int64_t pixel_stride = 0;          // core 2: the activation's row stride (conv_gemm_view.hpp)
  std::vector<DgradPhase> phases;    // core 3 running a conv_dgrad: its phases (conv_dgrad_phases.hpp)
  HaloTiles halo;                    // core 4: the halo geometry (conv_halo_view.hpp)
};

// The kernel source (entry kFpropKernel) of setting c for the partition graph g.
std::string kernel_source(const ConvPieces& pc, const ConvConfig& c, const ir::Graph& g);

// The filters as a K-major [Kout][taps * C] matrix for TMA: boxes of one 128-byte k step (64
// 16-bit or 32 fp32 elements) x tile_n rows.
TensorMapSpec filter_map(const ConvProblem& cp, const ConvConfig& c);

}  // namespace dnngraph::cuda::conv
