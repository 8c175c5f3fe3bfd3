// cpu_conv_wgrad_gemm: conv_wgrad (+ epilogue) as GEMMs over chunks of output pixels.
#pragma once
#include "planning/engine.hpp"

namespace dnngraph::cpu {
const Engine& conv_wgrad_gemm_engine();
}
