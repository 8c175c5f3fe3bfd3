// Transcendental element loops of the CPU epilogue (GELU, tanh, sigmoid, swish, exp) on glibc's
// vector math library, libmvec: 16 lanes on AVX-512, 8 on AVX2, each function within 4 ulp. Per
// element on libm where the build has no libmvec or the ISA asked for is PORTABLE. GELU through
// erfc, 0.5 x erfc(-x / sqrt 2), has no cancellation anywhere (erf's 1 + erf(x) loses bits below
// x = -1.5), so one formula serves every x.
#pragma once
#include <cstdint>

#include "engines/cpu/cpu_features.hpp"

namespace dnngraph::cpu::vmath {

enum class Fn : int {
  GELU_ERF,   // 0.5 x erfc(-x / sqrt 2)
  GELU_TANH,  // 0.5 x (1 + tanh(sqrt(2 / pi) (x + 0.044715 x^3)))
  TANH,
  SIGMOID,    // 1 / (1 + exp(-x))
  SWISH,      // x sigmoid(beta x)
  EXP,
};

// o[i] = f(a[i]) for i < n on `isa`'s lanes (clamped to what the CPU and the build have); `beta`
// is SWISH's. `o` may be `a`.
void map(Fn f, int64_t n, const float* a, float* o, float beta = 1.0f, Isa isa = cpu_features().best());

// Whether `isa` runs on libmvec's lanes in this build on this CPU (else per element on libm).
bool vectorized(Isa isa);

}  // namespace dnngraph::cpu::vmath
