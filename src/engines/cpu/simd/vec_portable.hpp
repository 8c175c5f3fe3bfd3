// The portable vector type: 4 fp32 lanes in GCC/Clang vector extensions (SSE2 on x86-64, NEON on
// ARM, scalar elsewhere), compiled for the build's baseline ISA; the GEMM microkernel's fallback.
#pragma once
#include <cstring>

#include "engines/cpu/cpu_features.hpp"

namespace dnngraph::cpu::simd {

struct VecPortable {
  typedef float Reg __attribute__((vector_size(16)));
  static constexpr Isa kIsa = Isa::PORTABLE;
  static constexpr int kWidth = 4;
  static Reg zero() { return Reg{0, 0, 0, 0}; }
  static Reg load(const float* p) {
    Reg r;
    std::memcpy(&r, p, sizeof r);
    return r;
  }
  static void store(float* p, Reg r) { std::memcpy(p, &r, sizeof r); }
  static Reg bcast(const float* p) { return Reg{*p, *p, *p, *p}; }
  static Reg add(Reg a, Reg b) { return a + b; }
  static Reg fma(Reg a, Reg b, Reg c) { return a * b + c; }
};

}  // namespace dnngraph::cpu::simd
