// The pooling kernels compiled for AVX2 + FMA; pool_kernels() picks them on a CPU that has it.
#include "engines/cpu/pool/pool_kernels.hpp"

#include <cmath>

#include "engines/cpu/simd/vec_avx2.hpp"

DNNGRAPH_TARGET_BEGIN(DNNGRAPH_TARGET_AVX2)
#include "engines/cpu/pool/pool_kernels_body.inl"
DNNGRAPH_TARGET_END

namespace dnngraph::cpu::pool {
const PoolKernels* avx2_pool_kernels() { return DNNGRAPH_X86_TABLE(kSimdPoolKernels<simd::VecAvx2>); }
}  // namespace dnngraph::cpu::pool
