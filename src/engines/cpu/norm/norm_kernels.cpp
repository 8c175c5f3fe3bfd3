// The portable kernels (plain loops the compiler vectorizes for the baseline ISA) and the dispatch
// by ISA.
#include "engines/cpu/norm/norm_kernels.hpp"

#include "engines/cpu/simd/target.hpp"

namespace dnngraph::cpu::norm {
namespace {

// Four independent accumulator pairs, so the adds pipeline even without SIMD.
void moments_portable(const float* x, int64_t n, double shift, double& s1, double& s2) {
  double a[4] = {0, 0, 0, 0}, b[4] = {0, 0, 0, 0};
  int64_t i = 0;
  for (; i + 4 <= n; i += 4)
    for (int k = 0; k < 4; ++k) {
      const double d = static_cast<double>(x[i + k]) - shift;
      a[k] += d;
      b[k] += d * d;
    }
  for (; i < n; ++i) {
    const double d = static_cast<double>(x[i]) - shift;
    a[0] += d;
    b[0] += d * d;
  }
  s1 += (a[0] + a[1]) + (a[2] + a[3]);
  s2 += (b[0] + b[1]) + (b[2] + b[3]);
}

void affine_portable(const float* x, int64_t n, float m, float m_lo, float a, const float* s, const float* b,
                     float b0, float* out) {
  if (s && b) {
    for (int64_t i = 0; i < n; ++i) out[i] = ((x[i] - m) - m_lo) * a * s[i] + b[i];
  } else if (s) {
    for (int64_t i = 0; i < n; ++i) out[i] = ((x[i] - m) - m_lo) * a * s[i] + b0;
  } else {
    for (int64_t i = 0; i < n; ++i) out[i] = ((x[i] - m) - m_lo) * a + (b ? b[i] : b0);
  }
}

void channel_affine_portable(const float* x, int64_t n, const float* m, const float* a, const float* b, float* out) {
  for (int64_t i = 0; i < n; ++i) out[i] = (x[i] - m[i]) * a[i] + b[i];
}

const NormKernels kPortable{Isa::PORTABLE, moments_portable, affine_portable, channel_affine_portable};

}  // namespace

const NormKernels& norm_kernels(Isa isa) {
  return simd::table_for(isa, kPortable, avx2_norm_kernels(), avx512_norm_kernels());
}

}  // namespace dnngraph::cpu::norm
