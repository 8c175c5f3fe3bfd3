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
  static Reg set1(float v) { return Reg{v, v, v, v}; }
  static Reg sub(Reg a, Reg b) { return a - b; }
  static Reg mul(Reg a, Reg b) { return a * b; }
  // v <= lo ? lo : v, then v > hi ? hi : v, lane by lane (NaN stays NaN, -0 becomes lo = +0).
  static Reg relu_clip(Reg v, Reg lo, Reg hi) {
    for (int i = 0; i < kWidth; ++i) {
      const float l = v[i] <= lo[i] ? lo[i] : v[i];
      v[i] = l > hi[i] ? hi[i] : l;
    }
    return v;
  }
};

}  // namespace dnngraph::cpu::simd
