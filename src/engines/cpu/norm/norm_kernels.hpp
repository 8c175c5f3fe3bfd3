// The normalizations' element loops, per ISA: shifted first and second moments of a row in double
// (the shift, a value of the row, keeps E[x^2] - E[x]^2 free of cancellation), and the affine
// maps that produce the normalized values in fp32.
#pragma once
#include <cstdint>

#include "engines/cpu/cpu_features.hpp"

namespace dnngraph::cpu::norm {

// s1 += sum(x[i] - shift), s2 += sum((x[i] - shift)^2) over n contiguous fp32 values.
using MomentsFn = void (*)(const float* x, int64_t n, double shift, double& s1, double& s2);
// out[i] = ((x[i] - m) - m_lo) * a * (s ? s[i] : 1) + (b ? b[i] : b0): layernorm and rmsnorm
// rows (m + m_lo = the mean as two floats, or 0; a = inverse deviation, s and b the scale and
// bias), batchnorm runs of one channel (m_lo = 0). The mean's low part keeps rows of a large mean
// and a small deviation exact to fp32 (x - mean rounded once, not the mean first).
using AffineFn = void (*)(const float* x, int64_t n, float m, float m_lo, float a, const float* s, const float* b,
                          float b0, float* out);
// out[i] = (x[i] - m[i]) * a[i] + b[i]: batchnorm runs along the channels.
using ChannelAffineFn = void (*)(const float* x, int64_t n, const float* m, const float* a, const float* b,
                                 float* out);

struct NormKernels {
  Isa isa;
  MomentsFn moments;
  AffineFn affine;
  ChannelAffineFn channel_affine;
};

// The kernels of one ISA level; the caller checks cpu_features().supports(isa) first.
const NormKernels& norm_kernels(Isa isa);

// Per-ISA definitions (norm_kernels_<isa>.cpp); null where not compiled in.
const NormKernels* avx2_norm_kernels();
const NormKernels* avx512_norm_kernels();

}  // namespace dnngraph::cpu::norm
