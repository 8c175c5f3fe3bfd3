// Reference reduction: every output element loops over its reduced box, accumulating in double.
#include <cmath>
#include <limits>

#include "engines/ref/ops.hpp"

namespace dnngraph::ref {
namespace {

double initial_value(ReductionMode m) {
  switch (m) {
    case ReductionMode::MUL: return 1.0;
    case ReductionMode::MIN: return std::numeric_limits<double>::infinity();
    case ReductionMode::MAX: return -std::numeric_limits<double>::infinity();
    default: return 0.0;
  }
}

// NaN propagates through MIN/MAX/AMAX, as in PyTorch (fmin/fmax would drop it); once the
// accumulator is NaN no comparison is true, so it stays NaN.
double max_nan(double acc, double v) { return (std::isnan(v) || v > acc) ? v : acc; }
double min_nan(double acc, double v) { return (std::isnan(v) || v < acc) ? v : acc; }

double accumulate(ReductionMode m, double acc, double v) {
  switch (m) {
    case ReductionMode::ADD: case ReductionMode::AVG: return acc + v;
    case ReductionMode::MUL: return acc * v;
    case ReductionMode::MIN: return min_nan(acc, v);
    case ReductionMode::MAX: return max_nan(acc, v);
    case ReductionMode::AMAX: return max_nan(acc, std::fabs(v));
    case ReductionMode::NORM1: return acc + std::fabs(v);
    case ReductionMode::NORM2: return acc + v * v;
    case ReductionMode::NOT_SET: break;
  }
  return std::nan("");
}

double finish(ReductionMode m, double acc, int64_t count) {
  if (m == ReductionMode::AVG) return acc / static_cast<double>(count);
  if (m == ReductionMode::NORM2) return std::sqrt(acc);
  return acc;
}

}  // namespace

Status run(const ReductionAttr& attr, const NodeArgs& a) {
  const View& x = a.in[0];
  const View& y = a.out[0];
  const ReductionMode mode = attr.get_mode();
  // The reduced box: X's extent on reduced axes, 1 on kept ones.
  std::vector<int64_t> box(x.dims.size(), 1);
  int64_t count = 1;
  for (size_t i = 0; i < box.size(); ++i)
    if (y.dims[i] == 1 && x.dims[i] > 1) {
      box[i] = x.dims[i];
      count *= x.dims[i];
    }
  parallel_for_each_index(a.pool, y.dims, [&](const std::vector<int64_t>& out_idx) {
    double acc = initial_value(mode);
    std::vector<int64_t> in_idx(out_idx.size());
    for_each_index(box, [&](const std::vector<int64_t>& r) {
      for (size_t i = 0; i < in_idx.size(); ++i) in_idx[i] = box[i] > 1 ? r[i] : out_idx[i];
      acc = accumulate(mode, acc, x.at(in_idx));
    });
    y.set(out_idx, finish(mode, acc, count));
  });
  return {};
}

// SUM and SQ_SUM per channel c of X [N, C, ...]: the sums of x and x*x over every other dim.
Status run(const GenstatsAttr&, const NodeArgs& a) {
  const View& x = a.in[0];
  std::vector<int64_t> box = x.dims;
  box[1] = 1;
  parallel_for_each_index(a.pool, std::vector<int64_t>{x.dims[1]}, [&](const std::vector<int64_t>& c) {
    double sum = 0.0, sq_sum = 0.0;
    std::vector<int64_t> in_idx(box.size());
    for_each_index(box, [&](const std::vector<int64_t>& r) {
      in_idx = r;
      in_idx[1] = c[0];
      const double v = x.at(in_idx);
      sum += v;
      sq_sum += v * v;
    });
    std::vector<int64_t> out_idx(box.size(), 0);
    out_idx[1] = c[0];
    a.out[0].set(out_idx, sum);
    a.out[1].set(out_idx, sq_sum);
  });
  return {};
}

}  // namespace dnngraph::ref
