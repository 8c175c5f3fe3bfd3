// cuda_pool_direct: resample on the GPU (max and average pooling, nearest and linear resizing) over
// 1 to 6 spatial dims in any layout, fp32/fp16/bf16 in and out, one output element per thread
// (kernels/pool_direct.cuh). One compiled module serves every shape (dims and strides are kernel
// arguments), so a network's poolings share one compile.
#pragma once
#include <cstdint>
#include <string>

#include "planning/engine.hpp"

namespace dnngraph::cuda {

constexpr int kPoolMaxRank = 8;  // dg::kPoolMaxRank: N, C and up to 6 spatial dims
constexpr int kPoolMaxSpatial = kPoolMaxRank - 2;

// The kernel's argument, dg::PoolParams (kernels/pool_direct.cuh), byte for byte.
struct PoolDirectParams {
  const void* x = nullptr;
  void* y = nullptr;
  int64_t count = 0;  // output elements
  int32_t rank = 0, mode = 0;
  int32_t order[kPoolMaxRank] = {};  // Y's dims walked outermost first (Y's smallest stride last)
  int64_t x_dims[kPoolMaxRank] = {}, x_strides[kPoolMaxRank] = {};
  int64_t y_dims[kPoolMaxRank] = {}, y_strides[kPoolMaxRank] = {};
  int64_t window[kPoolMaxSpatial] = {}, stride[kPoolMaxSpatial] = {}, pre[kPoolMaxSpatial] = {};
  float inv_volume = 1.0f;
};

// The kernel argument for a partition of one resample node (pointers unset), or GRAPH_NOT_SUPPORTED
// naming the node, the tensor and the rule.
Status pool_direct_params(const Partition& p, PoolDirectParams& out);

const Engine& pool_direct_engine();
// The one module the engine compiles (every input type, output type and index type), for compile
// checks without a GPU.
std::string pool_direct_module_source();
}  // namespace dnngraph::cuda
