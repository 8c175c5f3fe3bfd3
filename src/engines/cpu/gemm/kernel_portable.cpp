// The portable microkernel, 4 x 8, in GCC/Clang vector extensions (SSE2 on x86-64, NEON on
// ARM, scalar elsewhere), and the ISA dispatch.
#include <cstring>

#include "engines/cpu/gemm/microkernel.hpp"

namespace dnngraph::cpu::gemm {
namespace {

struct VecPortable {
  typedef float Reg __attribute__((vector_size(16)));
  static constexpr int kWidth = 4;
  static Reg zero() { return Reg{0, 0, 0, 0}; }
  static Reg load(const float* p) {
    Reg r;
    std::memcpy(&r, p, sizeof r);
    return r;
  }
  static void store(float* p, Reg r) { std::memcpy(p, &r, sizeof r); }
  static Reg bcast(const float* p) { return Reg{*p, *p, *p, *p}; }
  static Reg fma(Reg a, Reg b, Reg acc) { return a * b + acc; }
  static Reg add(Reg a, Reg b) { return a + b; }
};

#include "engines/cpu/gemm/kernel_body.inl"

void kernel_4x8(int nseg, int64_t seg_len, const float* const* rows, const float* b, float* c, int64_t ldc,
                bool accumulate) {
  microkernel<VecPortable, 4, 2, false>(nseg, seg_len, rows, b, c, ldc, accumulate);
}

void kernel_4x8_packed(int nseg, int64_t seg_len, const float* const* rows, const float* b, float* c, int64_t ldc,
                bool accumulate) {
  microkernel<VecPortable, 4, 2, true>(nseg, seg_len, rows, b, c, ldc, accumulate);
}

}  // namespace

const KernelSet& portable_kernels() {
  static const KernelSet kSet{Isa::PORTABLE, 4, 8, kernel_4x8, kernel_4x8_packed};
  return kSet;
}

const KernelSet& kernel_set(Isa isa) {
  if (isa == Isa::AVX512 && avx512_kernels()) return *avx512_kernels();
  if (isa >= Isa::AVX2 && avx2_kernels()) return *avx2_kernels();
  return portable_kernels();
}

}  // namespace dnngraph::cpu::gemm
