// Pointwise functions for generated code, in fp32, following the reference engine's formulas
// (src/engines/ref/ref_pointwise.cpp). Backward modes take (dy, x).
#pragma once
#include "dg_types.cuh"

namespace dg {

__device__ __forceinline__ float sigmoid(float x) { return 1.0f / (1.0f + expf(-x)); }
__device__ __forceinline__ float relu(float x, float lo, float slope) { return x > lo ? x : lo + slope * (x - lo); }
// Without a slope: a compare and a select (the slope's form costs an FMA more per element, and its
// 0 * (x - lo) made relu(-inf) NaN); NaN stays NaN.
__device__ __forceinline__ float relu_plain(float x, float lo) { return x <= lo ? lo : x; }
// ReLU's upper clip keeps NaN (fminf would return the bound), as ref and the CPU engines do.
__device__ __forceinline__ float clip_above(float x, float hi) { return x > hi ? hi : x; }
__device__ __forceinline__ float relu_bwd(float dy, float x, float lo, float slope) { return x > lo ? dy : dy * slope; }
__device__ __forceinline__ float elu(float x, float alpha) { return x > 0.0f ? x : alpha * expm1f(x); }
__device__ __forceinline__ float elu_bwd(float dy, float x, float alpha) { return x > 0.0f ? dy : dy * alpha * expf(x); }
__device__ __forceinline__ float gelu(float x) { return 0.5f * x * (1.0f + erff(x * 0.70710678118654752f)); }
__device__ __forceinline__ float gelu_bwd(float dy, float x) {
  const float cdf = 0.5f * (1.0f + erff(x * 0.70710678118654752f));
  const float pdf = expf(-0.5f * x * x) * 0.39894228040143268f;
  return dy * (cdf + x * pdf);
}
__device__ __forceinline__ float gelu_tanh_inner(float x) { return 0.79788456080286536f * (x + 0.044715f * x * x * x); }
__device__ __forceinline__ float gelu_tanh(float x) { return 0.5f * x * (1.0f + tanhf(gelu_tanh_inner(x))); }
__device__ __forceinline__ float gelu_tanh_bwd(float dy, float x) {
  const float t = tanhf(gelu_tanh_inner(x));
  const float dinner = 0.79788456080286536f * (1.0f + 3.0f * 0.044715f * x * x);
  return dy * (0.5f * (1.0f + t) + 0.5f * x * (1.0f - t * t) * dinner);
}
__device__ __forceinline__ float softplus(float x, float beta) { return log1pf(expf(beta * x)) / beta; }
__device__ __forceinline__ float softplus_bwd(float dy, float x, float beta) { return dy * sigmoid(beta * x); }
__device__ __forceinline__ float swish(float x, float beta) { return x * sigmoid(beta * x); }
__device__ __forceinline__ float swish_bwd(float dy, float x, float beta) {
  const float s = sigmoid(beta * x);
  return dy * (s + beta * x * s * (1.0f - s));
}
__device__ __forceinline__ float tanh_bwd(float dy, float x) {
  const float t = tanhf(x);
  return dy * (1.0f - t * t);
}
__device__ __forceinline__ float sigmoid_bwd(float dy, float x) {
  const float s = sigmoid(x);
  return dy * s * (1.0f - s);
}
__device__ __forceinline__ float boolf(bool b) { return b ? 1.0f : 0.0f; }

}  // namespace dg
