// The AVX-512 BF16 microkernels, 12 x 32 as the fp32 ones, over bf16 pairs: A and B hold two
// consecutive k of bf16 in each 32-bit slot (pack_*_bf16_pairs), and vdpbf16ps adds both products
// to an fp32 accumulator, so each instruction does twice the fp32 kernel's FMAs. The driver sees
// a fp32 GEMM of K/2 "floats" (a pair is 4 bytes): the same loop nest, tiles and epilogue.
#include "engines/cpu/gemm/microkernel.hpp"
#include "engines/cpu/simd/target.hpp"

#define DNNGRAPH_TARGET_AVX512_BF16 "avx512f,avx512bf16,avx2,fma,f16c"

#if DNNGRAPH_SIMD_X86
#include <immintrin.h>

#include <cstring>

DNNGRAPH_TARGET_BEGIN(DNNGRAPH_TARGET_AVX512_BF16)

namespace dnngraph::cpu::simd {

// The vector type kernel_body.inl is written over, with fma() the bf16-pair dot product: bcast()
// repeats one A pair (its 32 bits) and load() reads 16 B pairs; only bits move until vdpbf16ps.
struct VecAvx512Bf16Pairs {
  using Reg = __m512;
  static constexpr Isa kIsa = Isa::AVX512;
  static constexpr int kWidth = 16;
  static Reg zero() { return _mm512_setzero_ps(); }
  static Reg load(const float* p) { return _mm512_loadu_ps(p); }
  static void store(float* p, Reg r) { _mm512_storeu_ps(p, r); }
  static Reg bcast(const float* p) {  // a pair read in place may sit at any even byte address
    int32_t pair;
    std::memcpy(&pair, p, sizeof pair);
    return _mm512_castsi512_ps(_mm512_set1_epi32(pair));
  }
  static Reg add(Reg a, Reg b) { return _mm512_add_ps(a, b); }
  static Reg fma(Reg a, Reg b, Reg acc) { return _mm512_dpbf16_ps(acc, (__m512bh)a, (__m512bh)b); }
};

}  // namespace dnngraph::cpu::simd

#include "engines/cpu/gemm/kernel_body.inl"

DNNGRAPH_TARGET_END
#endif

namespace dnngraph::cpu::gemm {
const KernelSet* avx512_bf16_kernels() {
  return DNNGRAPH_X86_TABLE(kKernelSet<simd::VecAvx512Bf16Pairs, 12>);
}
// The fp32 kernels' other shapes over pairs (kernel_avx512.cpp says why each): 7 x 48 for 7x7
// images, 14 x 32 for 14x14 ones, 8 x 32 for 4x4 ones (bf16 3x3 C512 4x4: 0.18-0.21 -> 0.174 ms on
// Zen 4, 2026-12-08), 16 x 16 for 16 output channels.
std::vector<const KernelSet*> bf16_pair_shapes() {
  std::vector<const KernelSet*> out;
  for (const KernelSet* ks : {avx512_bf16_kernels(),
                              DNNGRAPH_X86_TABLE((kKernelSet<simd::VecAvx512Bf16Pairs, 7, 3>)),
                              DNNGRAPH_X86_TABLE(kKernelSet<simd::VecAvx512Bf16Pairs, 14>),
                              DNNGRAPH_X86_TABLE((kKernelSet<simd::VecAvx512Bf16Pairs, 8, 2>)),
                              DNNGRAPH_X86_TABLE((kKernelSet<simd::VecAvx512Bf16Pairs, 16, 1>))})
    if (ks) out.push_back(ks);
  return out;
}
}  // namespace dnngraph::cpu::gemm
