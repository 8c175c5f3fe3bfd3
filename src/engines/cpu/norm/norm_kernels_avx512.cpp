// The norm kernels compiled for AVX-512 F; norm_kernels() picks them on a CPU that has it.
#include "engines/cpu/norm/norm_kernels.hpp"
#include "engines/cpu/simd/vec_avx512.hpp"

DNNGRAPH_TARGET_BEGIN(DNNGRAPH_TARGET_AVX512)
#include "engines/cpu/norm/norm_kernels_body.inl"
DNNGRAPH_TARGET_END

namespace dnngraph::cpu::norm {
const NormKernels* avx512_norm_kernels() { return DNNGRAPH_X86_TABLE(kSimdNormKernels<simd::VecAvx512>); }
}  // namespace dnngraph::cpu::norm
