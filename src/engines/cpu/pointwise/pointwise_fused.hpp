// cpu_pointwise_fused: a pure pointwise/reduction partition (chains with broadcasting, any strides,
// terminal reductions such as AMAX or SUM) in one pass over memory, on every core.
#pragma once
#include "planning/engine.hpp"

namespace dnngraph::cpu {
const Engine& pointwise_fused_engine();
}
