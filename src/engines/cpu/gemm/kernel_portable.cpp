// The portable microkernel, 4 x 8, over simd::VecPortable, and the ISA dispatch.
#include "engines/cpu/gemm/microkernel.hpp"
#include "engines/cpu/simd/target.hpp"
#include "engines/cpu/simd/vec_portable.hpp"

#include "engines/cpu/gemm/kernel_body.inl"

namespace dnngraph::cpu::gemm {

const KernelSet& portable_kernels() { return kKernelSet<simd::VecPortable, 4>; }

const KernelSet& kernel_set(Isa isa) {
  return simd::table_for(isa, portable_kernels(), avx2_kernels(), avx512_kernels());
}

}  // namespace dnngraph::cpu::gemm
