// Element types and conversions for generated kernels. Compiled by NVRTC (no CUDA headers are
// available there, so nothing is included). Rounding follows src/core/dtype.hpp exactly:
// round-to-nearest-even; fp16/bf16/e5m2 overflow to inf; e4m3 ("fn", no inf) saturates to
// +-448; NaN stays NaN; integers round half to even and saturate, NaN -> 0.
#pragma once

// Loop unrolling for NVRTC/nvcc; nothing when a host compiler reads this file (tests do).
#if defined(__CUDACC__)
#define DG_UNROLL _Pragma("unroll")
#else
#define DG_UNROLL
#endif

namespace dg {

typedef unsigned char u8;
typedef unsigned short u16;
typedef unsigned int u32;
typedef unsigned long long u64;
typedef long long i64;

// dnngraph::DataType values.
enum DType : int {
  DT_FLOAT = 1, DT_HALF = 2, DT_BFLOAT16 = 3, DT_DOUBLE = 4, DT_INT8 = 5, DT_INT32 = 6, DT_INT64 = 7,
  DT_BOOLEAN = 8, DT_UINT8 = 9, DT_FP8_E4M3 = 10, DT_FP8_E5M2 = 11,
  // Not DataType values: the FP8 GEMM's operand pairs whose formats differ (A's first).
  DT_FP8_E4M3_E5M2 = 100, DT_FP8_E5M2_E4M3 = 101,
};
template <int DT> struct IsFp8Operand {
  static constexpr bool value =
      DT == DT_FP8_E4M3 || DT == DT_FP8_E5M2 || DT == DT_FP8_E4M3_E5M2 || DT == DT_FP8_E5M2_E4M3;
};

template <int DT> struct Storage;
template <> struct Storage<DT_FLOAT> { typedef float type; };
template <> struct Storage<DT_HALF> { typedef u16 type; };
template <> struct Storage<DT_BFLOAT16> { typedef u16 type; };
template <> struct Storage<DT_INT8> { typedef signed char type; };
template <> struct Storage<DT_INT32> { typedef int type; };
template <> struct Storage<DT_BOOLEAN> { typedef u8 type; };
template <> struct Storage<DT_UINT8> { typedef u8 type; };
template <> struct Storage<DT_FP8_E4M3> { typedef u8 type; };
template <> struct Storage<DT_FP8_E5M2> { typedef u8 type; };

__device__ __forceinline__ u32 f2u(float x) { return __float_as_uint(x); }
__device__ __forceinline__ float u2f(u32 x) { return __uint_as_float(x); }
__device__ __forceinline__ bool is_nan(float x) { return x != x; }

// ---- small float formats: decode exactly, encode with round-to-nearest-even.
// EXP/MAN: field widths; HAS_INF: false for e4m3fn (all-ones exponent is finite but for NaN).
template <int EXP, int MAN, bool HAS_INF>
__device__ __forceinline__ float decode_small(u32 bits) {
  const int bias = (1 << (EXP - 1)) - 1;
  const u32 sign = (bits >> (EXP + MAN)) & 1u;
  const u32 exp = (bits >> MAN) & ((1u << EXP) - 1u);
  const u32 man = bits & ((1u << MAN) - 1u);
  const u32 exp_max = (1u << EXP) - 1u;
  float v;
  if (HAS_INF && exp == exp_max) v = man ? u2f(0x7fc00000u) : u2f(0x7f800000u);
  else if (!HAS_INF && exp == exp_max && man == (1u << MAN) - 1u) v = u2f(0x7fc00000u);
  else if (exp == 0) v = (float)man * u2f((u32)(127 + 1 - bias - MAN) << 23);  // subnormal: man * 2^(1-bias-MAN)
  else v = u2f(((exp + 127 - bias) << 23) | (man << (23 - MAN)));
  return sign ? -v : v;
}

template <int EXP, int MAN, bool HAS_INF>
__device__ __forceinline__ u32 encode_small(float x) {
  const int bias = (1 << (EXP - 1)) - 1;
  const u32 sign = (f2u(x) >> 31) << (EXP + MAN);
  const u32 exp_max = (1u << EXP) - 1u;
  const u32 man_all = (1u << MAN) - 1u;
  if (is_nan(x)) return sign | (exp_max << MAN) | (HAS_INF ? (1u << (MAN - 1)) : man_all);
  const u32 max_bits = HAS_INF ? (((exp_max - 1u) << MAN) | man_all) : ((exp_max << MAN) | (man_all - 1u));
  const u32 overflow_bits = HAS_INF ? (exp_max << MAN) : max_bits;
  const float a = fabsf(x);
  const float min_normal = u2f((u32)(127 + 1 - bias) << 23);
  u32 r;
  if (a < min_normal) {
    // Subnormal range: scale so that one quantum is 1, round half to even (exact: power-of-two scale).
    r = (u32)rintf(a * u2f((u32)(127 + bias - 1 + MAN) << 23));
  } else {
    const u32 b = f2u(a);
    const int drop = 23 - MAN;
    const u32 rounded = (b + ((1u << (drop - 1)) - 1u) + ((b >> drop) & 1u)) >> drop;
    r = rounded - ((u32)(127 - bias) << MAN);  // rebias the exponent (carries propagate correctly)
    if (f2u(a) >= 0x7f800000u) r = 0xffffffffu;  // inf
  }
  return sign | (r > max_bits ? overflow_bits : r);
}

__device__ __forceinline__ float bf16_to_float(u16 h) { return u2f((u32)h << 16); }
__device__ __forceinline__ u16 float_to_bf16(float v) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
  u16 h;
  asm("cvt.rn.bf16.f32 %0, %1;" : "=h"(h) : "f"(v));
  return h;
#endif
  u32 b = f2u(v);
  if ((b & 0x7fffffffu) > 0x7f800000u) return (u16)((b >> 16) | 0x40u);
  b += 0x7fffu + ((b >> 16) & 1u);
  return (u16)(b >> 16);
}

