// Element conversions of src/core/dtype.hpp: exhaustive round trips of the 16- and 8-bit float
// formats, ties to even, overflow, NaN, subnormals and integer saturation.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <random>
#include <vector>

#include "core/dtype.hpp"

namespace dg = dnngraph;
namespace dt = dnngraph::dtype;

namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();
const double kNaN = std::nan("");

// An independent decoder for IEEE-style formats, written from the format definitions.
double decode_ieee(uint32_t bits, int exp_bits, int man_bits) {
  const uint32_t man = bits & ((1u << man_bits) - 1);
  const uint32_t exp = (bits >> man_bits) & ((1u << exp_bits) - 1);
  const bool neg = (bits >> (exp_bits + man_bits)) & 1u;
  const int bias = (1 << (exp_bits - 1)) - 1;
  double v;
  if (exp == (1u << exp_bits) - 1) v = man ? kNaN : kInf;
  else if (exp == 0) v = man * std::pow(2.0, 1 - bias - man_bits);
  else v = (1.0 + man * std::pow(2.0, -man_bits)) * std::pow(2.0, static_cast<int>(exp) - bias);
  return neg ? -v : v;
}

// E4M3 "fn": no infinities; S.1111.111 is NaN, so S.1111.110 = 448 is the largest value.
double decode_e4m3_reference(uint32_t bits) {
  if ((bits & 0x7f) == 0x7f) return kNaN;
  const uint32_t man = bits & 7, exp = (bits >> 3) & 15;
  const double v = exp == 0 ? man * std::pow(2.0, -9) : (1.0 + man / 8.0) * std::pow(2.0, static_cast<int>(exp) - 7);
  return (bits & 0x80) ? -v : v;
}

bool same_value(double a, double b) {
  if (std::isnan(a) || std::isnan(b)) return std::isnan(a) && std::isnan(b);
  return a == b && std::signbit(a) == std::signbit(b);
}

struct Format {
  const char* name;
  dt::FloatFormat f;
  int bits;
  dg::DataType type;
};
const Format kFormats[] = {
    {"HALF", dt::kHalf, 16, dg::DataType::HALF},
    {"BFLOAT16", dt::kBf16, 16, dg::DataType::BFLOAT16},
    {"FP8_E4M3", dt::kE4M3, 8, dg::DataType::FP8_E4M3},
    {"FP8_E5M2", dt::kE5M2, 8, dg::DataType::FP8_E5M2},
};

double reference_decode(const Format& fmt, uint32_t bits) {
  if (fmt.type == dg::DataType::FP8_E4M3) return decode_e4m3_reference(bits);
  return decode_ieee(bits, fmt.f.exp_bits, fmt.f.man_bits);
}

// Every bit pattern decodes to the independently decoded value and encodes back to itself
// (NaNs to some NaN), through encode/decode and through store/load of the DataType.
TEST(Dtype, EveryBitPatternRoundTrips) {
  for (const Format& fmt : kFormats) {
    SCOPED_TRACE(fmt.name);
    const uint32_t count = 1u << fmt.bits;
    for (uint32_t bits = 0; bits < count; ++bits) {
      const double v = dt::decode(bits, fmt.f);
      ASSERT_TRUE(same_value(v, reference_decode(fmt, bits))) << std::hex << bits;
      const uint32_t back = dt::encode(v, fmt.f);
      if (std::isnan(v)) {
        ASSERT_TRUE(std::isnan(dt::decode(back, fmt.f))) << std::hex << bits;
        continue;
      }
      ASSERT_EQ(back, bits) << "value " << v;
      ASSERT_TRUE(same_value(dt::round_to(fmt.type, v), v)) << std::hex << bits;
      alignas(8) unsigned char buf[8] = {};
      std::memcpy(buf, &bits, static_cast<size_t>(fmt.bits / 8));  // little-endian hosts
      ASSERT_TRUE(same_value(dt::load(buf, fmt.type, 0), v)) << std::hex << bits;
    }
  }
}

