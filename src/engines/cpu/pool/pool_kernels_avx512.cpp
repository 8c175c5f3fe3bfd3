// The pooling kernels compiled for AVX-512 F; pool_kernels() picks them on a CPU that has it.
#include "engines/cpu/pool/pool_kernels.hpp"

#include <cmath>

#include "engines/cpu/simd/vec_avx512.hpp"

DNNGRAPH_TARGET_BEGIN(DNNGRAPH_TARGET_AVX512)
#include "engines/cpu/pool/pool_kernels_body.inl"
DNNGRAPH_TARGET_END

namespace dnngraph::cpu::pool {
const PoolKernels* avx512_pool_kernels() { return DNNGRAPH_X86_TABLE(kSimdPoolKernels<simd::VecAvx512>); }
}  // namespace dnngraph::cpu::pool
