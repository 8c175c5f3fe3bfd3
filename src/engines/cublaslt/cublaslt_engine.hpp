// cublaslt: the vendor engine for matmul + epilogue (alpha, bias, RELU/GELU-tanh, AMAX for FP8)
// through cuBLASLt (dlopen'ed; see cublaslt_api.hpp for the search order). Every algorithm that
// cuBLASLt's heuristics return becomes a candidate whose knobs are the algorithm's configuration
// (algo, tile, stages, split-k, ...), so autotune times them beside dnngraph's own engines. Plans
// run on the handle's stream with their workspace and serialize the algorithm (reloaded with the
// same cuBLASLt version only).
#pragma once
#include "planning/engine.hpp"

namespace dnngraph::cublaslt {

const Engine& engine();

}  // namespace dnngraph::cublaslt
