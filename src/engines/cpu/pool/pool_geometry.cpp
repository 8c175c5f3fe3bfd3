#include "engines/cpu/pool/pool_geometry.hpp"

#include <algorithm>
#include <cstdlib>

#include "core/checked.hpp"

namespace dnngraph::cpu::pool {
namespace {

bool tile_type(DataType t) { return t == DataType::FLOAT || t == DataType::HALF || t == DataType::BFLOAT16; }

int64_t at_or(const std::vector<int64_t>& v, size_t i, int64_t fallback) { return v.empty() ? fallback : v[i]; }

// Resizing tables of spatial dim i, as ref_resample.cpp computes them.
void resize_tables(Geometry& g, int i) {
  const int64_t in = g.in[static_cast<size_t>(i)], out = g.out[static_cast<size_t>(i)];
  auto& near = g.nearest[static_cast<size_t>(i)];
  auto& lo = g.lo[static_cast<size_t>(i)];
  auto& hi = g.hi[static_cast<size_t>(i)];
  auto& frac = g.frac[static_cast<size_t>(i)];
  for (int64_t o = 0; o < out; ++o) {
    near.push_back(std::min(o * in / out, in - 1));
    double src = (static_cast<double>(o) + 0.5) * static_cast<double>(in) / static_cast<double>(out) - 0.5;
    if (src < 0.0) src = 0.0;
    const int64_t l = std::min(static_cast<int64_t>(src), in - 1);
    lo.push_back(l);
    hi.push_back(std::min(l + 1, in - 1));
    frac.push_back(src - static_cast<double>(l));
  }
}

}  // namespace

bool Geometry::pooling() const {
  return mode == ResampleMode::MAXPOOL || mode == ResampleMode::AVGPOOL_INCLUDE_PADDING ||
         mode == ResampleMode::AVGPOOL_EXCLUDE_PADDING;
}

void Geometry::window_range(int i, int64_t o, int64_t& start, int64_t& k_lo, int64_t& k_hi) const {
  const size_t d = static_cast<size_t>(i);
  start = o * stride[d] - pre[d];
  k_lo = std::max<int64_t>(0, -start);
  k_hi = std::min(window[d], in[d] - start);
}

bool read_geometry(const Partition& p, Geometry& g, std::string& why) {
  if (p.nodes.size() != 1 || !ir::is<ResampleAttr>(p.node(0))) {
    why = "takes a partition of one resample node; this one has " + std::to_string(p.nodes.size()) +
          " node(s), the first '" + p.node(0).name + "' (" + std::string(op_name(p.node(0).attr)) + ")";
    return false;
  }
  const ir::Node& node = p.node(0);
  const auto& attr = std::get<ResampleAttr>(node.attr);
  const ir::Tensor& x = p.tensor(node.inputs[0]);
  const ir::Tensor& y = p.tensor(node.outputs[0]);
  for (const ir::Tensor* t : {&x, &y})
    if (!tile_type(t->dtype)) {
      why = "node '" + node.name + "', tensor '" + t->name + "': data type " + std::string(to_string(t->dtype)) +
            " is not supported (FLOAT, HALF and BFLOAT16 are)";
      return false;
    }
  if (x.rank() > kMaxSpatial + 2) {
    why = "node '" + node.name + "', tensor '" + x.name + "': rank " + std::to_string(x.rank()) +
          " is above 8 (up to 6 spatial dims are supported)";
    return false;
  }
  g = Geometry{};
  g.mode = attr.get_resampling_mode();
  g.spatial = x.rank() - 2;
  g.n = x.dims[0];
  g.c = x.dims[1];
  g.x = x.id;
  g.y = y.id;
  g.xt = x.dtype;
  g.yt = y.dtype;
  g.xs = x.strides;
  g.ys = y.strides;
  const size_t S = static_cast<size_t>(g.spatial);
  for (size_t i = 0; i < S; ++i) {
    g.in.push_back(x.dims[i + 2]);
    g.out.push_back(y.dims[i + 2]);
  }
  if (g.pooling()) {
    g.window = attr.get_window();
    g.stride = attr.get_stride();
    for (size_t i = 0; i < S; ++i) g.pre.push_back(at_or(attr.get_pre_padding(), i, 0));
    const int L = g.spatial - 1;
    for (int64_t o = 0; o < g.out.back(); ++o) {
      int64_t start, k_lo, k_hi;
      g.window_range(L, o, start, k_lo, k_hi);
      g.last_count.push_back(k_hi - k_lo);
    }
  } else {
    // The tables hold floor(o * in / out) for o < out: that product must fit int64.
    for (size_t i = 0; i < S; ++i)
      if (int64_t reach = 0; !checked::mul(g.out[i] - 1, g.in[i], reach)) {
        why = "node '" + node.name + "', tensor '" + y.name + "': spatial dim " + std::to_string(i) + " of size " +
              std::to_string(g.out[i]) + " from " + std::to_string(g.in[i]) +
              " puts (out - 1) * in beyond int64 in the resize tables";
        return false;
      }
    g.nearest.resize(S);
    g.lo.resize(S);
    g.hi.resize(S);
    g.frac.resize(S);
    for (int i = 0; i < g.spatial; ++i) resize_tables(g, i);
    for (double f : g.frac.back()) g.frac_last.push_back(static_cast<float>(f));
  }
  // The smaller of X's channel and last-spatial strides decides which dim the kernels run along.
  const int64_t cs = std::llabs(x.strides[1]), ls = std::llabs(x.strides.back());
  g.channels_inner = g.c > 1 && (cs < ls || x.dims.back() == 1);
  return true;
}

}  // namespace dnngraph::cpu::pool
