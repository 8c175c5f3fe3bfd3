// The chain's AVX-512 loops (epilogue_chain_avx512.cpp), which run_chain and run_chain_block take
// on a CPU with AVX-512 F; defined only in builds with the x86 kernels.
#pragma once
#include <cstdint>

#include "engines/cpu/epilogue/epilogue_chain.hpp"

namespace dnngraph::cpu {

// As run_chain.
void run_chain_avx512(const Chain& c, int64_t n, const float* anchor, const float* const* ptrs, const float* scalars,
                      float* out);
// As run_chain_block, a step at a time over the whole block.
void run_chain_tile_avx512(const Chain& c, int64_t rows, int64_t cols, float* data, int64_t ld,
                           const float* const* column, const float* const* same, const float* scalars);

}  // namespace dnngraph::cpu