TEST(Dtype, HalfAndBf16HelpersMatchTheGenericCodec) {
  for (uint32_t bits = 0; bits < 65536; ++bits) {
    const auto h = static_cast<uint16_t>(bits);
    ASSERT_TRUE(same_value(dt::half_to_float(h), dt::decode(bits, dt::kHalf))) << std::hex << bits;
    ASSERT_TRUE(same_value(dt::bf16_to_float(h), dt::decode(bits, dt::kBf16))) << std::hex << bits;
    const float f = dt::bf16_to_float(h);
    if (std::isnan(f)) ASSERT_TRUE(std::isnan(dt::bf16_to_float(dt::float_to_bf16(f))));
    else ASSERT_EQ(dt::float_to_bf16(f), h);
  }
  // The hot-path float -> bf16 and float -> half agree with the generic encoder on random floats of
  // every magnitude (float -> half bit for bit, NaN included).
  std::mt19937 rng(7);
  for (int i = 0; i < 200000; ++i) {
    uint32_t b = static_cast<uint32_t>(rng());
    float f;
    std::memcpy(&f, &b, 4);
    const uint16_t fast = dt::float_to_bf16(f);
    if (std::isnan(f)) ASSERT_TRUE(std::isnan(dt::bf16_to_float(fast)));
    else ASSERT_EQ(fast, dt::encode(f, dt::kBf16)) << std::hex << b;
    ASSERT_EQ(dt::float_to_half(f), dt::encode(f, dt::kHalf)) << std::hex << b;
  }
}

// Between every two adjacent representable values: the exact midpoint goes to the one with an even
// mantissa; a hair below goes down, a hair above goes up.
TEST(Dtype, TiesRoundToEvenAndOthersToNearest) {
  for (const Format& fmt : kFormats) {
    SCOPED_TRACE(fmt.name);
    const uint32_t sign_bit = 1u << (fmt.bits - 1);
    for (uint32_t lo = 0; lo + 1 < sign_bit; ++lo) {
      const uint32_t hi = lo + 1;
      const double a = dt::decode(lo, fmt.f), b = dt::decode(hi, fmt.f);
      if (std::isnan(a) || std::isnan(b) || std::isinf(b)) continue;
      const double mid = (a + b) / 2;  // exact: both have few significant bits
      ASSERT_TRUE(mid > a && mid < b);
      const uint32_t even = (lo & 1u) ? hi : lo;
      ASSERT_EQ(dt::encode(mid, fmt.f), even) << "tie between " << a << " and " << b;
      ASSERT_EQ(dt::encode(-mid, fmt.f), even | sign_bit) << "tie between " << -a << " and " << -b;
      ASSERT_EQ(dt::encode(std::nextafter(mid, 0.0), fmt.f), lo) << a << ".." << b;
      ASSERT_EQ(dt::encode(std::nextafter(mid, kInf), fmt.f), hi) << a << ".." << b;
    }
  }
}

#if defined(__FLT16_MAX__)
// The compiler's own _Float16 conversion (round to nearest even) as an oracle for encode.
TEST(Dtype, HalfEncodeMatchesCompilerFloat16) {
  std::mt19937_64 rng(11);
  std::uniform_real_distribution<double> mantissa(-1.0, 1.0);
  std::uniform_int_distribution<int> exponent(-30, 18);
  for (int i = 0; i < 200000; ++i) {
    const double v = std::ldexp(mantissa(rng), exponent(rng));
    const _Float16 h = static_cast<_Float16>(v);
    uint16_t expect;
    std::memcpy(&expect, &h, 2);
    ASSERT_EQ(dt::encode(v, dt::kHalf), expect) << v;
  }
}
#endif

