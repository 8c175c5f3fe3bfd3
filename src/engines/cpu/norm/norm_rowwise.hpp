// cpu_norm_rowwise: layernorm, rmsnorm and batchnorm_inference, each with its pointwise epilogue (the
// partitioner's 'norm_epilogue' partitions), on every core, row by row: each row's statistics
// (shifted moments in double) and then its normalized values while the row is still in cache.
#pragma once
#include "planning/engine.hpp"

namespace dnngraph::cpu {
const Engine& norm_rowwise_engine();
}
