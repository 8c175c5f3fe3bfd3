// cpu_sdpa_backward_flash: sdpa_backward on the CPU, FlashAttention-2's backward in two passes
// (dK, dV per key block; dQ per query block), P rebuilt from the forward's STATS, fp32 tiles.
#pragma once
#include "planning/engine.hpp"

namespace dnngraph::cpu {
const Engine& sdpa_backward_flash_engine();
}
