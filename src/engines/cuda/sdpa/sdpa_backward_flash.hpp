// cuda_sdpa_backward_flash: sdpa_backward on NVIDIA GPUs (sm_80+), FlashAttention-2's backward on
// mma.sync tensor cores in three deterministic phases (kernels/sdpa_backward_mma_sync.cuh).
#pragma once
#include "planning/engine.hpp"

namespace dnngraph::cuda {
const Engine& sdpa_backward_flash_engine();
}
