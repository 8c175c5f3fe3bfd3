// The portable dot-product tile, 4 pixels x 2 output channels over simd::VecPortable, and the
// ISA dispatch.
#include "engines/cpu/conv/conv_dot_kernels.hpp"
#include "engines/cpu/simd/target.hpp"
#include "engines/cpu/simd/vec_portable.hpp"

namespace dnngraph::cpu::conv_dot {
namespace {
inline float hsum(simd::VecPortable::Reg v) { return (v[0] + v[1]) + (v[2] + v[3]); }
template <int N>
inline void lane_sums(const simd::VecPortable::Reg* acc, int n, float* out) {
  for (int i = 0; i < n; ++i) out[i] = hsum(acc[i]);
}
}  // namespace
}  // namespace dnngraph::cpu::conv_dot
#include "engines/cpu/conv/conv_dot_kernel_body.inl"

namespace dnngraph::cpu::conv_dot {
namespace {
constexpr DotKernelSet kPortable{Isa::PORTABLE, 4, 2, 4, dot_tile<simd::VecPortable, 4, 2>, {0.82, 64.0, 6.4}};
}  // namespace

const DotKernelSet& portable_dot_kernels() { return kPortable; }

const DotKernelSet& dot_kernels(Isa isa) {
  return simd::table_for(isa, portable_dot_kernels(), avx2_dot_kernels(), avx512_dot_kernels());
}

}  // namespace dnngraph::cpu::conv_dot
