// Seeded random draws the tests share: integers uniform over closed ranges (for random shapes) and
// host floats uniform in [-1, 1) (for a graph's inputs). One generator per object, so the draws of
// a test come in the order it makes them.
#pragma once
#include <cstddef>
#include <cstdint>
#include <random>
#include <vector>

namespace test_random {

// pick(lo, hi): an integer uniform in [lo, hi].
class IntPicker {
 public:
  explicit IntPicker(uint32_t seed) : rng_(seed) {}
  int64_t operator()(int64_t lo, int64_t hi) { return std::uniform_int_distribution<int64_t>(lo, hi)(rng_); }

 private:
  std::mt19937 rng_;
};

// take(n): the next n floats uniform in [-1, 1).
class UniformFloats {
 public:
  explicit UniformFloats(uint32_t seed) : rng_(seed) {}
  std::vector<float> take(size_t n) {
    std::vector<float> v(n);
    for (auto& x : v) x = u_(rng_);
    return v;
  }

 private:
  std::mt19937 rng_;
  std::uniform_real_distribution<float> u_{-1.0f, 1.0f};
};

}  // namespace test_random
