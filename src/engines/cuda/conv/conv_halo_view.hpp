// A convolution whose activation tiles are halo boxes (kernels/conv_halo_tma.cuh, core 4): unit
// strides, 16-bit inputs, the output plane walked as a virtual grid Wv = Wo + (S - 1) x dil_w
// columns wide, so that every filter tap's operand is one tiled TMA box read from a shifted row.
// Each input pixel then crosses L2 once per tile and channel block instead of once per tap.
#pragma once
#include <cstdint>
#include <string>

#include "engines/cuda/conv/conv_problem.hpp"
#include "runtime/cuda/driver_ext.hpp"

namespace dnngraph::cuda::conv {

// Host mirror of dg::HaloTiles (kernels/conv_halo_tma.cuh), field for field.
struct HaloTiles {
  int32_t wv = 0;               // virtual columns
  int32_t box_rows = 0;         // input rows per halo box
  int32_t tiles_per_plane = 0;  // 128-pixel tiles per (image, output depth) plane
  int32_t stage_bytes = 0;      // one box's shared memory, 1024-aligned
  int32_t box_bytes = 0;        // the bytes one box load delivers
  int32_t ho = 0, wo = 0, pad_ = 0;
  uint64_t div_plane = 0, div_wv = 0;  // codegen::fast_div_magic of tiles_per_plane x 128 and wv
};
static_assert(sizeof(HaloTiles) == 4 * 8 + 8 * 2, "must match dg::HaloTiles");

// Host mirror of dg::HaloOutput: the register epilogue's stored tensor and its row stride.
struct HaloOutput {
  void* y = nullptr;
  int64_t row_bytes = 0;
};

// A halo box's shared memory at most: two boxes, a filter ring and the staging fit 227 KB.
inline constexpr int64_t kHaloMaxStageBytes = 64 * 1024;

// Whether `cp` fits the halo tiles (conv_fprop, 16-bit, unit strides, box and grid limits), its
// geometry in `t`; the rule it breaks in `why`.
bool halo_view(const ConvProblem& cp, HaloTiles& t, std::string& why);
// Tiles along M: (images x output depth) planes x tiles per plane.
int64_t halo_tiles_m(const ConvParams& p, const HaloTiles& t);
// The activation as a tiled (C, W, H, D, N) map, boxes of 64 channels x Wv x box_rows x 1 x 1.
TensorMapSpec halo_activation_map(const ConvProblem& cp, const HaloTiles& t);

}  // namespace dnngraph::cuda::conv
