// Scalar fp32 <-> fp16/bf16 conversions for the CPU engines' hot loops (round-to-nearest-even,
// exact, no tables); they auto-vectorize. core/dtype.hpp has the general (double) forms.
#pragma once
#include <cstdint>
#include <cstring>

namespace dnngraph::cpu {

inline uint32_t float_bits(float f) {
  uint32_t u;
  std::memcpy(&u, &f, 4);
  return u;
}
inline float bits_float(uint32_t u) {
  float f;
  std::memcpy(&f, &u, 4);
  return f;
}

inline float bf16_to_fp32(uint16_t h) { return bits_float(static_cast<uint32_t>(h) << 16); }

inline uint16_t fp32_to_bf16(float v) {
  uint32_t b = float_bits(v);
  if ((b & 0x7fffffffu) > 0x7f800000u) return static_cast<uint16_t>((b >> 16) | 0x40u);  // quiet NaN
  b += 0x7fffu + ((b >> 16) & 1u);
  return static_cast<uint16_t>(b >> 16);
}

// Exponent/mantissa moved into fp32 position, then scaled by 2^112: exact for normals and
// subnormals alike; inf/NaN get the all-ones exponent.
inline float fp16_to_fp32(uint16_t h) {
  const uint32_t sign = static_cast<uint32_t>(h & 0x8000u) << 16;
  const uint32_t em = h & 0x7fffu;
  if (em >= 0x7c00u) return bits_float(sign | 0x7f800000u | (em & 0x3ffu) << 13);
  return bits_float(sign | float_bits(bits_float(em << 13) * 0x1p112f));
}

// F. Giesen's round-to-nearest-even fp32 -> fp16 (the subnormal case rounds by a float add).
inline uint16_t fp32_to_fp16(float f) {
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

}  // namespace dnngraph::cpu
