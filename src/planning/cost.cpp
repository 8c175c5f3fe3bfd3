// Cost-model pieces shared by engines' estimate_seconds.
#include <algorithm>

#include "planning/engine.hpp"

namespace dnngraph {

std::string knobs_to_string(const Knobs& k) {
  std::string s;
  for (const auto& [name, value] : k) s += (s.empty() ? "" : ",") + name + "=" + std::to_string(value);
  return s;
}

double roofline_seconds(double flops, double bytes, const DeviceInfo& info, double efficiency, double launch_seconds) {
  const double peak = std::max(info.peak_flops * std::max(efficiency, 1e-6), 1.0);
  const double bw = std::max(info.peak_bytes_per_s * std::max(efficiency, 1e-6), 1.0);
  return std::max(flops / peak, bytes / bw) + launch_seconds;
}

namespace {
struct FlopCounter {
  const ir::Graph& g;
  const ir::Node& n;
  double out_volume() const { return static_cast<double>(g.tensor(n.outputs[0]).volume()); }
  double in_volume(size_t slot) const { return static_cast<double>(g.tensor(n.inputs[slot]).volume()); }

  // Convolutions: 2 * output elements * (input channels per group * filter volume).
  double conv_fprop() const {
    const auto& w = g.tensor(n.inputs[1]).dims;
    double per_out = 1;
    for (size_t i = 1; i < w.size(); ++i) per_out *= static_cast<double>(w[i]);
    return 2.0 * out_volume() * per_out;
  }
  double operator()(const ConvFpropAttr&) const { return conv_fprop(); }
  double operator()(const ConvDgradAttr&) const {
    // Each DX element sums over the K / groups output channels of its group and the filter window.
    const auto& w = g.tensor(n.inputs[1]).dims;
    const double groups = static_cast<double>(g.tensor(n.outputs[0]).dims[1]) / static_cast<double>(w[1]);
    double per_in = static_cast<double>(w[0]) / groups;
    for (size_t i = 2; i < w.size(); ++i) per_in *= static_cast<double>(w[i]);
    return 2.0 * out_volume() * per_in;
  }
  double operator()(const ConvWgradAttr&) const {
    const auto& dy = g.tensor(n.inputs[0]).dims;
    double spatial = 1;
    for (size_t i = 2; i < dy.size(); ++i) spatial *= static_cast<double>(dy[i]);
    return 2.0 * out_volume() * static_cast<double>(dy[0]) * spatial;
  }
  double operator()(const MatmulAttr&) const {
    const auto& a = g.tensor(n.inputs[0]).dims;
    return 2.0 * out_volume() * static_cast<double>(a.back());
  }
  double operator()(const SdpaAttr&) const {
    const auto& q = g.tensor(n.inputs[0]).dims;
    const auto& k = g.tensor(n.inputs[1]).dims;
    const auto& v = g.tensor(n.inputs[2]).dims;
    const double b = static_cast<double>(q[0] * q[1] * q[2] * k[2]);
    return 2.0 * b * static_cast<double>(q[3] + v[3]);
  }
  template <class A>
  double operator()(const A&) const { return out_volume() + in_volume(0); }
};
}  // namespace

double partition_flops(const Partition& p) {
  double f = 0;
  for (size_t i = 0; i < p.nodes.size(); ++i) {
    const auto& n = p.node(i);
    f += std::visit(FlopCounter{*p.graph, n}, n.attr);
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
