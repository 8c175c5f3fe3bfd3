// cuda_sdpa_flash: scaled dot-product attention forward in one kernel on NVIDIA GPUs, tiled with an
// online softmax (bf16/fp16 in, fp32 accumulation). Two cores: wgmma + TMA with warp-specialized
// producer/consumer warpgroups on sm_90a (knob core=1), mma.sync + cp.async on sm_80 and later
// (core=0). Masked key tiles are skipped; the masking rules are those of src/graph/sdpa.cpp.
#pragma once
#include "planning/engine.hpp"

namespace dnngraph::cuda {
const Engine& sdpa_flash_engine();
}
