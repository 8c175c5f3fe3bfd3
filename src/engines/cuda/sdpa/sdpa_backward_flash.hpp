// cuda_sdpa_backward_flash: sdpa_backward on NVIDIA GPUs: FlashAttention-2's backward on mma.sync
// tensor cores in three deterministic phases (sm_80+, kernels/sdpa_backward_mma_sync.cuh), and the
// key-stationary form on wgmma + TMA with dQ summed by atomics (sm_90a, sdpa_backward_wgmma.cuh).
#pragma once
#include <string>

#include "planning/engine.hpp"

namespace dnngraph::cuda {
const Engine& sdpa_backward_flash_engine();

// The kernel's CUDA source for 16-bit inputs `in`, gradients of type `out` and head dim `d`
// (padded to 64 inside) on core 0 (mma.sync) or 1 (wgmma); tests compile it without a GPU.
std::string sdpa_backward_kernel_source(DataType in, DataType out, int64_t d, int core = 0);
inline constexpr const char* kSdpaBackwardKernel = "dg_sdpa_backward";
}