TEST(Dtype, OverflowRules) {
  // fp16: largest 65504; the tie at 65520 rounds to even, which is past the largest: inf.
  EXPECT_EQ(dt::encode(65504.0, dt::kHalf), 0x7bffu);
  EXPECT_EQ(dt::encode(std::nextafter(65520.0, 0.0), dt::kHalf), 0x7bffu);
  EXPECT_EQ(dt::encode(65520.0, dt::kHalf), 0x7c00u);
  EXPECT_EQ(dt::encode(-1e6, dt::kHalf), 0xfc00u);
  EXPECT_EQ(dt::encode(kInf, dt::kHalf), 0x7c00u);
  // bf16: largest 0x7f7f = (2 - 2^-7) * 2^127; half an ulp above it overflows.
  const double bf16_max = dt::decode(0x7f7f, dt::kBf16);
  EXPECT_EQ(bf16_max, (2.0 - std::ldexp(1.0, -7)) * std::ldexp(1.0, 127));
  EXPECT_EQ(dt::encode(bf16_max + std::ldexp(1.0, 119), dt::kBf16), 0x7f80u);
  EXPECT_EQ(dt::encode(std::nextafter(bf16_max + std::ldexp(1.0, 119), 0.0), dt::kBf16), 0x7f7fu);
  EXPECT_EQ(dt::encode(-1e300, dt::kBf16), 0xff80u);
  EXPECT_EQ(dt::float_to_bf16(std::numeric_limits<float>::max()), 0x7f80u);
  // e4m3fn has no inf: everything beyond 448, infinities included, saturates to +-448.
  EXPECT_EQ(dt::decode(0x7e, dt::kE4M3), 448.0);
  for (double v : {449.0, 464.0, 480.0, 1e4, 1e300, kInf}) {
    EXPECT_EQ(dt::encode(v, dt::kE4M3), 0x7eu) << v;
    EXPECT_EQ(dt::encode(-v, dt::kE4M3), 0xfeu) << v;
  }
  EXPECT_EQ(dt::round_to(dg::DataType::FP8_E4M3, 1e9), 448.0);
  // e5m2: largest 57344; the tie at 61440 goes to even (65536), which overflows to inf.
  EXPECT_EQ(dt::decode(0x7b, dt::kE5M2), 57344.0);
  EXPECT_EQ(dt::encode(std::nextafter(61440.0, 0.0), dt::kE5M2), 0x7bu);
  EXPECT_EQ(dt::encode(61440.0, dt::kE5M2), 0x7cu);
  EXPECT_EQ(dt::encode(-1e9, dt::kE5M2), 0xfcu);
  EXPECT_EQ(dt::round_to(dg::DataType::FP8_E5M2, 1e9), kInf);
}

TEST(Dtype, NaNStaysNaN) {
  for (dg::DataType t : {dg::DataType::FLOAT, dg::DataType::DOUBLE, dg::DataType::HALF, dg::DataType::BFLOAT16,
                         dg::DataType::FP8_E4M3, dg::DataType::FP8_E5M2}) {
    EXPECT_TRUE(std::isnan(dt::round_to(t, kNaN))) << dg::to_string(t);
    EXPECT_TRUE(std::isnan(dt::round_to(t, -kNaN))) << dg::to_string(t);
  }
  for (const Format& fmt : kFormats) {
    EXPECT_TRUE(std::isnan(dt::decode(dt::encode(kNaN, fmt.f), fmt.f))) << fmt.name;
  }
  // A signalling-looking float NaN whose payload lives only in the low bits must not become inf.
  uint32_t b = 0x7f800001u;
  float f;
  std::memcpy(&f, &b, 4);
  EXPECT_TRUE(std::isnan(dt::bf16_to_float(dt::float_to_bf16(f))));
  EXPECT_TRUE(std::isnan(dt::decode(dt::encode(f, dt::kBf16), dt::kBf16)));
}