// One PTX cvt each on the device; the software rounding where this is compiled for the host (the
// conversion tests).
#if defined(__CUDA_ARCH__)
__device__ __forceinline__ float half_to_float(u16 h) {
  float f;
  asm("cvt.f32.f16 %0, %1;" : "=f"(f) : "h"(h));
  return f;
}
__device__ __forceinline__ u16 float_to_half(float v) {
  u16 h;
  asm("cvt.rn.f16.f32 %0, %1;" : "=h"(h) : "f"(v));
  return h;
}
#else
__device__ __forceinline__ float half_to_float(u16 h) { return decode_small<5, 10, true>(h); }
__device__ __forceinline__ u16 float_to_half(float v) { return (u16)encode_small<5, 10, true>(v); }
#endif

// Integers: round half to even, saturate, NaN -> 0 (as dtype::store).
template <class T>
__device__ __forceinline__ T saturate_int(float v, float lo, float hi) {
  if (is_nan(v)) return (T)0;
  const float r = rintf(v);
  if (r <= lo) return (T)lo;
  if (r >= hi) return (T)hi;
  return (T)r;
}

template <int DT> __device__ __forceinline__ float to_float(typename Storage<DT>::type x);
template <> __device__ __forceinline__ float to_float<DT_FLOAT>(float x) { return x; }
template <> __device__ __forceinline__ float to_float<DT_HALF>(u16 x) { return half_to_float(x); }
template <> __device__ __forceinline__ float to_float<DT_BFLOAT16>(u16 x) { return bf16_to_float(x); }
template <> __device__ __forceinline__ float to_float<DT_INT8>(signed char x) { return (float)x; }
template <> __device__ __forceinline__ float to_float<DT_INT32>(int x) { return (float)x; }
template <> __device__ __forceinline__ float to_float<DT_BOOLEAN>(u8 x) { return x ? 1.0f : 0.0f; }
template <> __device__ __forceinline__ float to_float<DT_UINT8>(u8 x) { return (float)x; }
template <> __device__ __forceinline__ float to_float<DT_FP8_E4M3>(u8 x) { return decode_small<4, 3, false>(x); }
template <> __device__ __forceinline__ float to_float<DT_FP8_E5M2>(u8 x) { return decode_small<5, 2, true>(x); }

