// Cost-model pieces shared by engines' estimate_seconds.
#include <algorithm>

#include "planning/engine.hpp"

namespace dnngraph {

double roofline_seconds(double flops, double bytes, const DeviceInfo& info, double efficiency, double launch_seconds) {
  const double peak = std::max(info.peak_flops * std::max(efficiency, 1e-6), 1.0);
  const double bw = std::max(info.peak_bytes_per_s * std::max(efficiency, 1e-6), 1.0);
  return std::max(flops / peak, bytes / bw) + launch_seconds;
}

double partition_flops(const Partition& p) {
  double f = 0;
  for (size_t i = 0; i < p.nodes.size(); ++i) {
    const auto& n = p.node(i);
    f += op_traits(n.attr).flops(*p.graph, n);
  }
  return f;
}

double partition_bytes(const Partition& p) {
  double b = 0;
  for (int t : p.inputs) b += static_cast<double>(p.tensor(t).volume() * size_of(p.tensor(t).dtype));
  for (int t : p.outputs) b += static_cast<double>(p.tensor(t).volume() * size_of(p.tensor(t).dtype));
  return b;
}

}  // namespace dnngraph
