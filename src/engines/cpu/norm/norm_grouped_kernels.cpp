// The grouped norm kernels for the baseline ISA, and the dispatch by ISA.
#include "engines/cpu/norm/norm_grouped_kernels.hpp"

#include "engines/cpu/simd/target.hpp"
#include "engines/cpu/norm/norm_grouped_kernels_body.inl"

namespace dnngraph::cpu::norm {

const GroupedKernels& grouped_kernels(Isa isa) {
  return simd::table_for(isa, kGroupedKernels<Isa::PORTABLE>, avx2_grouped_kernels(), avx512_grouped_kernels());
}

}  // namespace dnngraph::cpu::norm
