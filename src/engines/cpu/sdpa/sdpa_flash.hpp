// cpu_sdpa_flash: scaled dot-product attention forward on the CPU, tiled (query block x key block)
// with an online softmax, fp32 accumulation, and masked tiles skipped.
#pragma once
#include "planning/engine.hpp"

namespace dnngraph::cpu {
const Engine& sdpa_flash_engine();
}
