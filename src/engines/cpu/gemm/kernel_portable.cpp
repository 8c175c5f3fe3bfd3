// The portable microkernel, 4 x 8, over simd::VecPortable; the ISA dispatch and the kernels' cost
// model figure.
#include "engines/cpu/gemm/microkernel.hpp"
#include "engines/cpu/simd/target.hpp"
#include "engines/cpu/simd/vec_portable.hpp"

#include "engines/cpu/gemm/kernel_body.inl"

namespace dnngraph::cpu::gemm {

const KernelSet& portable_kernels() { return kKernelSet<simd::VecPortable, 4>; }

const KernelSet& kernel_set(Isa isa) {
  return simd::table_for(isa, portable_kernels(), avx2_kernels(), avx512_kernels());
}

double kernel_efficiency(Isa isa) {
  switch (isa) {
    case Isa::AVX512: return 1.0;  // the device peak is a 256-bit figure; wider FMAs make up the rest
    case Isa::AVX2: return 0.85;
    case Isa::PORTABLE: return 0.12;
  }
  return 0.1;
}

}  // namespace dnngraph::cpu::gemm
