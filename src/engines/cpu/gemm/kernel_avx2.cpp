// AVX2 + FMA microkernel, 6 x 16: 12 accumulators, 2 B vectors and one broadcast of the 16 ymm
// registers. Compiled for AVX2 through a target region, dispatched at run time, so the library
// itself still runs on any x86-64.
#include <cstdint>

#include "engines/cpu/gemm/microkernel.hpp"

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#include <immintrin.h>

#if defined(__clang__)
#pragma clang attribute push(__attribute__((target("avx2,fma,f16c"))), apply_to = function)
#else
#pragma GCC push_options
#pragma GCC target("avx2,fma,f16c")
#endif

namespace dnngraph::cpu::gemm {
namespace {

struct VecAvx2 {
  using Reg = __m256;
  static constexpr int kWidth = 8;
  static Reg zero() { return _mm256_setzero_ps(); }
  static Reg load(const float* p) { return _mm256_loadu_ps(p); }
  static void store(float* p, Reg r) { _mm256_storeu_ps(p, r); }
  static Reg bcast(const float* p) { return _mm256_broadcast_ss(p); }
  static Reg fma(Reg a, Reg b, Reg acc) { return _mm256_fmadd_ps(a, b, acc); }
  static Reg add(Reg a, Reg b) { return _mm256_add_ps(a, b); }
};

#include "engines/cpu/gemm/kernel_body.inl"

void kernel_6x16(int nseg, int64_t seg_len, const float* const* rows, const float* b, float* c, int64_t ldc,
                 bool accumulate) {
  microkernel<VecAvx2, 6, 2, false>(nseg, seg_len, rows, b, c, ldc, accumulate);
}

void kernel_6x16_packed(int nseg, int64_t seg_len, const float* const* rows, const float* b, float* c, int64_t ldc,
                bool accumulate) {
  microkernel<VecAvx2, 6, 2, true>(nseg, seg_len, rows, b, c, ldc, accumulate);
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
const KernelSet* avx2_kernels() {
  static const KernelSet kSet{Isa::AVX2, 6, 16, kernel_6x16, kernel_6x16_packed};
  return &kSet;
}
}  // namespace dnngraph::cpu::gemm

#else
namespace dnngraph::cpu::gemm {
const KernelSet* avx2_kernels() { return nullptr; }
}  // namespace dnngraph::cpu::gemm
#endif
