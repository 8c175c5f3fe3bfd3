// cpu_gemm_packed: matmul (+ fused epilogue) on the CPU with the blocked, packed GEMM driver.
#pragma once
#include "planning/engine.hpp"

namespace dnngraph::cpu {
const Engine& gemm_packed_engine();
}
