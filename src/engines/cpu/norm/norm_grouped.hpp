// cpu_norm_grouped: batchnorm (training, with running statistics), instancenorm, and the backward
// of layernorm, rmsnorm, batchnorm and instancenorm, one node per partition, on every core, in
// fp32 with double sums; X, DY, Y and DX in FLOAT, HALF or BFLOAT16, any strides.
#pragma once
#include "planning/engine.hpp"

namespace dnngraph::cpu {
const Engine& norm_grouped_engine();
}
