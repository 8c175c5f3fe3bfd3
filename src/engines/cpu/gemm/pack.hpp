// Packing strided matrices of any supported type (fp32, bf16, fp16) into the fp32 layouts the
// microkernels read: row-major A blocks and NR-wide B panels. Conversions happen here, so the
// kernels only ever see fp32.
#pragma once
#include <cstdint>

#include "dnngraph/types.hpp"

namespace dnngraph::cpu::gemm {

// A 2-D view: element (r, c) at data + (r * rs + c * cs) elements of type `dtype`.
struct StridedMatrix {
  const void* data = nullptr;
  DataType dtype = DataType::FLOAT;
  int64_t rs = 0, cs = 0;
};

bool packable(DataType t);  // FLOAT, BFLOAT16, HALF

// dst[i * ld + k] = src(r0 + i, c0 + k) for i < rows, k < cols, in fp32.
void pack_rows(const StridedMatrix& src, int64_t r0, int64_t rows, int64_t c0, int64_t cols, float* dst, int64_t ld);

// k-major A panels of mr rows: panel t holds dst[t * cols * mr + k * mr + i] = src(r0 + t * mr + i,
// c0 + k), zero for rows past `rows`.
void pack_a_panels(const StridedMatrix& src, int64_t r0, int64_t rows, int64_t c0, int64_t cols, int mr, float* dst);

// B panels: columns [c0, c0 + cols) of rows [0, krows), NR wide: panel p holds
// dst[p * krows * nr + k * nr + j] = src(k, c0 + p * nr + j), zero past `cols`.
void pack_panels(const StridedMatrix& src, int64_t krows, int64_t c0, int64_t cols, int nr, float* dst);

// n values from src + i * stride (elements of `t`) to fp32.
void convert_run(const void* src, DataType t, int64_t stride, int64_t n, float* dst);

}  // namespace dnngraph::cpu::gemm
