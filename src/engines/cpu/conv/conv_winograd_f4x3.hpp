// cpu_conv_winograd_f4x3: 3x3 stride-1 conv_fprop by Winograd F(4x4, 3x3).
#pragma once
#include "planning/engine.hpp"

namespace dnngraph::cpu {
const Engine& conv_winograd_f4x3_engine();
}
