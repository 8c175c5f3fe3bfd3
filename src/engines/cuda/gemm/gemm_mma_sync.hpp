// cuda_gemm_mma_sync (sm_80+: cp.async pipeline, ldmatrix, mma.sync), with the partition's
// epilogue fused through the shared CUDA emitter.
#pragma once
#include "planning/engine.hpp"

namespace dnngraph::cuda {

const Engine& gemm_mma_sync_engine();

}  // namespace dnngraph::cuda
