// Element conversions for every DataType: exact decoding, round-to-nearest-even encoding.
// fp16/bf16 overflow to inf; FP8_E4M3 (the "fn" variant, no inf) saturates to +-448; FP8_E5M2
// overflows to inf. NaN stays NaN. Integers round to nearest even and saturate.
#pragma once
#include <cmath>
#include <cstdint>
#include <cstring>
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

// float -> bf16 with round-to-nearest-even; the hot-path version for engines.
inline uint16_t float_to_bf16(float v) {
  uint32_t b;
  std::memcpy(&b, &v, 4);
  if ((b & 0x7fffffffu) > 0x7f800000u) return static_cast<uint16_t>((b >> 16) | 0x40u);
  b += 0x7fffu + ((b >> 16) & 1u);
  return static_cast<uint16_t>(b >> 16);
}
inline float bf16_to_float(uint16_t h) {
  uint32_t b = static_cast<uint32_t>(h) << 16;
  float v;
  std::memcpy(&v, &b, 4);
  return v;
}
inline uint16_t float_to_half(float v) { return static_cast<uint16_t>(encode(v, kHalf)); }
float half_to_float(uint16_t h);  // table-free exact decode

// Load element `i` (an element offset, not bytes) of a buffer of type t as double.
double load(const void* base, DataType t, int64_t i);
// Store v, rounded to t, at element offset i.
void store(void* base, DataType t, int64_t i, double v);
// Round v to what type t can hold (as store-then-load would).
double round_to(DataType t, double v);

}  // namespace dnngraph::dtype
