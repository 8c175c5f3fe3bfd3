// Kernel arguments of the pointwise kernels: the host side of dg::PointwiseParams
// (kernels/dg_pointwise.cuh), field for field, and how a plan fills them from its layout.
#pragma once
#include <cstdint>
#include <vector>

#include "engines/cuda/codegen/layout.hpp"

namespace dnngraph::cuda::codegen {

struct PointwiseParams {
  int64_t vectors;
  int64_t size[kMaxRank];
  int64_t stride[kMaxOperands][kMaxRank];
  int64_t div_by[kMaxRank];
  uint64_t div_magic[kMaxRank];
  void* ptr[kMaxOperands];
  float* acc[kMaxReductions];
  void* out[kMaxReductions];
  float* partials;
  int64_t acc_volume[kMaxReductions];
  float scalar[kMaxScalars];
  float inv_count[kMaxReductions];
};
static_assert(sizeof(PointwiseParams) ==
                  8 * (1 + kMaxRank + kMaxOperands * kMaxRank + 2 * kMaxRank + kMaxOperands + 3 * kMaxReductions + 1) +
                      4 * (kMaxScalars + kMaxReductions),
              "every field must be packed as in dg::PointwiseParams");

// The multiply-shift pair that divides by d (d >= 1) for dividends below 2^31: magic | shift << 32.
uint64_t fast_div_magic(uint32_t d);

// Fills the arguments for launching with `vec` elements per vector (the layout's vec, or 1 for
// the scalar kernel). `ptrs` holds device pointers by tensor id; `scalars` the pass-by-value values
// in layout order; `workspace` the plan's workspace.
void fill_params(const Layout& L, int vec, const std::vector<void*>& ptrs, const std::vector<float>& scalars,
                 void* workspace, PointwiseParams& p);

}  // namespace dnngraph::cuda::codegen
