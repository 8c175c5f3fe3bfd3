// A resample node resolved for cpu_pool_direct: sizes, window, strides and the per-dim tables resizing
// and average pooling need, computed once at build. Semantics follow src/engines/ref/ref_resample.cpp.
#pragma once
#include <string>
#include <vector>

#include "fusion/partition.hpp"

namespace dnngraph::cpu::pool {

constexpr int kMaxSpatial = 6;

struct Geometry {
  ResampleMode mode = ResampleMode::NOT_SET;
  int spatial = 0;  // S: dims 2 .. S+1 of X and Y
  int64_t n = 0, c = 0;
  std::vector<int64_t> in, out, window, stride, pre;  // per spatial dim
  int x = -1, y = -1;                                 // tensor ids
  DataType xt = DataType::FLOAT, yt = DataType::FLOAT;
  std::vector<int64_t> xs, ys;  // strides of every dim
  // Vectorize along C (X's channel stride below its last spatial stride, NHWC-like); else along
  // the last spatial dim (NCHW-like, and any other layout).
  bool channels_inner = false;
  // Resizing, per spatial dim and output coordinate: the nearest source, or the two linear
  // sources and the weight of the upper one (half-pixel centers, as ref).
  std::vector<std::vector<int64_t>> nearest, lo, hi;
  std::vector<std::vector<double>> frac;
  std::vector<float> frac_last;  // frac of the last spatial dim, fp32
  // Average pooling excluding padding, along the last spatial dim: window positions inside X.
  std::vector<int64_t> last_count;

  bool pooling() const;
  // Valid window offsets [k_lo, k_hi) of spatial dim i at output coordinate o (start = o*s - pre).
  void window_range(int i, int64_t o, int64_t& start, int64_t& k_lo, int64_t& k_hi) const;
};

// Reads the partition (one resample node); false with `why` when cpu_pool_direct cannot run it.
bool read_geometry(const Partition& p, Geometry& g, std::string& why);

}  // namespace dnngraph::cpu::pool
