// cuda_gemm_wgmma_tma (Hopper: TMA loads, warp-specialized wgmma, persistent), with the
// partition's epilogue fused through the shared CUDA emitter.
#pragma once
#include "planning/engine.hpp"

namespace dnngraph::cuda {

const Engine& gemm_wgmma_tma_engine();

}  // namespace dnngraph::cuda
