// The element loops of cpu_norm_grouped (batchnorm in training, instancenorm, and the backward
// norms), per ISA: sums in double over runs of fp32 values. In every loop a run's statistics
// either stay one group's (gi = 0: one value, read and accumulated at index 0, in eight lanes so
// that the sum vectorizes) or step one group per element (gi = 1: NHWC-like runs along the
// channels); parameters likewise with pi.
#pragma once
#include <cstdint>

#include "engines/cpu/cpu_features.hpp"

namespace dnngraph::cpu::norm {

// s1 += x - shift, s2 += (x - shift)^2 over n values (shift, s1, s2 stepped by gi).
using GroupMomentsFn = void (*)(const float* x, int64_t n, const double* shift, int gi, double* s1, double* s2);
// With xhat = (x - mean) * inv and g = dy * scale: sg += g, sgx += g * xhat (stepped by gi);
// ds += dy * xhat, db += dy (stepped by pi).
using BackwardSumsFn = void (*)(const float* x, const float* dy, int64_t n, const float* mean, const float* inv, int gi,
                                const float* scale, int pi, double* sg, double* sgx, double* ds, double* db);
// dx = inv * (dy * scale - c1 - xhat * c2) (mean, inv, c1, c2 stepped by gi; scale by pi).
using BackwardDxFn = void (*)(const float* x, const float* dy, int64_t n, const float* mean, const float* inv,
                              const float* c1, const float* c2, int gi, const float* scale, int pi, float* dx);

struct GroupedKernels {
  Isa isa;
  GroupMomentsFn moments;
  BackwardSumsFn backward_sums;
  BackwardDxFn backward_dx;
};

// The kernels of one ISA level; the caller checks cpu_features().supports(isa) first.
const GroupedKernels& grouped_kernels(Isa isa);

// Per-ISA definitions (norm_grouped_kernels_<isa>.cpp); null where not compiled in.
const GroupedKernels* avx2_grouped_kernels();
const GroupedKernels* avx512_grouped_kernels();

}  // namespace dnngraph::cpu::norm
