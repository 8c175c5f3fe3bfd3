// Reference resample: pooling over windows (max pads with -inf; average includes or excludes the
// padding), nearest and (multi)linear resizing with half-pixel centers (PyTorch's
// align_corners=False), the source scale being in/out per spatial dim.
#include <algorithm>
#include <cmath>
#include <limits>

#include "engines/ref/ops.hpp"

namespace dnngraph::ref {
namespace {

int64_t at_or(const std::vector<int64_t>& v, size_t i, int64_t fallback) { return v.empty() ? fallback : v[i]; }

void run_pooling(const ResampleAttr& attr, const NodeArgs& a) {
  const View& x = a.in[0];
  const View& y = a.out[0];
  const size_t spatial = x.dims.size() - 2;
  const ResampleMode mode = attr.get_resampling_mode();
  std::vector<int64_t> window_box(x.dims.size(), 1);
  double window_volume = 1.0;
  for (size_t i = 0; i < spatial; ++i) {
    window_box[i + 2] = attr.get_window()[i];
    window_volume *= static_cast<double>(attr.get_window()[i]);
  }
  parallel_for_each_index(a.pool, y.dims, [&](const std::vector<int64_t>& o) {
    double acc = mode == ResampleMode::MAXPOOL ? -std::numeric_limits<double>::infinity() : 0.0;
    int64_t real = 0;  // window elements inside X
    std::vector<int64_t> in_idx = o;
    for_each_index(window_box, [&](const std::vector<int64_t>& k) {
      for (size_t i = 0; i < spatial; ++i) {
        const int64_t p = o[i + 2] * attr.get_stride()[i] - at_or(attr.get_pre_padding(), i, 0) + k[i + 2];
        if (p < 0 || p >= x.dims[i + 2]) return;  // padding: -inf for max, 0 for the sums
        in_idx[i + 2] = p;
      }
      ++real;
      const double v = x.at(in_idx);
      if (mode != ResampleMode::MAXPOOL) acc += v;
      else if (std::isnan(v) || v > acc) acc = v;  // NaN propagates
    });
    if (mode == ResampleMode::AVGPOOL_INCLUDE_PADDING) acc /= window_volume;
    if (mode == ResampleMode::AVGPOOL_EXCLUDE_PADDING) acc /= static_cast<double>(real);
    y.set(o, acc);
  });
}

// Source position of output coordinate o under half-pixel centers, clamped at the low edge.
double linear_source(int64_t o, int64_t in, int64_t out) {
  const double src = (static_cast<double>(o) + 0.5) * static_cast<double>(in) / static_cast<double>(out) - 0.5;
  return src < 0.0 ? 0.0 : src;
}

void run_nearest(const NodeArgs& a) {
  const View& x = a.in[0];
  const View& y = a.out[0];
  parallel_for_each_index(a.pool, y.dims, [&](const std::vector<int64_t>& o) {
    std::vector<int64_t> in_idx = o;
    // floor(o * in / out) in integers, so it does not depend on how in/out rounds.
    for (size_t i = 2; i < o.size(); ++i) in_idx[i] = std::min(o[i] * x.dims[i] / y.dims[i], x.dims[i] - 1);
    y.set(o, x.at(in_idx));
  });
}

void run_linear(const NodeArgs& a) {
  const View& x = a.in[0];
  const View& y = a.out[0];
  const size_t spatial = x.dims.size() - 2;
  const std::vector<int64_t> corners(spatial, 2);
  parallel_for_each_index(a.pool, y.dims, [&](const std::vector<int64_t>& o) {
    std::vector<int64_t> lo(spatial), hi(spatial);
    std::vector<double> frac(spatial);
    for (size_t i = 0; i < spatial; ++i) {
      const double src = linear_source(o[i + 2], x.dims[i + 2], y.dims[i + 2]);
      lo[i] = std::min(static_cast<int64_t>(src), x.dims[i + 2] - 1);
      hi[i] = std::min(lo[i] + 1, x.dims[i + 2] - 1);
      frac[i] = src - static_cast<double>(lo[i]);
    }
    double acc = 0.0;
    std::vector<int64_t> in_idx = o;
    for_each_index(corners, [&](const std::vector<int64_t>& c) {
      double w = 1.0;
      for (size_t i = 0; i < spatial; ++i) {
        in_idx[i + 2] = c[i] ? hi[i] : lo[i];
        w *= c[i] ? frac[i] : 1.0 - frac[i];
      }
      acc += w * x.at(in_idx);
    });
    y.set(o, acc);
  });
}

}  // namespace

Status run(const ResampleAttr& attr, const NodeArgs& a) {
  switch (attr.get_resampling_mode()) {
    case ResampleMode::MAXPOOL:
    case ResampleMode::AVGPOOL_INCLUDE_PADDING:
    case ResampleMode::AVGPOOL_EXCLUDE_PADDING: run_pooling(attr, a); return {};
    case ResampleMode::NEAREST: run_nearest(a); return {};
    case ResampleMode::BILINEAR: run_linear(a); return {};
    case ResampleMode::NOT_SET: break;
  }
  return {ErrorCode::INVALID_VALUE, "unknown resampling mode"};
}

}  // namespace dnngraph::ref
