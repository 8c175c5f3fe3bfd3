// cpu_conv_implicit_gemm: conv_fprop and conv_dgrad (+ fused epilogue) as implicit GEMMs.
#pragma once
#include "planning/engine.hpp"

namespace dnngraph::cpu {
const Engine& conv_implicit_gemm_engine();
}
