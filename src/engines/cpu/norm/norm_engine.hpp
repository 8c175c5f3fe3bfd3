// cpu_norm: layernorm, rmsnorm and batchnorm_inference, each with its pointwise epilogue (the
// partitioner's 'norm_epilogue' partitions), on every core.
#pragma once
#include "planning/engine.hpp"

namespace dnngraph::cpu {
const Engine& norm_engine();
}
