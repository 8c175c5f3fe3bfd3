// The epilogue's transcendental loops (engines/cpu/epilogue/vector_math) on every lane path this
// build and CPU have (libmvec's AVX-512 and AVX2 lanes, libm per element), each against the same
// function in double: random and extreme inputs, lengths that leave partial lane groups, NaN and
// infinities through, outputs NaN-poisoned first.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <random>
#include <vector>

#include "engines/cpu/epilogue/vector_math.hpp"

namespace {

using dnngraph::cpu::Isa;
namespace vm = dnngraph::cpu::vmath;

constexpr float kBeta = 1.702f;  // SWISH's beta (the sigmoid-GELU's)

double exact(vm::Fn f, double x) {
  switch (f) {
    case vm::Fn::GELU_ERF: return 0.5 * x * std::erfc(-x / std::sqrt(2.0));
    case vm::Fn::GELU_TANH: return 0.5 * x * (1.0 + std::tanh(std::sqrt(2.0 / M_PI) * (x + 0.044715 * x * x * x)));
    case vm::Fn::TANH: return std::tanh(x);
    case vm::Fn::SIGMOID: return 1.0 / (1.0 + std::exp(-x));
    case vm::Fn::SWISH: return x / (1.0 + std::exp(-kBeta * x));
    case vm::Fn::EXP: return std::exp(x);
  }
  return 0.0;
}

const char* name(vm::Fn f) {
  constexpr const char* kNames[] = {"GELU_ERF", "GELU_TANH", "TANH", "SIGMOID", "SWISH", "EXP"};
  return kNames[static_cast<int>(f)];
}

std::vector<Isa> lane_paths() {
  std::vector<Isa> out{Isa::PORTABLE};
  for (Isa isa : {Isa::AVX2, Isa::AVX512})
    if (vm::vectorized(isa)) out.push_back(isa);
  return out;
}

// Random normals at three scales, then values where each function saturates or under/overflows.
std::vector<float> inputs(int n, unsigned seed) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> normal;
  std::vector<float> x(static_cast<size_t>(n));
  for (int i = 0; i < n; ++i) x[static_cast<size_t>(i)] = normal(rng) * (i % 3 == 0 ? 0.1f : i % 3 == 1 ? 2.0f : 8.0f);
  for (float e : {-100.0f, -30.0f, -9.5f, -5.0f, -1.5f, -0.0f, 0.0f, 1e-30f, 3.0f, 30.0f, 85.0f, 100.0f})
    x.push_back(e);
  return x;
}

TEST(CpuVectorMath, EveryFunctionMatchesDoubleOnEveryLanePath) {
  for (Isa isa : lane_paths())
    for (vm::Fn f : {vm::Fn::GELU_ERF, vm::Fn::GELU_TANH, vm::Fn::TANH, vm::Fn::SIGMOID, vm::Fn::SWISH, vm::Fn::EXP})
      for (int n : {1, 7, 16, 37, 1000}) {  // partial lane groups of 8 and 16, and whole ones
        const std::vector<float> x = inputs(n, static_cast<unsigned>(n));
        std::vector<float> y(x.size(), std::numeric_limits<float>::quiet_NaN());
        vm::map(f, static_cast<int64_t>(x.size()), x.data(), y.data(), kBeta, isa);
        for (size_t i = 0; i < x.size(); ++i) {
          const double want = exact(f, x[i]);
          // 4 ulp of the result, and 4 ulp of 1 where the result is small next to its parts
          // (GELU's x and erfc's 2 near x = 0, tanh's 1 in the tanh form).
          const double tol = 4 * 1.2e-7 * std::max(std::fabs(want), f == vm::Fn::EXP ? 0.0 : std::min(1.0, std::fabs(x[i]) + 1e-30));
          if (std::isinf(static_cast<float>(want))) {  // beyond float's range
            EXPECT_EQ(y[i], static_cast<float>(want)) << name(f) << " isa " << static_cast<int>(isa) << " x " << x[i];
            continue;
          }
          EXPECT_NEAR(y[i], want, tol + 1e-37) << name(f) << " isa " << static_cast<int>(isa) << " x " << x[i] << " n " << n;
        }
      }
}

TEST(CpuVectorMath, NanAndInfinitiesPassThroughAndOutputMayBeInput) {
  const float inf = std::numeric_limits<float>::infinity(), nan = std::numeric_limits<float>::quiet_NaN();
  for (Isa isa : lane_paths()) {
    std::vector<float> x(19, 0.5f);
    x[3] = nan, x[17] = inf, x[18] = -inf;
    vm::map(vm::Fn::GELU_ERF, static_cast<int64_t>(x.size()), x.data(), x.data(), 1.0f, isa);  // in place
    EXPECT_TRUE(std::isnan(x[3])) << static_cast<int>(isa);
    EXPECT_EQ(x[17], inf) << static_cast<int>(isa);
    EXPECT_TRUE(std::isnan(x[18]) || x[18] == 0.0f) << static_cast<int>(isa);  // -inf * erfc(inf) = -inf * 0
    EXPECT_NEAR(x[0], exact(vm::Fn::GELU_ERF, 0.5), 1e-7) << static_cast<int>(isa);
    std::vector<float> s{nan, inf, -inf};
    vm::map(vm::Fn::SIGMOID, 3, s.data(), s.data(), 1.0f, isa);
    EXPECT_TRUE(std::isnan(s[0]));
    EXPECT_EQ(s[1], 1.0f);
    EXPECT_EQ(s[2], 0.0f);
  }
}

}  // namespace
