// The element conversions of the generated kernels (kernels/dg_types.cuh), compiled here for the
// host, against src/core/dtype.hpp's rounding rules: every fp8 code, every fp16 code, and a sweep
// of floats across each format's range (subnormals, ties, overflow, inf, NaN). The software paths
// tested here are the ones NVRTC compiles for fp8 on every GPU, and for fp16 on none (it uses PTX cvt).
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <random>

#include "core/dtype.hpp"

namespace host_cuda {
#include "host_cuda_shims.inl"
using std::fabs;
#include "engines/cuda/kernels/dg_types.cuh"
#undef __device__
#undef __forceinline__
}  // namespace host_cuda

namespace dnngraph {
namespace {

namespace k = host_cuda::dg;

bool same(double a, double b) { return (std::isnan(a) && std::isnan(b)) || a == b; }

template <int DT>
void expect_round_trip_matches(DataType t, float x) {
  const double want = dtype::round_to(t, static_cast<double>(x));
  const double got = k::to_float<DT>(k::from_float<DT>(x));
  ASSERT_TRUE(same(got, want)) << to_string(t) << " of " << x << " (bits " << std::hex << host_cuda::__float_as_uint(x)
                               << std::dec << "): got " << got << ", want " << want;
}

std::vector<float> float_sweep() {
  std::vector<float> v = {0.0f, -0.0f, INFINITY, -INFINITY, NAN, 448.0f, 464.0f, 480.0f, 57344.0f, 61440.0f,
                          65504.0f, 65520.0f, 1e-9f, 1e-7f, 6e-8f, 3e-8f, 0.5f, 1.5f, 2.5f, 255.5f, 127.5f, -128.5f};
  // Every power of two across the interesting range, and its neighbours and midpoints.
  for (int e = -30; e <= 20; ++e) {
    const float p = std::ldexp(1.0f, e);
    for (float m : {1.0f, 1.0625f, 1.125f, 1.1875f, 1.25f, 1.5f, 1.75f, 1.875f, 1.9375f, 1.96875f})
      for (float s : {1.0f, -1.0f}) {
        v.push_back(s * p * m);
        v.push_back(std::nextafter(s * p * m, 0.0f));
        v.push_back(std::nextafter(s * p * m, s * INFINITY));
      }
  }
  std::mt19937 rng(7);
  std::uniform_real_distribution<float> u(-600.0f, 600.0f);
  for (int i = 0; i < 20000; ++i) v.push_back(u(rng));
  std::uniform_real_distribution<float> small(-0.02f, 0.02f);
  for (int i = 0; i < 20000; ++i) v.push_back(small(rng));
  return v;
}

TEST(CudaConversions, Fp8DecodeEveryCode) {
  for (unsigned b = 0; b < 256; ++b) {
    EXPECT_TRUE(same(k::to_float<k::DT_FP8_E4M3>(static_cast<unsigned char>(b)), dtype::decode(b, dtype::kE4M3))) << b;
    EXPECT_TRUE(same(k::to_float<k::DT_FP8_E5M2>(static_cast<unsigned char>(b)), dtype::decode(b, dtype::kE5M2))) << b;
  }
}

TEST(CudaConversions, HalfDecodeEveryCode) {
  for (unsigned b = 0; b < 65536; ++b) {
    EXPECT_TRUE(same(k::decode_small<5, 10, true>(b), dtype::decode(b, dtype::kHalf))) << b;
    EXPECT_TRUE(same(k::bf16_to_float(static_cast<unsigned short>(b)), dtype::decode(b, dtype::kBf16))) << b;
  }
}

TEST(CudaConversions, EncodeMatchesTheReferenceRounding) {
  for (float x : float_sweep()) {
    expect_round_trip_matches<k::DT_FP8_E4M3>(DataType::FP8_E4M3, x);
    expect_round_trip_matches<k::DT_FP8_E5M2>(DataType::FP8_E5M2, x);
    expect_round_trip_matches<k::DT_HALF>(DataType::HALF, x);
    expect_round_trip_matches<k::DT_BFLOAT16>(DataType::BFLOAT16, x);
    expect_round_trip_matches<k::DT_INT8>(DataType::INT8, x);
    expect_round_trip_matches<k::DT_UINT8>(DataType::UINT8, x);
    expect_round_trip_matches<k::DT_BOOLEAN>(DataType::BOOLEAN, x);
    if (std::fabs(x) < 2e9f) expect_round_trip_matches<k::DT_INT32>(DataType::INT32, x);
  }
}

TEST(CudaConversions, SaturationAndOverflowRules) {
  EXPECT_EQ(k::to_float<k::DT_FP8_E4M3>(k::from_float<k::DT_FP8_E4M3>(1e6f)), 448.0f);    // satfinite
  EXPECT_EQ(k::to_float<k::DT_FP8_E4M3>(k::from_float<k::DT_FP8_E4M3>(-INFINITY)), -448.0f);
  EXPECT_TRUE(std::isinf(k::to_float<k::DT_FP8_E5M2>(k::from_float<k::DT_FP8_E5M2>(61440.0f))));  // ties to inf
  EXPECT_EQ(k::to_float<k::DT_FP8_E5M2>(k::from_float<k::DT_FP8_E5M2>(61439.0f)), 57344.0f);
  EXPECT_TRUE(std::isnan(k::to_float<k::DT_FP8_E4M3>(k::from_float<k::DT_FP8_E4M3>(NAN))));
  EXPECT_EQ(k::from_float<k::DT_INT32>(3e9f), 2147483647);
  EXPECT_EQ(k::from_float<k::DT_INT32>(NAN), 0);
  EXPECT_EQ(k::from_float<k::DT_INT8>(-300.0f), -128);
}

}  // namespace
}  // namespace dnngraph
