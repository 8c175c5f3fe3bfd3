// Which kernels and register tile a conv's implicit GEMM runs (cpu_conv_implicit_gemm): the
// form of K and A's rows (fp32, vdpbf16ps pairs, AMX halves), the tile shape, and whether the
// weights are read in place as dot-product tiles or the chain may store over its operand.
#include "engines/cpu/conv/conv_kernel_form.hpp"

#include "engines/cpu/conv/conv_implicit_dot.hpp"
#include "engines/cpu/cpu_features.hpp"

namespace dnngraph::cpu::conv_form {

bool amx_fit(const ConvGeometry& g, Isa isa) {
  return !g.dgrad && isa == Isa::AVX512 && gemm::amx_bf16_kernels() && g.src_t == DataType::BFLOAT16 &&
         g.wei_t == DataType::BFLOAT16 && g.src_st[1] == 1 && (g.src_cg % 32 == 0 || g.src_cg == 16);
}

const gemm::KernelSet& amx_kernels(const ConvGeometry& g) {
  return g.src_cg % 32 == 0 ? *gemm::amx_bf16_kernels() : *gemm::amx_bf16_kernels_step8();
}

bool dot_pairs_fit(const ConvGeometry& g, Isa isa) {
  return !g.dgrad && isa == Isa::AVX512 && !gemm::amx_bf16_kernels() && gemm::avx512_bf16_kernels() &&
         g.src_t == DataType::BFLOAT16 && g.wei_t == DataType::BFLOAT16 && g.src_st[1] == 1 && g.src_cg % 2 == 0 &&
         gemm::bf16_pairs_faster();
}

KernelForm form_of(const ConvGeometry& g, const gemm::KernelSet& ks) {
  if (amx_fit(g, ks.isa) && &ks == &amx_kernels(g)) return KernelForm::BF16_AMX;
  if (dot_pairs_fit(g, ks.isa) && gemm::is_bf16_pairs(ks)) return KernelForm::BF16_DOT;
  return KernelForm::FP32;
}

const gemm::KernelSet& tile_shape(const ConvGeometry& g, Isa isa) {
  if (amx_fit(g, isa)) return amx_kernels(g);
  if (dot_pairs_fit(g, isa)) return gemm::bf16_pair_kernel_for_shape(g.n * g.dst_pixels(), g.dst_cg);
  if (g.dgrad) return gemm::kernel_set(isa);
  return gemm::kernel_for_shape(isa, g.n * g.dst_pixels(), g.dst_cg);
}

bool chain_over_operand(const ConvGeometry& g, const gemm::KernelSet& ks) {
  if (g.dgrad || g.groups != 1 || g.src_t != DataType::FLOAT || g.src_st[1] != 1 || !ks.kernel_chain || g.taps() != 1)
    return false;
  for (size_t d = 0; d < 3; ++d)
    if (g.pad[d] != 0 || (g.dst_sp[d] - 1) * g.stride[d] >= g.src_sp[d]) return false;
  return g.n * g.dst_pixels() % ks.mr == 0 && g.dst_cg % ks.nr == 0 &&
         g.src_cg <= cpu_features().l2_bytes / 8 / (ks.nr * 4);  // one K block (the implicit GEMM's k_blocks)
}

bool dot_form(const ConvGeometry& g, const std::vector<ConvPhase>& phases, const gemm::KernelSet& ks, bool b_kept) {
  const conv_dot::DotKernelSet& dks = conv_dot::dot_kernels(ks.isa);
  return conv_dot_unfit(g, phases, dks).empty() && conv_dot_preferred(g, dks, ks.mr, ks.nr, b_kept);
}

bool dot_form_expected(const ConvGeometry& g, Isa isa, bool weights_constant) {
  const gemm::KernelSet& ks = tile_shape(g, isa);
  const conv_dot::DotKernelSet& dks = conv_dot::dot_kernels(isa);
  return form_of(g, ks) == KernelForm::FP32 && conv_dot_unfit_geometry(g, dks).empty() &&
         conv_dot_preferred(g, dks, ks.mr, ks.nr, weights_constant);
}

}  // namespace dnngraph::cpu::conv_form
