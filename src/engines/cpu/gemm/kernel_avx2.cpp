// The AVX2 + FMA microkernel, 6 x 16: 12 accumulators, 2 B vectors and one broadcast of the 16
// ymm registers; kernel_set() picks it on a CPU that has AVX2.
#include "engines/cpu/gemm/microkernel.hpp"
#include "engines/cpu/simd/vec_avx2.hpp"

DNNGRAPH_TARGET_BEGIN(DNNGRAPH_TARGET_AVX2)
#include "engines/cpu/gemm/kernel_body.inl"
DNNGRAPH_TARGET_END

namespace dnngraph::cpu::gemm {
const KernelSet* avx2_kernels() { return DNNGRAPH_X86_TABLE(kKernelSet<simd::VecAvx2, 6>); }
// 1 x 32 (4 accumulators): a matrix-vector product (microkernel.hpp's row_kernel_set).
const KernelSet* avx2_kernels_1x32() { return DNNGRAPH_X86_TABLE(kKernelSet<simd::VecAvx2, 1, 4>); }
}  // namespace dnngraph::cpu::gemm
