// Which kernels and register tile a conv's implicit GEMM runs (cpu_conv_implicit_gemm).
#pragma once
#include <vector>

#include "engines/cpu/conv/conv_geometry.hpp"
#include "engines/cpu/gemm/microkernel.hpp"

namespace dnngraph::cpu::conv_form {

// Which microkernels a plan runs, and so how K and A's rows are laid out: fp32 (bf16 / fp16
// inputs converted as rows are gathered), bf16 pairs on vdpbf16ps (each 32-bit slot two
// consecutive channels, read in place), or bf16 pairs on AMX tiles (16-row halves).
enum class KernelForm { FP32, BF16_DOT, BF16_AMX };

// bf16 source and weights on AMX-BF16: a conv_fprop whose source channels are unit-stride and
// whose channels per group fill whole 16-pair tile steps, or are 16 (8-pair steps: MobileNetV2's
// 1x1 C16 expansion at 112x112 ran 0.26 ms on the fp32 kernel against oneDNN's 0.14).
bool amx_fit(const ConvGeometry& g, Isa isa);

const gemm::KernelSet& amx_kernels(const ConvGeometry& g);

// bf16 source and weights on AVX512_BF16 without AMX, where vdpbf16ps beats the fp32 kernel
// (Zen 4: ResNet-50's bf16 1x1 and 3x3 layers ran 0.31-0.46x oneDNN with their rows
// converted to fp32): a conv_fprop whose channels split into whole pairs, read in place.
bool dot_pairs_fit(const ConvGeometry& g, Isa isa);

KernelForm form_of(const ConvGeometry& g, const gemm::KernelSet& ks);

// The register tile that pads the conv_fprop's pixels x output channels the least (7 x 48
// at 7x7 x 512, where 12 x 32 tiles pad 49 pixels to 60); a dgrad's phases keep the first.
const gemm::KernelSet& tile_shape(const ConvGeometry& g, Isa isa);

// Whether the output may lie exactly over an operand of the chain at no cost: each tile's chain
// runs in the kernel's registers on its one K block and reads the operand before the tile's
// store, and no tile is computed aside (edges) or left as padding, where C is stored first.
// 1x1 convs without padding whose pixels and channels fill whole tiles (ResNet's expansions
// with their residual add).
bool chain_over_operand(const ConvGeometry& g, const gemm::KernelSet& ks);

// Whether the plan reads the weights in place as dot-product tiles (ConvDotGemm).
bool dot_form(const ConvGeometry& g, const std::vector<ConvPhase>& phases, const gemm::KernelSet& ks, bool b_kept);

// Whether a plan on `isa` is expected to take that form, from the geometry alone (the plan
// builds the phases' offset tables; constant weights are kept packed).
bool dot_form_expected(const ConvGeometry& g, Isa isa, bool weights_constant);

}  // namespace dnngraph::cpu::conv_form
