// The CUDA matmul engines: cuda_gemm_wgmma_tma (Hopper: TMA loads, warp-specialized wgmma,
// persistent) and cuda_gemm_mma_sync (sm_80+: cp.async pipeline, ldmatrix, mma.sync), both with
// the partition's epilogue fused through the shared CUDA emitter.
#pragma once
#include "planning/engine.hpp"

namespace dnngraph::cuda {

const Engine& gemm_wgmma_tma_engine();
const Engine& gemm_mma_sync_engine();

}  // namespace dnngraph::cuda
