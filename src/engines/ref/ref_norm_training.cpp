// Reference training normalizations, in double: batchnorm (training) and instancenorm forward,
// and the backward of layernorm, rmsnorm, batchnorm and instancenorm. Every op is a grouped norm
// (graph/norm_training.cpp): an element's group is its index with the dims where the statistics
// are 1 pinned to 0, its parameter likewise by the scale's dims. Plain sequential loops over X in
// row-major order: the oracle, not a fast path.
#include <cmath>
#include <utility>
#include <vector>

#include "engines/ref/ops.hpp"
#include "graph/op_attr.hpp"

namespace dnngraph::ref {
namespace {

// Linear positions in a tensor whose dims are X's with some dims 1 (statistics, parameters).
struct Broadcast {
  std::vector<int64_t> dims, mul;
  int64_t size = 1;
  explicit Broadcast(const std::vector<int64_t>& d) : dims(d), mul(d.size(), 0) {
    for (size_t i = d.size(); i-- > 0;) {
      mul[i] = d[i] == 1 ? 0 : size;
      size *= d[i];
    }
  }
  int64_t of(const std::vector<int64_t>& idx) const {
    int64_t p = 0;
    for (size_t i = 0; i < idx.size(); ++i) p += idx[i] * mul[i];
    return p;
  }
};

// Values of a per-group or per-parameter view, by linear position.
std::vector<double> read_all(const View& v, const Broadcast& b) {
  std::vector<double> out(static_cast<size_t>(b.size), 0.0);
  for_each_index(b.dims, [&](const std::vector<int64_t>& idx) { out[static_cast<size_t>(b.of(idx))] = v.at(idx); });
  return out;
}

// Stores values by linear position into a view, when it is there (unproduced outputs may be absent).
void write_all(const View& v, const Broadcast& b, const std::vector<double>& values) {
  if (!v.present()) return;
  for_each_index(b.dims, [&](const std::vector<int64_t>& idx) { v.set(idx, values[static_cast<size_t>(b.of(idx))]); });
}

// ---- forward: batchnorm (training) and instancenorm

struct ForwardArgs {
  const View& x;
  const View& scale;
  const View& bias;
  const View& stat;  // an output with the statistics' dims (MEAN), for the groups
  double eps;
};

struct Moments {
  std::vector<double> mean, var;  // per group; var biased
};

// Mean and biased variance per group (two passes), then Y and the statistics.
Moments grouped_forward(const ForwardArgs& f, const NodeArgs& a) {
  const Broadcast groups(f.stat.dims), params(f.scale.dims);
  const double count = static_cast<double>(f.x.volume() / groups.size);
  std::vector<double> mean(static_cast<size_t>(groups.size), 0.0), var(mean.size(), 0.0), inv(mean.size(), 0.0);
  for_each_index(f.x.dims, [&](const std::vector<int64_t>& idx) { mean[static_cast<size_t>(groups.of(idx))] += f.x.at(idx); });
  for (double& m : mean) m /= count;
  for_each_index(f.x.dims, [&](const std::vector<int64_t>& idx) {
    const size_t g = static_cast<size_t>(groups.of(idx));
    const double d = f.x.at(idx) - mean[g];
    var[g] += d * d;
  });
  for (size_t g = 0; g < var.size(); ++g) {
    var[g] /= count;  // biased, as PyTorch normalizes
    inv[g] = 1.0 / std::sqrt(var[g] + f.eps);
  }
  const std::vector<double> scale = read_all(f.scale, params), bias = read_all(f.bias, params);
  const View& y = a.out[0];
  for_each_index(f.x.dims, [&](const std::vector<int64_t>& idx) {
    const size_t g = static_cast<size_t>(groups.of(idx)), p = static_cast<size_t>(params.of(idx));
    y.set(idx, (f.x.at(idx) - mean[g]) * inv[g] * scale[p] + bias[p]);
  });
  write_all(a.out[1], groups, mean);
  write_all(a.out[2], groups, inv);
  return {std::move(mean), std::move(var)};
}

// ---- backward: (DY, X, SCALE[, MEAN], INV_VARIANCE) -> (DX, DSCALE, DBIAS)

// With g = dy * scale and xhat = (x - mean) * inv over a group of n elements:
//   dx = inv * (g - mean(g) - xhat * mean(g * xhat))   (rmsnorm: no mean(g) term, mean = 0)
//   dscale = sum over all groups of dy * xhat, dbias = sum of dy, per parameter.
Status grouped_backward(const NodeArgs& a, const View* mean_view, const View& inv_view) {
  const View& dy = a.in[slot::NB_DY];
  const View& x = a.in[slot::NB_X];
  const Broadcast groups(inv_view.dims), params(a.in[slot::NB_SCALE].dims);
  const double count = static_cast<double>(x.volume() / groups.size);
  const std::vector<double> inv = read_all(inv_view, groups), scale = read_all(a.in[slot::NB_SCALE], params);
  const std::vector<double> mean = mean_view ? read_all(*mean_view, groups) : std::vector<double>(inv.size(), 0.0);
  std::vector<double> sum_g(inv.size(), 0.0), sum_gx(inv.size(), 0.0);
  std::vector<double> dscale(static_cast<size_t>(params.size), 0.0), dbias(dscale.size(), 0.0);
  for_each_index(x.dims, [&](const std::vector<int64_t>& idx) {
    const size_t g = static_cast<size_t>(groups.of(idx)), p = static_cast<size_t>(params.of(idx));
    const double xhat = (x.at(idx) - mean[g]) * inv[g], d = dy.at(idx), gv = d * scale[p];
    sum_g[g] += gv;
    sum_gx[g] += gv * xhat;
    dscale[p] += d * xhat;
    dbias[p] += d;
  });
  const View& dx = a.out[0];
  for_each_index(x.dims, [&](const std::vector<int64_t>& idx) {
    const size_t g = static_cast<size_t>(groups.of(idx)), p = static_cast<size_t>(params.of(idx));
    const double xhat = (x.at(idx) - mean[g]) * inv[g], gv = dy.at(idx) * scale[p];
    const double centered = mean_view ? gv - sum_g[g] / count : gv;
    dx.set(idx, inv[g] * (centered - xhat * sum_gx[g] / count));
  });
  write_all(a.out[1], params, dscale);
  write_all(a.out[2], params, dbias);
  return {};
}

Status backward_with_mean(const NodeArgs& a) {
  return grouped_backward(a, &a.in[slot::NB_MEAN], a.in[slot::NB_INV_VAR]);
}

}  // namespace

Status run(const LayernormBackwardAttr&, const NodeArgs& a) { return backward_with_mean(a); }
Status run(const BatchnormBackwardAttr&, const NodeArgs& a) { return backward_with_mean(a); }
Status run(const InstancenormBackwardAttr&, const NodeArgs& a) { return backward_with_mean(a); }
Status run(const RmsnormBackwardAttr&, const NodeArgs& a) {
  return grouped_backward(a, nullptr, a.in[slot::RB_INV_RMS]);
}

Status run(const InstancenormAttr&, const NodeArgs& a) {
  grouped_forward({a.in[slot::BT_X], a.in[slot::BT_SCALE], a.in[slot::BT_BIAS], a.out[1], a.in[slot::BT_EPS].scalar()},
                  a);
  return {};
}

// Running statistics take the unbiased variance (n / (n - 1), as PyTorch); with one element per
// channel that factor is undefined and the biased variance is taken.
Status run(const BatchnormAttr&, const NodeArgs& a) {
  const View& x = a.in[slot::BT_X];
  const Moments mv =
      grouped_forward({x, a.in[slot::BT_SCALE], a.in[slot::BT_BIAS], a.out[1], a.in[slot::BT_EPS].scalar()}, a);
  if (!a.in[slot::BT_PREV_MEAN].present()) return {};
  const Broadcast groups(a.out[1].dims);
  const double n = static_cast<double>(x.volume() / groups.size), m = a.in[slot::BT_MOMENTUM].scalar();
  const double unbias = n > 1 ? n / (n - 1) : 1.0;
  // Read before writing: the next statistics may be the previous ones' buffers (updated in place).
  std::vector<double> next_mean = read_all(a.in[slot::BT_PREV_MEAN], groups);
  std::vector<double> next_var = read_all(a.in[slot::BT_PREV_VAR], groups);
  for (size_t g = 0; g < next_mean.size(); ++g) {
    next_mean[g] = (1 - m) * next_mean[g] + m * mv.mean[g];
    next_var[g] = (1 - m) * next_var[g] + m * mv.var[g] * unbias;
  }
  write_all(a.out[3], groups, next_mean);
  write_all(a.out[4], groups, next_var);
  return {};
}

}  // namespace dnngraph::ref
