// AVX-512 microkernel, 12 x 32: 24 accumulators, 2 B vectors and one broadcast of the 32 zmm
// registers. Compiled for AVX-512 through a target region, dispatched at run time, so the library
// itself still runs on any x86-64.
#include <cstdint>

#include "engines/cpu/gemm/microkernel.hpp"

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#include <immintrin.h>

#if defined(__clang__)
#pragma clang attribute push(__attribute__((target("avx512f,avx2,fma,f16c"))), apply_to = function)
#else
#pragma GCC push_options
#pragma GCC target("avx512f,avx2,fma,f16c")
#endif

namespace dnngraph::cpu::gemm {
namespace {

struct VecAvx512 {
  using Reg = __m512;
  static constexpr int kWidth = 16;
  static Reg zero() { return _mm512_setzero_ps(); }
  static Reg load(const float* p) { return _mm512_loadu_ps(p); }
  static void store(float* p, Reg r) { _mm512_storeu_ps(p, r); }
  static Reg bcast(const float* p) { return _mm512_set1_ps(*p); }
  static Reg fma(Reg a, Reg b, Reg acc) { return _mm512_fmadd_ps(a, b, acc); }
  static Reg add(Reg a, Reg b) { return _mm512_add_ps(a, b); }
};

#include "engines/cpu/gemm/kernel_body.inl"

void kernel_12x32(int nseg, int64_t seg_len, const float* const* rows, const float* b, float* c, int64_t ldc,
                 bool accumulate) {
  microkernel<VecAvx512, 12, 2, false>(nseg, seg_len, rows, b, c, ldc, accumulate);
}

void kernel_12x32_packed(int nseg, int64_t seg_len, const float* const* rows, const float* b, float* c, int64_t ldc,
                bool accumulate) {
  microkernel<VecAvx512, 12, 2, true>(nseg, seg_len, rows, b, c, ldc, accumulate);
}

}  // namespace

}  // namespace dnngraph::cpu::gemm

#if defined(__clang__)
#pragma clang attribute pop
#else
#pragma GCC pop_options
#endif

// Outside the target region: this runs on any CPU.
namespace dnngraph::cpu::gemm {
const KernelSet* avx512_kernels() {
  static const KernelSet kSet{Isa::AVX512, 12, 32, kernel_12x32, kernel_12x32_packed};
  return &kSet;
}
}  // namespace dnngraph::cpu::gemm

#else
namespace dnngraph::cpu::gemm {
const KernelSet* avx512_kernels() { return nullptr; }
}  // namespace dnngraph::cpu::gemm
#endif
