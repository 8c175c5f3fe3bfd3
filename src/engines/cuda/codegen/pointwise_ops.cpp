// Each pointwise mode as an fp32 CUDA expression (the reference engine's formulas, in float).
#include "engines/cuda/codegen/pointwise_ops.hpp"

#include <cmath>
#include <cstdio>

#include "engines/cuda/codegen/emitter.hpp"
#include "engines/cuda/common/gpu_checked.hpp"

namespace dnngraph::cuda::codegen {

std::string float_literal(double v) {
  if (std::isnan(v)) return "__int_as_float(0x7fc00000)";
  if (std::isinf(v)) return v > 0 ? "__int_as_float(0x7f800000)" : "__int_as_float((int)0xff800000u)";
  char buf[64];
  std::snprintf(buf, sizeof(buf), "%.9ef", v);
  return buf;
}

int expression_cost(PointwiseMode m) {
  using M = PointwiseMode;
  switch (m) {
    case M::DIV: case M::RSQRT: case M::SQRT: case M::RECIPROCAL: case M::EXP: case M::LOG: case M::TANH_FWD:
    case M::SIGMOID_FWD: case M::ELU_FWD: case M::SOFTPLUS_FWD: case M::SWISH_FWD: case M::TANH_BWD:
    case M::SIGMOID_BWD: case M::ELU_BWD: case M::SOFTPLUS_BWD: case M::SWISH_BWD:
      return 8;
    case M::MOD: case M::POW: case M::COS: case M::SIN: case M::TAN: case M::ERF: case M::ATAN2: case M::GELU_FWD:
    case M::GELU_APPROX_TANH_FWD: case M::GELU_BWD: case M::GELU_APPROX_TANH_BWD:
      return 24;
    default:
      return 1;
  }
}

bool pointwise_expr(const PointwiseAttr& p, const std::string& a, const std::string& b, const std::string& c,
                    std::string& out) {
  using M = PointwiseMode;
  const std::string A = "(" + a + ")", B = "(" + b + ")", C = "(" + c + ")";
  auto call = [](const char* f, std::initializer_list<std::string> args) {
    std::string s = std::string(f) + "(";
    bool first = true;
    for (const auto& x : args) {
      s += (first ? "" : ", ") + x;
      first = false;
    }
    return s + ")";
  };
  const std::string lo = float_literal(p.get_relu_lower_clip());
  const std::string slope = float_literal(p.get_relu_lower_clip_slope());
  switch (p.get_mode()) {
    case M::ADD: out = A + " + " + B; break;
    case M::ADD_SQUARE: out = A + " + " + B + " * " + B; break;
    case M::DIV: out = A + " / " + B; break;
    case M::MAX: out = call("fmaxf", {a, b}); break;
    case M::MIN: out = call("fminf", {a, b}); break;
    case M::MOD: out = call("fmodf", {a, b}); break;
    case M::MUL: out = A + " * " + B; break;
    case M::POW: out = call("powf", {a, b}); break;
    case M::SUB: out = A + " - " + B; break;
    case M::ABS: out = call("fabsf", {a}); break;
    case M::CEIL: out = call("ceilf", {a}); break;
    case M::COS: out = call("cosf", {a}); break;
    case M::EXP: out = call("expf", {a}); break;
    case M::FLOOR: out = call("floorf", {a}); break;
    case M::LOG: out = call("logf", {a}); break;
    case M::NEG: out = "-" + A; break;
    case M::RSQRT: out = "1.0f / sqrtf(" + a + ")"; break;
    case M::SIN: out = call("sinf", {a}); break;
    case M::SQRT: out = call("sqrtf", {a}); break;
    case M::TAN: out = call("tanf", {a}); break;
    case M::ERF: out = call("erff", {a}); break;
    case M::IDENTITY: out = A; break;
    case M::RECIPROCAL: out = "1.0f / " + A; break;
    case M::ATAN2: out = call("atan2f", {a, b}); break;
    case M::RELU_FWD:
      out = p.get_relu_lower_clip_slope() == 0.0 ? call("dg::relu_plain", {a, lo}) : call("dg::relu", {a, lo, slope});
      if (p.get_relu_upper_clip()) out = call("dg::clip_above", {out, float_literal(*p.get_relu_upper_clip())});
      break;
    case M::TANH_FWD: out = call("tanhf", {a}); break;
    case M::SIGMOID_FWD: out = call("dg::sigmoid", {a}); break;
    case M::ELU_FWD: out = call("dg::elu", {a, float_literal(p.get_elu_alpha())}); break;
    case M::GELU_FWD: out = call("dg::gelu", {a}); break;
    case M::SOFTPLUS_FWD: out = call("dg::softplus", {a, float_literal(p.get_softplus_beta())}); break;
    case M::SWISH_FWD: out = call("dg::swish", {a, float_literal(p.get_swish_beta())}); break;
    case M::GELU_APPROX_TANH_FWD: out = call("dg::gelu_tanh", {a}); break;
    case M::RELU_BWD:
      out = call("dg::relu_bwd", {a, b, lo, slope});
      if (p.get_relu_upper_clip())
        out = "(" + B + " >= " + float_literal(*p.get_relu_upper_clip()) + " ? 0.0f : " + out + ")";
      break;
    case M::TANH_BWD: out = call("dg::tanh_bwd", {a, b}); break;
    case M::SIGMOID_BWD: out = call("dg::sigmoid_bwd", {a, b}); break;
    case M::ELU_BWD: out = call("dg::elu_bwd", {a, b, float_literal(p.get_elu_alpha())}); break;
    case M::GELU_BWD: out = call("dg::gelu_bwd", {a, b}); break;
    case M::SOFTPLUS_BWD: out = call("dg::softplus_bwd", {a, b, float_literal(p.get_softplus_beta())}); break;
    case M::SWISH_BWD: out = call("dg::swish_bwd", {a, b, float_literal(p.get_swish_beta())}); break;
    case M::GELU_APPROX_TANH_BWD: out = call("dg::gelu_tanh_bwd", {a, b}); break;
    case M::CMP_EQ: out = "dg::boolf(" + A + " == " + B + ")"; break;
    case M::CMP_NEQ: out = "dg::boolf(" + A + " != " + B + ")"; break;
    case M::CMP_GT: out = "dg::boolf(" + A + " > " + B + ")"; break;
    case M::CMP_GE: out = "dg::boolf(" + A + " >= " + B + ")"; break;
    case M::CMP_LT: out = "dg::boolf(" + A + " < " + B + ")"; break;
    case M::CMP_LE: out = "dg::boolf(" + A + " <= " + B + ")"; break;
    case M::LOGICAL_AND: out = "dg::boolf(" + A + " != 0.0f && " + B + " != 0.0f)"; break;
    case M::LOGICAL_OR: out = "dg::boolf(" + A + " != 0.0f || " + B + " != 0.0f)"; break;
    case M::LOGICAL_NOT: out = "dg::boolf(" + A + " == 0.0f)"; break;
    case M::BINARY_SELECT: out = "(" + C + " != 0.0f ? " + A + " : " + B + ")"; break;
    default: return false;  // GEN_INDEX, NOT_SET and modes without a formula here
  }
  return true;
}

bool checked_on_gpu(const Partition& p, std::string& why_not) {
  for (size_t i = 0; i < p.nodes.size(); ++i) {
    const ir::Node& n = p.node(i);
    if (ir::is<GenstatsAttr>(n) && !cuda::checked_on_gpu("genstats", ir::describe(n) + ": lowered, but", why_not))
      return false;
  }
  return true;
}

bool has_expressions(const expr::Program& prog, std::string& why_not) {
  std::string e;
  for (const auto& in : prog.code) {
    if (in.kind != expr::InstrKind::APPLY || pointwise_expr(in.op, "a", "b", "c", e)) continue;
    why_not = "pointwise mode " + std::string(to_string(in.op.get_mode())) + " has no CUDA expression";
    return false;
  }
  return true;
}

}  // namespace dnngraph::cuda::codegen
