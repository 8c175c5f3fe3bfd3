// cpu_conv_depthwise_direct: depthwise conv_fprop (groups == C == K) with direct loops.
#pragma once
#include "planning/engine.hpp"

namespace dnngraph::cpu {
const Engine& conv_depthwise_direct_engine();
}