template <int DT> __device__ __forceinline__ typename Storage<DT>::type from_float(float v);
template <> __device__ __forceinline__ float from_float<DT_FLOAT>(float v) { return v; }
template <> __device__ __forceinline__ u16 from_float<DT_HALF>(float v) { return float_to_half(v); }
template <> __device__ __forceinline__ u16 from_float<DT_BFLOAT16>(float v) { return float_to_bf16(v); }
template <> __device__ __forceinline__ signed char from_float<DT_INT8>(float v) {
  return saturate_int<signed char>(v, -128.0f, 127.0f);
}
template <> __device__ __forceinline__ int from_float<DT_INT32>(float v) {
  // 2^31 is the first float above INT_MAX; saturate before converting.
  if (is_nan(v)) return 0;
  const float r = rintf(v);
  if (r >= 2147483648.0f) return 2147483647;
  if (r <= -2147483648.0f) return (int)0x80000000u;
  return (int)r;
}
template <> __device__ __forceinline__ u8 from_float<DT_BOOLEAN>(float v) { return v != 0.0f ? 1 : 0; }
template <> __device__ __forceinline__ u8 from_float<DT_UINT8>(float v) { return saturate_int<u8>(v, 0.0f, 255.0f); }
// fp8: one cvt on sm_89+ (round to nearest even, satfinite: +-inf and overflow become +-max, NaN
// stays NaN), which is dtype.hpp's rule for e4m3; e5m2 overflows to inf there, so values that round
// past its largest finite value (|x| >= 61440) are set to inf after the cvt.
template <> __device__ __forceinline__ u8 from_float<DT_FP8_E4M3>(float v) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 890
  u16 r;
  asm("cvt.rn.satfinite.e4m3x2.f32 %0, %1, %2;" : "=h"(r) : "f"(0.0f), "f"(v));
  return (u8)(r & 0xffu);
#else
  return (u8)encode_small<4, 3, false>(v);
#endif
}
template <> __device__ __forceinline__ u8 from_float<DT_FP8_E5M2>(float v) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 890
  u16 r;
  asm("cvt.rn.satfinite.e5m2x2.f32 %0, %1, %2;" : "=h"(r) : "f"(0.0f), "f"(v));
  if (fabsf(v) >= 61440.0f) r = (f2u(v) >> 31) ? 0xfcu : 0x7cu;  // NaN compares false: stays NaN
  return (u8)(r & 0xffu);
#else
  return (u8)encode_small<5, 2, true>(v);
#endif
}

// The value a store to type DT then a load would give (intermediates typed narrower than fp32).
template <int DT> __device__ __forceinline__ float round_to(float v) { return to_float<DT>(from_float<DT>(v)); }

// ---- vector access: N elements of T as one aligned load/store of N*sizeof(T) bytes.
template <int BYTES> struct RawVec;
template <> struct RawVec<1> { typedef u8 type; };
template <> struct RawVec<2> { typedef u16 type; };
template <> struct RawVec<4> { typedef u32 type; };
template <> struct RawVec<8> { typedef uint2 type; };
template <> struct RawVec<16> { typedef uint4 type; };
template <> struct RawVec<32> { struct type { uint4 a, b; }; };
template <> struct RawVec<64> { struct type { uint4 a, b, c, d; }; };

template <class T, int N>
union Packed {
  typename RawVec<sizeof(T) * N>::type raw;
  T v[N];
};

template <int DT, int N>
__device__ __forceinline__ void load_vec(const void* base, i64 off, float (&out)[N]) {
  typedef typename Storage<DT>::type T;
  Packed<T, N> p;
  p.raw = *reinterpret_cast<const typename RawVec<sizeof(T) * N>::type*>(static_cast<const T*>(base) + off);
DG_UNROLL
  for (int j = 0; j < N; ++j) out[j] = to_float<DT>(p.v[j]);
}

template <int DT, int N>
__device__ __forceinline__ void store_vec(void* base, i64 off, const float (&in)[N]) {
  typedef typename Storage<DT>::type T;
  Packed<T, N> p;
DG_UNROLL
  for (int j = 0; j < N; ++j) p.v[j] = from_float<DT>(in[j]);
  *reinterpret_cast<typename RawVec<sizeof(T) * N>::type*>(static_cast<T*>(base) + off) = p.raw;
}

template <int DT>
__device__ __forceinline__ float load_one(const void* base, i64 off) {
  return to_float<DT>(static_cast<const typename Storage<DT>::type*>(base)[off]);
}
template <int DT>
__device__ __forceinline__ void store_one(void* base, i64 off, float v) {
  static_cast<typename Storage<DT>::type*>(base)[off] = from_float<DT>(v);
}

}  // namespace dg
