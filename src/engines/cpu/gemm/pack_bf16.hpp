// Packing for the bf16-pair kernels (avx512_bf16_kernels): each 32-bit slot holds two consecutive
// k of bf16, the lower k in the low half, zero past K. Inputs of any packable type (bf16 is
// copied, fp32 and fp16 rounded to bf16). K is counted in pairs: kpairs = ceil(K / 2).
#pragma once
#include <cstdint>

#include "engines/cpu/gemm/pack.hpp"

namespace dnngraph::cpu::gemm {

// k-major A panels of mr rows over pairs [kp0, kp0 + kpairs) of a matrix with k_total columns:
// slot (t, kp, i) at dst[t * kpairs * mr + kp * mr + i] holds rows r0 + t * mr + i, zero past `rows`.
void pack_a_bf16_pairs(const StridedMatrix& src, int64_t r0, int64_t rows, int64_t kp0, int64_t kpairs,
                       int64_t k_total, int mr, float* dst);

// B panels of nr columns from [c0, c0 + cols) over all krows rows, `kpairs` pairs each (at least
// ceil(krows / 2); zero past the rows): slot (p, kp, j) at dst[p * kpairs * nr + kp * nr + j],
// zero past `cols`.
void pack_b_bf16_pairs(const StridedMatrix& src, int64_t krows, int64_t c0, int64_t cols, int nr, int64_t kpairs,
                       float* dst);

// Row-major A tiles of mr rows over pairs [kp0, kp0 + kpairs) (AMX's A layout): slot (t, i, kp)
// at dst[t * kpairs * mr + i * kpairs + kp], zero past `rows` and past k_total.
void pack_a_bf16_rows(const StridedMatrix& src, int64_t r0, int64_t rows, int64_t kp0, int64_t kpairs,
                      int64_t k_total, int mr, float* dst);

}  // namespace dnngraph::cpu::gemm
