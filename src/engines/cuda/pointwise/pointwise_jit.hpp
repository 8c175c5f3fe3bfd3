// cuda_pointwise_jit: one generated kernel for any pointwise DAG with reductions and casts, with
// broadcasting and arbitrary strides, 16-byte vector access where the strides allow, compiled by
// NVRTC for the device and cached. Full reductions: warp shuffle + block tree + one atomic per
// block, or (knob deterministic=1, or DNNGRAPH_DETERMINISTIC=1) per-block partials folded in a fixed
// order by a second small kernel. Partial reductions: warp-aggregated atomics.
#pragma once
#include "planning/engine.hpp"

namespace dnngraph::cuda {

const Engine& pointwise_jit_engine();

}  // namespace dnngraph::cuda
