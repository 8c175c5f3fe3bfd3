// The register epilogue of the wgmma cores (knob epilogue=1 of the convolution and matmul engines;
// kernels/epilogue_tma_store.cuh): which fused epilogues it serves, and the TMA map of the output
// it stores through. Others (inputs that vary along the GEMM rows such as a residual, several
// outputs, outputs that are not 16-bit or not row-contiguous, batch dims that are not one packed
// run of matrices) keep the staged epilogue.
#pragma once
#include <string>

#include "engines/cuda/common/epilogue_layout.hpp"
#include "runtime/cuda/driver_ext.hpp"

namespace dnngraph::cuda {

// Whether `epi` (over [batch..., rows, columns]) runs in registers with a TMA store; the rule it
// breaks in `why`. Full reductions (AMAX) are allowed: the kernel leaves rows and columns past the
// output's edges out of them; per-row or per-column ones (genstats' sums) keep the staged epilogue.
// A chain too long to unroll over every accumulator takes the boxed form (register_epilogue_mode).
bool register_epilogue(const EpiloguePlan& epi, std::string& why);

// Whether the register epilogue of `epi` leaves the wgmma core's wgmma unserialized on tiles that
// take turns (`pingpong`) or on split units (`split_units`: split-K, the stream-K tail): not where
// the chain reduces (AMAX), whose kernels of those forms ptxas serialized (C7514; the conv and
// matmul engines, bench/gpu/wgmma_audit.py, 2026-12-08). Whole cooperative tiles always do.
bool register_epilogue_unserialized(const EpiloguePlan& epi, bool pingpong, bool split_units);

// The kernel's epilogue mode for a register epilogue of `epi` (kernels/epilogue_tma_store.cuh's
// EPI_TMA_STORE, or EPI_TMA_STORE_BOXED: one 64-column box at a time in a rolled loop, for chains
// whose unrolled code would outgrow the instruction cache).
inline constexpr int kEpiTmaStore = 1, kEpiTmaStoreBoxed = 4;
int register_epilogue_mode(const EpiloguePlan& epi);
// The stored output's IR tensor id (register_epilogue holds).
int stored_tensor(const EpiloguePlan& epi);
// The output as a 3D (columns, rows, batch) map of 64-row boxes of one 128-byte row, 128-byte
// swizzled; the batch coordinate is the GEMM's linear batch index (register_epilogue checked that
// the batch dims are packed in that order).
TensorMapSpec register_epilogue_output_map(const EpiloguePlan& epi);
// That map over the variant pack's output pointer; INVALID_VARIANT_PACK, naming the tensor, where
// the pointer is not 16-byte aligned (TMA's rule).
Status encode_register_epilogue_map(const Partition& p, const EpiloguePlan& epi, const ExecArgs& args, TensorMap& out);

}  // namespace dnngraph::cuda
