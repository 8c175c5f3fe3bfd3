// The AVX-512 microkernels: 12 x 32, 24 accumulators, 2 B vectors and one broadcast of the 32
// zmm registers, which kernel_set() picks on a CPU that has AVX-512 F; and 7 x 48, 14 x 32, 8 x 32
// and 16 x 16 (kernel_shapes).
#include "engines/cpu/gemm/microkernel.hpp"
#include "engines/cpu/simd/vec_avx512.hpp"

DNNGRAPH_TARGET_BEGIN(DNNGRAPH_TARGET_AVX512)
#include "engines/cpu/gemm/kernel_body.inl"
DNNGRAPH_TARGET_END

namespace dnngraph::cpu::gemm {
const KernelSet* avx512_kernels() { return DNNGRAPH_X86_TABLE(kKernelSet<simd::VecAvx512, 12>); }
// 7 x 48 (21 accumulators, 3 B vectors): one row of a 7x7 image per tile, where 12-row tiles pad
// 49 pixels to 60; hot in L1 it runs at 1.05x the 12 x 32 one with rows in place (Intel, AVX-512).
const KernelSet* avx512_kernels_7x48() { return DNNGRAPH_X86_TABLE(kKernelSet<simd::VecAvx512, 7, 3>); }
// 14 x 32 (28 accumulators, 2 B vectors, one broadcast: 31 of the 32 registers): 14x14 images
// (196 pixels, which 12-row tiles pad to 204, the last tile computed whole for 4 rows); in-network
// ResNet-50 1.7-1.9% faster, its 14x14 layers 4-9% (Intel, AVX-512; docs/perf.md 2026-12-06).
const KernelSet* avx512_kernels_14x32() { return DNNGRAPH_X86_TABLE(kKernelSet<simd::VecAvx512, 14>); }
// 16 x 16 (16 accumulators, one B vector): 16 output channels, which 32-wide panels pad to 32
// (MobileNetV2's 1x1 C32 -> 16 at 112x112: 30% faster in a chain of such layers, Intel, AVX-512).
const KernelSet* avx512_kernels_16x16() { return DNNGRAPH_X86_TABLE(kKernelSet<simd::VecAvx512, 16, 1>); }
// 8 x 32 (16 accumulators, 2 B vectors): 16-pixel images (4x4) at any width, which 16 x 16 also
// fits but with a broadcast per FMA. 3x3 C512 4x4 on Zen 4 (2026-12-08, alternated): fp32 within
// the host's noise (0.337-0.381 ms against 0.353-0.364), the bf16 pairs' twin 0.174 against 0.179-0.208.
const KernelSet* avx512_kernels_8x32() { return DNNGRAPH_X86_TABLE(kKernelSet<simd::VecAvx512, 8, 2>); }
// 1 x 64 (4 accumulators): a matrix-vector product (a classifier's 1 x 2048 x 1000 at N=1), where
// the 12 x 32 tile computes 12 copies of the one row.
const KernelSet* avx512_kernels_1x64() { return DNNGRAPH_X86_TABLE(kKernelSet<simd::VecAvx512, 1, 4>); }
}  // namespace dnngraph::cpu::gemm
