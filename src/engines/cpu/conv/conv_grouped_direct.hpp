// cpu_conv_grouped_direct: conv_fprop with groups of 2, 4 or 8 channels, vectorized across groups.
#pragma once
#include "planning/engine.hpp"

namespace dnngraph::cpu {
const Engine& conv_grouped_direct_engine();
}
