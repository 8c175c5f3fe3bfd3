// cuda_norm_rowwise: layernorm and rmsnorm forward (Y, and the statistics when the graph asks for
// them) and backward (DX, DSCALE, DBIAS) over packed rows, in FLOAT, HALF or BFLOAT16 with fp32
// arithmetic (kernels/norm_rowwise.cuh). A warp per row for short rows, a block per row for long
// ones, the row held in registers between its statistics and its output when it fits, 16-byte
// accesses where the row length and pitches allow (a scalar kernel for unaligned pointers).
// DSCALE/DBIAS: per-block column sums in the workspace, added in a fixed order by a second kernel.
// Its GPU tests passed against ref on an H200 (2026-12-05).
#pragma once
#include "planning/engine.hpp"

namespace dnngraph::cuda {

const Engine& norm_rowwise_engine();

}  // namespace dnngraph::cuda