TEST(Dtype, Subnormals) {
  // Smallest subnormals and normals of each format.
  EXPECT_EQ(dt::decode(0x0001, dt::kHalf), std::ldexp(1.0, -24));
  EXPECT_EQ(dt::decode(0x0400, dt::kHalf), std::ldexp(1.0, -14));
  EXPECT_EQ(dt::decode(0x0001, dt::kBf16), std::ldexp(1.0, -133));
  EXPECT_EQ(dt::decode(0x01, dt::kE4M3), std::ldexp(1.0, -9));
  EXPECT_EQ(dt::decode(0x08, dt::kE4M3), std::ldexp(1.0, -6));
  EXPECT_EQ(dt::decode(0x01, dt::kE5M2), std::ldexp(1.0, -16));
  EXPECT_EQ(dt::decode(0x04, dt::kE5M2), std::ldexp(1.0, -14));
  // Half the smallest subnormal ties to zero (even); a hair above rounds up; the sign survives.
  EXPECT_EQ(dt::encode(std::ldexp(1.0, -25), dt::kHalf), 0x0000u);
  EXPECT_EQ(dt::encode(std::nextafter(std::ldexp(1.0, -25), 1.0), dt::kHalf), 0x0001u);
  EXPECT_EQ(dt::encode(-std::ldexp(1.0, -30), dt::kHalf), 0x8000u);
  EXPECT_EQ(dt::encode(-1e-300, dt::kE4M3), 0x80u);
  // Subnormal -> normal boundary: the largest subnormal plus half an ulp ties to the smallest normal.
  EXPECT_EQ(dt::encode(std::ldexp(1023.5, -24), dt::kHalf), 0x0400u);
  EXPECT_EQ(dt::encode(std::ldexp(1022.5, -24), dt::kHalf), 0x03feu);
  // bf16 keeps float's subnormals.
  const float tiny = std::numeric_limits<float>::denorm_min();
  EXPECT_EQ(dt::float_to_bf16(tiny * 65536.0f), 0x0001u);
  EXPECT_EQ(dt::encode(tiny * 65536.0f, dt::kBf16), 0x0001u);
}

TEST(Dtype, IntegersRoundToEvenAndSaturate) {
  using T = dg::DataType;
  EXPECT_EQ(dt::round_to(T::INT8, 200.0), 127.0);
  EXPECT_EQ(dt::round_to(T::INT8, -200.0), -128.0);
  EXPECT_EQ(dt::round_to(T::INT8, 127.4), 127.0);
  EXPECT_EQ(dt::round_to(T::INT8, 2.5), 2.0);
  EXPECT_EQ(dt::round_to(T::INT8, 3.5), 4.0);
  EXPECT_EQ(dt::round_to(T::INT8, -2.5), -2.0);
  EXPECT_EQ(dt::round_to(T::INT8, 2.5000001), 3.0);
  EXPECT_EQ(dt::round_to(T::INT8, kNaN), 0.0);
  EXPECT_EQ(dt::round_to(T::INT8, kInf), 127.0);
  EXPECT_EQ(dt::round_to(T::UINT8, -5.0), 0.0);
  EXPECT_EQ(dt::round_to(T::UINT8, 300.0), 255.0);
  EXPECT_EQ(dt::round_to(T::UINT8, 254.5), 254.0);
  EXPECT_EQ(dt::round_to(T::INT32, 1e10), 2147483647.0);
  EXPECT_EQ(dt::round_to(T::INT32, -1e10), -2147483648.0);
  EXPECT_EQ(dt::round_to(T::INT32, -kInf), -2147483648.0);
  EXPECT_EQ(dt::round_to(T::INT32, 1e9 + 0.5), 1e9);
  alignas(8) unsigned char buf[8];
  dt::store(buf, T::INT64, 0, 1e19);
  int64_t i64;
  std::memcpy(&i64, buf, 8);
  EXPECT_EQ(i64, std::numeric_limits<int64_t>::max());
  dt::store(buf, T::INT64, 0, -1e19);
  std::memcpy(&i64, buf, 8);
  EXPECT_EQ(i64, std::numeric_limits<int64_t>::min());
  dt::store(buf, T::INT64, 0, 9007199254740993.0);  // rounds to 2^53 as a double first
  std::memcpy(&i64, buf, 8);
  EXPECT_EQ(i64, int64_t{1} << 53);
  EXPECT_EQ(dt::round_to(T::BOOLEAN, 0.25), 1.0);
  EXPECT_EQ(dt::round_to(T::BOOLEAN, -3.0), 1.0);
  EXPECT_EQ(dt::round_to(T::BOOLEAN, 0.0), 0.0);
  EXPECT_EQ(dt::round_to(T::BOOLEAN, -0.0), 0.0);
}

}  // namespace
