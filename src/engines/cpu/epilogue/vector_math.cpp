// libmvec's entry points follow the x86-64 vector function ABI, _ZGV<isa>N<lanes>v_<name> (isa 'e'
// = AVX-512 F, 'd' = AVX2); they are declared here, since glibc's headers offer them only to
// OpenMP SIMD loops under -ffast-math, which this library does not build with.
#include "engines/cpu/epilogue/vector_math.hpp"

#include <algorithm>
#include <cmath>

#include "engines/cpu/simd/target.hpp"

#if DNNGRAPH_HAVE_LIBMVEC && DNNGRAPH_SIMD_X86
#define DNNGRAPH_VMATH_LANES 1
#include <immintrin.h>

#include "engines/cpu/simd/vec_avx2.hpp"
#include "engines/cpu/simd/vec_avx512.hpp"
// Declared for their ISA: a vector argument's ABI depends on it (clang refuses them otherwise).
#define DNNGRAPH_LIBMVEC_512 __attribute__((target("avx512f"))) __m512
#define DNNGRAPH_LIBMVEC_256 __attribute__((target("avx2"))) __m256
extern "C" {
DNNGRAPH_LIBMVEC_512 _ZGVeN16v_erfcf(__m512);
DNNGRAPH_LIBMVEC_512 _ZGVeN16v_expf(__m512);
DNNGRAPH_LIBMVEC_512 _ZGVeN16v_tanhf(__m512);
DNNGRAPH_LIBMVEC_256 _ZGVdN8v_erfcf(__m256);
DNNGRAPH_LIBMVEC_256 _ZGVdN8v_expf(__m256);
DNNGRAPH_LIBMVEC_256 _ZGVdN8v_tanhf(__m256);
}
#else
#define DNNGRAPH_VMATH_LANES 0
#endif

namespace dnngraph::cpu::vmath {

namespace per_element {
struct Lanes {
  using Reg = float;
  static constexpr int kWidth = 1;
  static float load(const float* p) { return *p; }
  static void store(float* p, float v) { *p = v; }
  static float set1(float v) { return v; }
  static float add(float a, float b) { return a + b; }
  static float mul(float a, float b) { return a * b; }
  static float div(float a, float b) { return a / b; }
  static float erfc(float x) { return std::erfc(x); }
  static float exp(float x) { return std::exp(x); }
  static float tanh(float x) { return std::tanh(x); }
};
#include "engines/cpu/epilogue/vector_math_body.inl"
}  // namespace per_element

#if DNNGRAPH_VMATH_LANES
// simd/'s vector types, with the division and libmvec's functions added.
DNNGRAPH_TARGET_BEGIN(DNNGRAPH_TARGET_AVX512)
namespace avx512 {
struct Lanes : simd::VecAvx512 {
  static Reg div(Reg a, Reg b) { return _mm512_div_ps(a, b); }
  static Reg erfc(Reg x) { return _ZGVeN16v_erfcf(x); }
  static Reg exp(Reg x) { return _ZGVeN16v_expf(x); }
  static Reg tanh(Reg x) { return _ZGVeN16v_tanhf(x); }
};
#include "engines/cpu/epilogue/vector_math_body.inl"
}  // namespace avx512
DNNGRAPH_TARGET_END

DNNGRAPH_TARGET_BEGIN(DNNGRAPH_TARGET_AVX2)
namespace avx2 {
struct Lanes : simd::VecAvx2 {
  static Reg div(Reg a, Reg b) { return _mm256_div_ps(a, b); }
  static Reg erfc(Reg x) { return _ZGVdN8v_erfcf(x); }
  static Reg exp(Reg x) { return _ZGVdN8v_expf(x); }
  static Reg tanh(Reg x) { return _ZGVdN8v_tanhf(x); }
};
#include "engines/cpu/epilogue/vector_math_body.inl"
}  // namespace avx2
DNNGRAPH_TARGET_END
#endif

bool vectorized(Isa isa) { return DNNGRAPH_VMATH_LANES && isa != Isa::PORTABLE && cpu_features().supports(isa); }

void map(Fn f, int64_t n, const float* a, float* o, float beta, Isa isa) {
#if DNNGRAPH_VMATH_LANES
  if (vectorized(isa)) return isa == Isa::AVX512 ? avx512::map_lanes(f, n, a, o, beta) : avx2::map_lanes(f, n, a, o, beta);
#else
  (void)isa;
#endif
  per_element::map_lanes(f, n, a, o, beta);
}

}  // namespace dnngraph::cpu::vmath
