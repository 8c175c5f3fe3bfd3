// Host mirrors of the kernel parameter structs of kernels/norm_rowwise.cuh (dg::NormParams,
// dg::NormFinalizeParams), passed by value to the kernels.
#pragma once
#include <cstdint>

namespace dnngraph::cuda::norm {

struct NormParams {
  const void* x = nullptr;
  const void* dy = nullptr;
  const void* scale = nullptr;
  const void* bias = nullptr;
  const float* mean = nullptr;
  const float* inv = nullptr;
  void* out = nullptr;
  float* mean_out = nullptr;
  float* inv_out = nullptr;
  float* partials = nullptr;
  int64_t rows = 0, cols = 0;
  int64_t x_pitch = 0, dy_pitch = 0, out_pitch = 0, mean_pitch = 0, inv_pitch = 0;
  float eps = 0.0f, inv_cols = 0.0f;
};
static_assert(sizeof(NormParams) == 10 * 8 + 7 * 8 + 2 * 4, "must match dg::NormParams");

struct NormFinalizeParams {
  const float* partials = nullptr;
  void* dscale = nullptr;
  void* dbias = nullptr;
  int64_t cols = 0;
  int64_t slices = 0;
};
static_assert(sizeof(NormFinalizeParams) == 5 * 8, "must match dg::NormFinalizeParams");

}  // namespace dnngraph::cuda::norm
