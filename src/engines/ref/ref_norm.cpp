// Reference normalizations, in double: batchnorm_inference per element; layernorm and rmsnorm
// per row (dim 0), with two passes over the row (statistics, then the output).
#include <cmath>

#include "engines/ref/ops.hpp"
#include "graph/op_attr.hpp"

namespace dnngraph::ref {
namespace {

// Calls fn(index) for every index of row n of a tensor with `dims` (dim 0 pinned to n).
template <class Fn>
void for_each_in_row(const std::vector<int64_t>& dims, int64_t n, Fn&& fn) {
  std::vector<int64_t> row = dims;
  row[0] = 1;
  for_each_index(row, [&](const std::vector<int64_t>& r) {
    std::vector<int64_t> idx = r;
    idx[0] = n;
    fn(idx);
  });
}

int64_t row_size(const View& x) { return x.volume() / x.dims[0]; }

// Writes a statistic (one per row) when the tensor is there; unused ones may be absent.
void store_stat(const View& stat, int64_t n, double v) {
  if (!stat.present()) return;
  std::vector<int64_t> idx(stat.dims.size(), 0);
  idx[0] = n;
  stat.set(idx, v);
}

// The operands of layernorm and rmsnorm (the same slots).
struct RowNormArgs {
  const View& x;
  const View& scale;
  const View& bias;
  const View& y;
  double eps;
  double count;  // elements per row
};

// Calls per_row(args, n) for every row n of X (dim 0), the rows spread over the pool.
template <class PerRow>
Status for_each_row(const NodeArgs& a, PerRow per_row) {
  const View& x = a.in[slot::LN_X];
  const RowNormArgs args{x, a.in[slot::LN_SCALE], a.in[slot::LN_BIAS], a.out[0], a.in[slot::LN_EPS].scalar(),
                         static_cast<double>(row_size(x))};
  a.pool.parallel_for(x.dims[0], [&](int64_t begin, int64_t end) {
    for (int64_t n = begin; n < end; ++n) per_row(args, n);
  });
  return {};
}

}  // namespace

Status run(const BatchnormInferenceAttr&, const NodeArgs& a) {
  const View& x = a.in[slot::BN_X];
  const View& mean = a.in[slot::BN_MEAN];
  const View& inv_var = a.in[slot::BN_INV_VAR];
  const View& scale = a.in[slot::BN_SCALE];
  const View& bias = a.in[slot::BN_BIAS];
  const View& y = a.out[0];
  parallel_for_each_index(a.pool, x.dims, [&](const std::vector<int64_t>& idx) {
    const double v = (x.at(idx) - mean.at_broadcast(idx)) * inv_var.at_broadcast(idx) * scale.at_broadcast(idx) +
                     bias.at_broadcast(idx);
    y.set(idx, v);
  });
  return {};
}

Status run(const LayernormAttr&, const NodeArgs& a) {
  return for_each_row(a, [&](const RowNormArgs& r, int64_t n) {
    double sum = 0.0;
    for_each_in_row(r.x.dims, n, [&](const std::vector<int64_t>& idx) { sum += r.x.at(idx); });
    const double mean = sum / r.count;
    double sq = 0.0;
    for_each_in_row(r.x.dims, n, [&](const std::vector<int64_t>& idx) {
      const double d = r.x.at(idx) - mean;
      sq += d * d;
    });
    const double inv_var = 1.0 / std::sqrt(sq / r.count + r.eps);  // biased variance, as PyTorch
    for_each_in_row(r.x.dims, n, [&](const std::vector<int64_t>& idx) {
      r.y.set(idx, (r.x.at(idx) - mean) * inv_var * r.scale.at_broadcast(idx) + r.bias.at_broadcast(idx));
    });
    store_stat(a.out[1], n, mean);
    store_stat(a.out[2], n, inv_var);
  });
}

Status run(const RmsnormAttr&, const NodeArgs& a) {
  return for_each_row(a, [&](const RowNormArgs& r, int64_t n) {
    double sq = 0.0;
    for_each_in_row(r.x.dims, n, [&](const std::vector<int64_t>& idx) {
      const double v = r.x.at(idx);
      sq += v * v;
    });
    const double inv_rms = 1.0 / std::sqrt(sq / r.count + r.eps);
    for_each_in_row(r.x.dims, n, [&](const std::vector<int64_t>& idx) {
      double v = r.x.at(idx) * inv_rms * r.scale.at_broadcast(idx);
      if (r.bias.present()) v += r.bias.at_broadcast(idx);
      r.y.set(idx, v);
    });
    store_stat(a.out[1], n, inv_rms);
  });
}

}  // namespace dnngraph::ref
