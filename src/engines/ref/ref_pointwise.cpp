// Reference pointwise: the whole cuDNN mode list, numpy broadcasting, double arithmetic.
#include <cmath>

#include "engines/ref/ops.hpp"

namespace dnngraph::ref {
namespace {
constexpr double kPi = 3.14159265358979323846;
double sigmoid(double x) { return 1.0 / (1.0 + std::exp(-x)); }
double gelu_tanh_inner(double x) { return std::sqrt(2.0 / kPi) * (x + 0.044715 * x * x * x); }
}  // namespace

double pointwise_apply(const PointwiseAttr& p, double a, double b, double c) {
  using M = PointwiseMode;
  switch (p.get_mode()) {
    case M::ADD: return a + b;
    case M::ADD_SQUARE: return a + b * b;
    case M::DIV: return a / b;
    case M::MAX: return std::fmax(a, b);
    case M::MIN: return std::fmin(a, b);
    case M::MOD: return std::fmod(a, b);
    case M::MUL: return a * b;
    case M::POW: return std::pow(a, b);
    case M::SUB: return a - b;
    case M::ABS: return std::fabs(a);
    case M::CEIL: return std::ceil(a);
    case M::COS: return std::cos(a);
    case M::EXP: return std::exp(a);
    case M::FLOOR: return std::floor(a);
    case M::LOG: return std::log(a);
    case M::NEG: return -a;
    case M::RSQRT: return 1.0 / std::sqrt(a);
    case M::SIN: return std::sin(a);
    case M::SQRT: return std::sqrt(a);
    case M::TAN: return std::tan(a);
    case M::ERF: return std::erf(a);
    case M::IDENTITY: return a;
    case M::RECIPROCAL: return 1.0 / a;
    case M::ATAN2: return std::atan2(a, b);
    case M::RELU_FWD: {  // NaN stays NaN through both clips (PyTorch's relu / relu6 rule)
      const double lo = p.get_relu_lower_clip();
      // Without a slope, a <= lo ? lo : a: lo + 0 * (a - lo) would make relu(-inf) NaN.
      const double slope = p.get_relu_lower_clip_slope();
      double y = slope == 0.0 ? (a <= lo ? lo : a) : a > lo ? a : lo + slope * (a - lo);
      if (p.get_relu_upper_clip() && y > *p.get_relu_upper_clip()) y = *p.get_relu_upper_clip();
      return y;
    }
    case M::TANH_FWD: return std::tanh(a);
    case M::SIGMOID_FWD: return sigmoid(a);
    case M::ELU_FWD: return a > 0 ? a : p.get_elu_alpha() * std::expm1(a);
    case M::GELU_FWD: return 0.5 * a * (1.0 + std::erf(a / std::sqrt(2.0)));
    case M::SOFTPLUS_FWD: return std::log1p(std::exp(p.get_softplus_beta() * a)) / p.get_softplus_beta();
    case M::SWISH_FWD: return a * sigmoid(p.get_swish_beta() * a);
    case M::GELU_APPROX_TANH_FWD: return 0.5 * a * (1.0 + std::tanh(gelu_tanh_inner(a)));
    case M::HARDSWISH_FWD: {  // x * relu6(x + 3) / 6, NaN kept (fmin/fmax would drop it)
      const double r = a + 3.0;
      return a * (r < 0.0 ? 0.0 : r > 6.0 ? 6.0 : r) / 6.0;
    }
    // Backward modes: a = dy, b = x (the forward input).
    case M::RELU_BWD: {
      const double lo = p.get_relu_lower_clip();
      if (p.get_relu_upper_clip() && b >= *p.get_relu_upper_clip()) return 0.0;
      return b > lo ? a : a * p.get_relu_lower_clip_slope();
    }
    case M::TANH_BWD: { const double t = std::tanh(b); return a * (1.0 - t * t); }
    case M::SIGMOID_BWD: { const double s = sigmoid(b); return a * s * (1.0 - s); }
    case M::ELU_BWD: return b > 0 ? a : a * p.get_elu_alpha() * std::exp(b);
    case M::GELU_BWD: {
      const double cdf = 0.5 * (1.0 + std::erf(b / std::sqrt(2.0)));
      const double pdf = std::exp(-0.5 * b * b) / std::sqrt(2.0 * kPi);
      return a * (cdf + b * pdf);
    }
    case M::SOFTPLUS_BWD: return a * sigmoid(p.get_softplus_beta() * b);
    case M::SWISH_BWD: {
      const double beta = p.get_swish_beta(), s = sigmoid(beta * b);
      return a * (s + beta * b * s * (1.0 - s));
    }
    case M::GELU_APPROX_TANH_BWD: {
      const double t = std::tanh(gelu_tanh_inner(b));
      const double dinner = std::sqrt(2.0 / kPi) * (1.0 + 3.0 * 0.044715 * b * b);
      return a * (0.5 * (1.0 + t) + 0.5 * b * (1.0 - t * t) * dinner);
    }
    case M::CMP_EQ: return a == b ? 1.0 : 0.0;
    case M::CMP_NEQ: return a != b ? 1.0 : 0.0;
    case M::CMP_GT: return a > b ? 1.0 : 0.0;
    case M::CMP_GE: return a >= b ? 1.0 : 0.0;
    case M::CMP_LT: return a < b ? 1.0 : 0.0;
    case M::CMP_LE: return a <= b ? 1.0 : 0.0;
    case M::LOGICAL_AND: return (a != 0 && b != 0) ? 1.0 : 0.0;
    case M::LOGICAL_OR: return (a != 0 || b != 0) ? 1.0 : 0.0;
    case M::LOGICAL_NOT: return a == 0 ? 1.0 : 0.0;
    case M::BINARY_SELECT: return c != 0 ? a : b;
    case M::GEN_INDEX: case M::NOT_SET: break;
  }
  return std::nan("");
}

Status run(const PointwiseAttr& attr, const NodeArgs& a) {
  const View& out = a.out[0];
  const size_t n_in = a.in.size();
  const int64_t axis = attr.get_axis();
  const bool gen_index = attr.get_mode() == PointwiseMode::GEN_INDEX;
  parallel_for_each_index(a.pool, out.dims, [&](const std::vector<int64_t>& idx) {
    double v;
    if (gen_index) {
      v = static_cast<double>(idx[static_cast<size_t>(axis)]);
    } else {
      const double x0 = a.in[0].at_broadcast(idx);
      const double x1 = n_in > 1 ? a.in[1].at_broadcast(idx) : 0.0;
      const double x2 = n_in > 2 ? a.in[2].at_broadcast(idx) : 0.0;
      v = pointwise_apply(attr, x0, x1, x2);
    }
    out.set(idx, v);
  });
  return {};
}

}  // namespace dnngraph::ref
