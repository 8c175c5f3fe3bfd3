// What the resample tests share (test_cpu_pool.cpp, test_cuda_pool.cpp, test_cuda_pool_emulated.cpp):
// the layouts they draw tensors in and the pooled output dims.
#pragma once
#include <random>

#include "common/dims.hpp"
#include "engines/ref_test_util.hpp"

namespace pool_test {

using test_dims::Dims;

enum class Layout { NHWC, NCHW, RANDOM };

inline Dims strides_of(const Dims& dims, Layout l, std::mt19937& rng) {
  return l == Layout::NHWC ? test_dims::channels_last(dims) : l == Layout::NCHW ? test_dims::packed(dims)
                                                                              : ref_test::random_strides(dims, rng);
}

// Pooled output dims, as src/graph/resample.cpp computes them.
inline Dims pooled(const Dims& x, const Dims& w, const Dims& s, const Dims& pre, const Dims& post) {
  Dims y = x;
  for (size_t i = 0; i + 2 < x.size(); ++i) y[i + 2] = (x[i + 2] + pre[i] + post[i] - w[i]) / s[i] + 1;
  return y;
}

}  // namespace pool_test
