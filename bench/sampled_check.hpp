// Correctness of a timed plan inside a benchmark: the output is poisoned with NaN before the plan's
// first call, read back after its timing, scanned whole for NaN (a tile the kernel never wrote) and
// compared at sampled elements with a float64 reference computed on the host from the inputs'
// host copies. Workloads supply the reference of one output element by its memory index.
#pragma once
#include <cmath>
#include <cstdint>
#include <cstring>
#include <functional>
#include <random>
#include <vector>

#include "core/dtype.hpp"

namespace bench_check {

// The reference value of output element `i` (its index in memory, NHWC / row-major as declared).
using ElementReference = std::function<double(int64_t i)>;

struct OutputCheck {
  void* device_out = nullptr;  // the output the plan writes
  int64_t elems = 0;
  dnngraph::DataType type = dnngraph::DataType::FLOAT;
  ElementReference expect;     // empty: the workload has no reference here
  double tolerance = 1e-2;     // |got - ref| / max(1, |ref|)
  bool enabled() const { return device_out != nullptr && expect != nullptr; }
};

// The 32-bit pattern that fills `t`'s elements with quiet NaNs (two per word for 16-bit types).
inline uint32_t nan_pattern(dnngraph::DataType t) {
  switch (dnngraph::size_of(t)) {
    case 2: return t == dnngraph::DataType::HALF ? 0x7e007e00u : 0x7fc07fc0u;
    default: return 0x7fc00000u;
  }
}

struct CheckResult {
  double max_err = 0;   // at the sampled elements; infinity where one was NaN
  int64_t nan_count = 0;  // in the whole output
  bool passed(double tolerance) const { return nan_count == 0 && max_err <= tolerance; }
};

// `host` holds the output read back; `samples` elements are drawn with a fixed seed.
inline CheckResult compare(const OutputCheck& c, const std::vector<uint8_t>& host, int samples = 512) {
  CheckResult r;
  for (int64_t i = 0; i < c.elems; ++i)
    if (std::isnan(dnngraph::dtype::load(host.data(), c.type, i))) ++r.nan_count;
  std::mt19937_64 rng(12345);
  std::uniform_int_distribution<int64_t> pick(0, c.elems - 1);
  for (int s = 0; s < samples; ++s) {
    const int64_t i = s == 0 ? 0 : s == 1 ? c.elems - 1 : pick(rng);
    const double got = dnngraph::dtype::load(host.data(), c.type, i), want = c.expect(i);
    const double err = std::isnan(got) ? INFINITY : std::fabs(got - want) / std::max(1.0, std::fabs(want));
    r.max_err = std::max(r.max_err, err);
  }
  return r;
}

// Host copies of a workload's inputs as float64-readable values.
struct HostTensor {
  const std::vector<uint8_t>* bytes = nullptr;
  dnngraph::DataType type = dnngraph::DataType::FLOAT;
  double at(int64_t i) const { return dnngraph::dtype::load(bytes->data(), type, i); }
};

// relu(conv(x, w) + b) at output element i, every tensor channels-last (NDHWC / K T R S C/g), 1 to 3
// spatial dims (`sp` lists D, H, W of the output; missing leading ones are 1), `groups` groups.
struct ConvFpropReference {
  HostTensor x, w, b;
  int64_t n = 1, c = 1, k = 1, groups = 1;
  int64_t in[3] = {1, 1, 1}, out[3] = {1, 1, 1}, filt[3] = {1, 1, 1}, pad[3] = {0, 0, 0}, stride[3] = {1, 1, 1};
  bool bias_relu = true;
  double operator()(int64_t i) const {
    const int64_t kk = i % k;
    int64_t rest = i / k, o[3];
    for (int d = 2; d >= 0; --d) o[d] = rest % out[d], rest /= out[d];
    const int64_t img = rest, cg = c / groups, g = kk / (k / groups);
    double acc = 0;
    for (int64_t t = 0; t < filt[0]; ++t)
      for (int64_t r = 0; r < filt[1]; ++r)
        for (int64_t s = 0; s < filt[2]; ++s) {
          const int64_t z = o[0] * stride[0] - pad[0] + t, y = o[1] * stride[1] - pad[1] + r,
                        xx = o[2] * stride[2] - pad[2] + s;
          if (z < 0 || z >= in[0] || y < 0 || y >= in[1] || xx < 0 || xx >= in[2]) continue;
          const int64_t xbase = (((img * in[0] + z) * in[1] + y) * in[2] + xx) * c + g * cg;
          const int64_t wbase = (((kk * filt[0] + t) * filt[1] + r) * filt[2] + s) * cg;
          for (int64_t ci = 0; ci < cg; ++ci) acc += x.at(xbase + ci) * w.at(wbase + ci);
        }
    if (!bias_relu) return acc;
    return std::max(0.0, acc + b.at(kk));
  }
};

// dx of a 2D conv_dgrad at element i of dx (NHWC): dx[n, y, x, c] = sum over dy[n, p, q, k] *
// w[k, r, s, c] where p * stride - pad + r = y (and the same for x, q, s).
struct ConvDgradReference {
  HostTensor dy, w;
  int64_t n = 1, c = 1, k = 1, h = 1, wd = 1, p = 1, q = 1, r = 1, s = 1, pad = 0, stride = 1;
  double operator()(int64_t i) const {
    const int64_t ci = i % c, xx = (i / c) % wd, y = (i / (c * wd)) % h, img = i / (c * wd * h);
    double acc = 0;
    for (int64_t fr = 0; fr < r; ++fr) {
      const int64_t py = y + pad - fr;
      if (py < 0 || py % stride != 0 || py / stride >= p) continue;
      for (int64_t fs = 0; fs < s; ++fs) {
        const int64_t qx = xx + pad - fs;
        if (qx < 0 || qx % stride != 0 || qx / stride >= q) continue;
        const int64_t dbase = ((img * p + py / stride) * q + qx / stride) * k;
        for (int64_t kk = 0; kk < k; ++kk) acc += dy.at(dbase + kk) * w.at(((kk * r + fr) * s + fs) * c + ci);
      }
    }
    return acc;
  }
};

// Row-major (batch x m x k) x (batch x k x n) at element i of C, then the epilogue: 0 none,
// 1 relu(C + bias), 2 gelu(C * 0.125 + bias) (erf form).
struct MatmulReference {
  HostTensor a, b, bias;
  int64_t m = 1, n = 1, k = 1;
  int epilogue = 0;      // 1: + bias, ReLU; 2: x 0.125 + bias, GELU; 3: x scale (the FP8 rows' descales)
  bool b_k_major = false;  // B stored [n, k] (the FP8 rows), else [k, n]
  double scale = 1.0;
  double operator()(int64_t i) const {
    const int64_t col = i % n, row = (i / n) % m, bt = i / (m * n);
    double acc = 0;
    for (int64_t kk = 0; kk < k; ++kk)
      acc += a.at((bt * m + row) * k + kk) * b.at(b_k_major ? (bt * n + col) * k + kk : (bt * k + kk) * n + col);
    if (epilogue == 3) return acc * scale;
    if (epilogue == 1) return std::max(0.0, acc + bias.at(col));
    if (epilogue == 2) {
      const double v = acc * 0.125 + bias.at(col);
      return 0.5 * v * (1.0 + std::erf(v / std::sqrt(2.0)));
    }
    return acc;
  }
};

}  // namespace bench_check
