// The grouped norm kernels compiled for AVX-512 F; grouped_kernels() picks them on a CPU that has it.
#include "engines/cpu/norm/norm_grouped_kernels.hpp"
#include "engines/cpu/simd/target.hpp"

DNNGRAPH_TARGET_BEGIN(DNNGRAPH_TARGET_AVX512)
#include "engines/cpu/norm/norm_grouped_kernels_body.inl"
DNNGRAPH_TARGET_END

namespace dnngraph::cpu::norm {
const GroupedKernels* avx512_grouped_kernels() { return DNNGRAPH_X86_TABLE(kGroupedKernels<Isa::AVX512>); }
}  // namespace dnngraph::cpu::norm
