// Element conversions for every DataType: exact decoding, round-to-nearest-even encoding.
// fp16/bf16 overflow to inf; FP8_E4M3 (the "fn" variant, no inf) saturates to +-448; FP8_E5M2
// overflows to inf. NaN stays NaN. Integers round to nearest even and saturate.
#pragma once
#include <bit>
#include <cmath>
#include <cstdint>
#include <limits>

#include "dnngraph/types.hpp"

namespace dnngraph::dtype {

// A small binary float format: exponent bits, mantissa bits, whether it has inf.
struct FloatFormat {
  int exp_bits;
  int man_bits;
  bool has_inf;  // false: all-ones exponent is finite except the NaN pattern (e4m3fn)
};
inline constexpr FloatFormat kHalf{5, 10, true};
inline constexpr FloatFormat kBf16{8, 7, true};
inline constexpr FloatFormat kE4M3{4, 3, false};
inline constexpr FloatFormat kE5M2{5, 2, true};

inline constexpr bool is_fp8(DataType t) { return t == DataType::FP8_E4M3 || t == DataType::FP8_E5M2; }

inline double decode(uint32_t bits, FloatFormat f) {
  const int total = 1 + f.exp_bits + f.man_bits;
  const uint32_t sign = (bits >> (total - 1)) & 1u;
  const uint32_t exp = (bits >> f.man_bits) & ((1u << f.exp_bits) - 1u);
  const uint32_t man = bits & ((1u << f.man_bits) - 1u);
  const int bias = (1 << (f.exp_bits - 1)) - 1;
  const uint32_t exp_max = (1u << f.exp_bits) - 1u;
  double v;
  if (f.has_inf && exp == exp_max) {
    v = man ? std::numeric_limits<double>::quiet_NaN() : std::numeric_limits<double>::infinity();
  } else if (!f.has_inf && exp == exp_max && man == (1u << f.man_bits) - 1u) {
    v = std::numeric_limits<double>::quiet_NaN();
  } else if (exp == 0) {
    v = std::ldexp(static_cast<double>(man), 1 - bias - f.man_bits);
  } else {
    v = std::ldexp(static_cast<double>(man | (1u << f.man_bits)), static_cast<int>(exp) - bias - f.man_bits);
  }
  return sign ? -v : v;
}

inline uint32_t encode(double x, FloatFormat f) {
  const int total = 1 + f.exp_bits + f.man_bits;
  const uint32_t sign = std::signbit(x) ? (1u << (total - 1)) : 0u;
  const int bias = (1 << (f.exp_bits - 1)) - 1;
  const uint32_t exp_max = (1u << f.exp_bits) - 1u;
  const uint32_t man_all = (1u << f.man_bits) - 1u;
  if (std::isnan(x)) return sign | (exp_max << f.man_bits) | (f.has_inf ? (1u << (f.man_bits - 1)) : man_all);
  const double a = std::fabs(x);
  // Largest finite value and the pattern for overflow.
  const uint32_t max_bits = f.has_inf ? (((exp_max - 1) << f.man_bits) | man_all) : ((exp_max << f.man_bits) | (man_all - 1));
  const double max_val = decode(max_bits, f);
  const uint32_t overflow_bits = f.has_inf ? (exp_max << f.man_bits) : max_bits;
  if (std::isinf(a)) return sign | overflow_bits;
  const int emin = 1 - bias;
  int e = 0;
  std::frexp(a, &e);  // a = m * 2^e, m in [0.5, 1)
  const int unbiased = e - 1;
  const int quantum_exp = (unbiased < emin ? emin : unbiased) - f.man_bits;
  // Scaling by a power of two is exact, so nearbyint rounds once, half to even.
  const double r = std::ldexp(std::nearbyint(std::ldexp(a, -quantum_exp)), quantum_exp);
  if (r > max_val) return sign | overflow_bits;
  if (r == 0.0) return sign;
  std::frexp(r, &e);
  const int ur = e - 1;
  if (ur < emin) {
    const uint32_t man = static_cast<uint32_t>(std::ldexp(r, -(emin - f.man_bits)));
    return sign | man;
  }
  const uint32_t exp_field = static_cast<uint32_t>(ur + bias);
  const uint32_t man = static_cast<uint32_t>(std::ldexp(r, -(ur - f.man_bits))) & man_all;
  return sign | (exp_field << f.man_bits) | man;
}

// ---- fp32 <-> bf16 / fp16 bits: the one scalar form of these conversions, for every engine's
// hot loops (exact, round-to-nearest-even, no tables; they auto-vectorize). They equal encode and
// decode of kBf16 and kHalf on every input (checked for all 2^32 floats), except that
// half_to_float keeps a NaN's payload where decode quiets it.

inline uint32_t float_bits(float f) { return std::bit_cast<uint32_t>(f); }
inline float bits_float(uint32_t u) { return std::bit_cast<float>(u); }

inline float bf16_to_float(uint16_t h) { return bits_float(static_cast<uint32_t>(h) << 16); }

inline uint16_t float_to_bf16(float v) {
  uint32_t b = float_bits(v);
  if ((b & 0x7fffffffu) > 0x7f800000u) return static_cast<uint16_t>((b >> 16) | 0x40u);  // quiet NaN
  b += 0x7fffu + ((b >> 16) & 1u);
  return static_cast<uint16_t>(b >> 16);
}

// Exponent/mantissa moved into fp32 position, then scaled by 2^112: exact for normals and
// subnormals alike; inf/NaN get the all-ones exponent.
inline float half_to_float(uint16_t h) {
  const uint32_t sign = static_cast<uint32_t>(h & 0x8000u) << 16;
  const uint32_t em = h & 0x7fffu;
  if (em >= 0x7c00u) return bits_float(sign | 0x7f800000u | (em & 0x3ffu) << 13);
  return bits_float(sign | float_bits(bits_float(em << 13) * 0x1p112f));
}

// F. Giesen's round-to-nearest-even fp32 -> fp16 (the subnormal case rounds by a float add).
inline uint16_t float_to_half(float f) {
  constexpr uint32_t kInf32 = 255u << 23, kMax16 = (127u + 16u) << 23;
  constexpr uint32_t kDenormMagic = ((127u - 15u) + (23u - 10u) + 1u) << 23;
  uint32_t u = float_bits(f);
  const uint32_t sign = u & 0x80000000u;
  u ^= sign;
  uint32_t o;
  if (u >= kMax16) {
    o = u > kInf32 ? 0x7e00u : 0x7c00u;
  } else if (u < (113u << 23)) {
    o = float_bits(bits_float(u) + bits_float(kDenormMagic)) - kDenormMagic;
  } else {
    const uint32_t odd = (u >> 13) & 1u;
    u += (static_cast<uint32_t>(15 - 127) << 23) + 0xfffu + odd;
    o = u >> 13;
  }
  return static_cast<uint16_t>(o | (sign >> 16));
}

// Load element `i` (an element offset, not bytes) of a buffer of type t as double.
double load(const void* base, DataType t, int64_t i);
// Store v, rounded to t, at element offset i.
void store(void* base, DataType t, int64_t i, double v);
// Round v to what type t can hold (as store-then-load would).
double round_to(DataType t, double v);

}  // namespace dnngraph::dtype
