// The AVX-512 microkernel, 12 x 32: 24 accumulators, 2 B vectors and one broadcast of the 32
// zmm registers; kernel_set() picks it on a CPU that has AVX-512 F.
#include "engines/cpu/gemm/microkernel.hpp"
#include "engines/cpu/simd/vec_avx512.hpp"

DNNGRAPH_TARGET_BEGIN(DNNGRAPH_TARGET_AVX512)
#include "engines/cpu/gemm/kernel_body.inl"
DNNGRAPH_TARGET_END

namespace dnngraph::cpu::gemm {
const KernelSet* avx512_kernels() { return DNNGRAPH_X86_TABLE(kKernelSet<simd::VecAvx512, 12>); }
}  // namespace dnngraph::cpu::gemm
