// The element loops of the CPU epilogue: every pointwise mode in fp32 (the rarer modes whose fp32
// form would cancel or lose range in double per element), rounding, loads and stores. These are the
// engine's own formulas: tests hold them against ref's, which this file does not call.
#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>

#include "core/dtype.hpp"
#include "engines/cpu/cpu_features.hpp"
#include "engines/cpu/epilogue/epilogue.hpp"
#include "engines/cpu/epilogue/vector_math.hpp"
#include "engines/cpu/simd/convert_kernels.hpp"

// The element loops are compiled for AVX2 and for the baseline ISA, picked at load time.
#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__)
#define DNNGRAPH_EPILOGUE_CLONES __attribute__((target_clones("avx2", "default")))
#else
#define DNNGRAPH_EPILOGUE_CLONES
#endif
#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#include <immintrin.h>
#define DNNGRAPH_EPILOGUE_AVX2 1
#endif

namespace dnngraph::cpu {
namespace {

inline double sigmoid_f64(double x) { return 1.0 / (1.0 + std::exp(-x)); }

// Inlined into apply_fp32, so each of its clones (AVX2, baseline) vectorizes them for its ISA;
// as separate functions they were compiled once, for the baseline.
template <class F>
__attribute__((always_inline)) inline void unary(int64_t n, const float* a, float* o, F f) {
  for (int64_t i = 0; i < n; ++i) o[i] = f(a[i]);
}
template <class F>
__attribute__((always_inline)) inline void binary(int64_t n, const float* a, const float* b, float* o, F f) {
  for (int64_t i = 0; i < n; ++i) o[i] = f(a[i], b[i]);
}

// std::fmin / std::fmax (a NaN operand yields the other one) as compares and selects, which GCC
// vectorizes: for std::fmin it calls libm's fminf per element (no -ffinite-math-only), 14% of a
// MobileNetV2 run on the CPU through ReLU6's upper clip.
__attribute__((always_inline)) inline float fmin_select(float x, float y) { return ((x < y) | (y != y)) ? x : y; }
__attribute__((always_inline)) inline float fmax_select(float x, float y) { return ((x > y) | (y != y)) ? x : y; }

// NaN stays NaN through both clips, as on ref and the GPU (PyTorch's relu / relu6 rule): the
// ordered compares are false for NaN, so it takes the branch that keeps the value.
__attribute__((always_inline)) inline void relu(const PointwiseAttr& p, int64_t n, const float* a, float* o) {
  const float lo = static_cast<float>(p.get_relu_lower_clip());
  const float slope = static_cast<float>(p.get_relu_lower_clip_slope());
  if (slope == 0.0f) {
    for (int64_t i = 0; i < n; ++i) o[i] = a[i] <= lo ? lo : a[i];
  } else {
    for (int64_t i = 0; i < n; ++i) o[i] = a[i] > lo ? a[i] : lo + slope * (a[i] - lo);
  }
  if (auto hi = p.get_relu_upper_clip()) {
    const float h = static_cast<float>(*hi);
    for (int64_t i = 0; i < n; ++i) o[i] = o[i] > h ? h : o[i];
  }
}

// The modes that are rare in epilogues, one element at a time. Those that cancel (GELU's
// derivative changes sign near -0.75) or overflow in fp32 (softplus's exp) work in double.
bool apply_rare(const PointwiseAttr& p, int64_t n, const float* a, const float* b, float* o) {
  using M = PointwiseMode;
  const auto in_double = [&](auto f) {
    for (int64_t i = 0; i < n; ++i) o[i] = static_cast<float>(f(static_cast<double>(a[i]), static_cast<double>(b[i])));
  };
  constexpr double kInvSqrt2 = 0.70710678118654752, kInvSqrt2Pi = 0.39894228040143268;
  constexpr double kTanhK = 0.79788456080286536, kCubic = 0.044715;
  switch (p.get_mode()) {
    case M::MOD: binary(n, a, b, o, [](float x, float y) { return std::fmod(x, y); }); return true;
    case M::POW: binary(n, a, b, o, [](float x, float y) { return std::pow(x, y); }); return true;
    case M::ATAN2: binary(n, a, b, o, [](float x, float y) { return std::atan2(x, y); }); return true;
    case M::CEIL: unary(n, a, o, [](float x) { return std::ceil(x); }); return true;
    case M::FLOOR: unary(n, a, o, [](float x) { return std::floor(x); }); return true;
    case M::COS: unary(n, a, o, [](float x) { return std::cos(x); }); return true;
    case M::SIN: unary(n, a, o, [](float x) { return std::sin(x); }); return true;
    case M::TAN: unary(n, a, o, [](float x) { return std::tan(x); }); return true;
    case M::ERF: unary(n, a, o, [](float x) { return std::erf(x); }); return true;
    case M::LOGICAL_NOT: unary(n, a, o, [](float x) { return x == 0.0f ? 1.0f : 0.0f; }); return true;
    case M::LOGICAL_AND:
      binary(n, a, b, o, [](float x, float y) { return x != 0.0f && y != 0.0f ? 1.0f : 0.0f; });
      return true;
    case M::LOGICAL_OR:
      binary(n, a, b, o, [](float x, float y) { return x != 0.0f || y != 0.0f ? 1.0f : 0.0f; });
      return true;
    case M::ELU_FWD: {
      const double alpha = p.get_elu_alpha();
      in_double([alpha](double x, double) { return x > 0 ? x : alpha * std::expm1(x); });
      return true;
    }
    case M::SOFTPLUS_FWD: {
      const double beta = p.get_softplus_beta();
      in_double([beta](double x, double) { return std::log1p(std::exp(beta * x)) / beta; });
      return true;
    }
    // Backward modes: a holds dy, b the forward input x.
    case M::RELU_BWD: {
      const float lo = static_cast<float>(p.get_relu_lower_clip());
      const float slope = static_cast<float>(p.get_relu_lower_clip_slope());
      const auto hi = p.get_relu_upper_clip();
      const float h = hi ? static_cast<float>(*hi) : std::numeric_limits<float>::infinity();
      binary(n, a, b, o, [=](float dy, float x) { return x >= h ? 0.0f : x > lo ? dy : dy * slope; });
      return true;
    }
    case M::TANH_BWD:
      in_double([](double dy, double x) { const double t = std::tanh(x); return dy - dy * t * t; });
      return true;
    case M::SIGMOID_BWD:
      in_double([](double dy, double x) { const double s = sigmoid_f64(x); return dy * (s - s * s); });
      return true;
    case M::ELU_BWD: {
      const double alpha = p.get_elu_alpha();
      in_double([alpha](double dy, double x) { return x > 0 ? dy : dy * alpha * std::exp(x); });
      return true;
    }
    case M::SOFTPLUS_BWD: {
      const double beta = p.get_softplus_beta();
      in_double([beta](double dy, double x) { return dy * sigmoid_f64(beta * x); });
      return true;
    }
    case M::SWISH_BWD: {
      const double beta = p.get_swish_beta();
      in_double([beta](double dy, double x) {
        const double s = sigmoid_f64(beta * x);
        return dy * s * (1.0 + beta * x * (1.0 - s));
      });
      return true;
    }
    case M::GELU_BWD:
      in_double([=](double dy, double x) {
        return dy * (0.5 * std::erfc(-x * kInvSqrt2) + x * kInvSqrt2Pi * std::exp(-0.5 * x * x));
      });
      return true;
    case M::GELU_APPROX_TANH_BWD:
      in_double([=](double dy, double x) {
        const double t = std::tanh(kTanhK * (x + kCubic * x * x * x));
        const double slope = kTanhK * (1.0 + 3.0 * kCubic * x * x);
        return dy * 0.5 * ((1.0 + t) + x * (1.0 - t) * (1.0 + t) * slope);
      });
      return true;
    default: return false;  // GEN_INDEX (an index, not a function of operands) and NOT_SET
  }
}

// The fp32 loop of a mode; false when the mode has none.
// n <= EpilogueRun::kChunk.
DNNGRAPH_EPILOGUE_CLONES bool apply_fp32(const PointwiseAttr& p, int64_t n, const float* a, const float* b, const float* c, float* o) {
  using M = PointwiseMode;
  switch (p.get_mode()) {
    case M::ADD: binary(n, a, b, o, [](float x, float y) { return x + y; }); return true;
    case M::SUB: binary(n, a, b, o, [](float x, float y) { return x - y; }); return true;
    case M::MUL: binary(n, a, b, o, [](float x, float y) { return x * y; }); return true;
    case M::DIV: binary(n, a, b, o, [](float x, float y) { return x / y; }); return true;
    case M::ADD_SQUARE: binary(n, a, b, o, [](float x, float y) { return x + y * y; }); return true;
    case M::MAX: binary(n, a, b, o, fmax_select); return true;
    case M::MIN: binary(n, a, b, o, fmin_select); return true;
    case M::IDENTITY: std::memmove(o, a, static_cast<size_t>(n) * sizeof(float)); return true;
    case M::NEG: unary(n, a, o, [](float x) { return -x; }); return true;
    case M::ABS: unary(n, a, o, [](float x) { return std::fabs(x); }); return true;
    case M::RECIPROCAL: unary(n, a, o, [](float x) { return 1.0f / x; }); return true;
    case M::SQRT: unary(n, a, o, [](float x) { return std::sqrt(x); }); return true;
    case M::RSQRT: unary(n, a, o, [](float x) { return 1.0f / std::sqrt(x); }); return true;
    case M::EXP: vmath::map(vmath::Fn::EXP, n, a, o); return true;
    case M::LOG: unary(n, a, o, [](float x) { return std::log(x); }); return true;
    case M::TANH_FWD: vmath::map(vmath::Fn::TANH, n, a, o); return true;
    case M::SIGMOID_FWD: vmath::map(vmath::Fn::SIGMOID, n, a, o); return true;
    case M::RELU_FWD: relu(p, n, a, o); return true;
    case M::GELU_FWD: vmath::map(vmath::Fn::GELU_ERF, n, a, o); return true;
    case M::GELU_APPROX_TANH_FWD: vmath::map(vmath::Fn::GELU_TANH, n, a, o); return true;
    case M::HARDSWISH_FWD:  // x * relu6(x + 3) / 6; comparisons keep NaN
      unary(n, a, o, [](float x) {
        const float r = x + 3.0f;
        return x * (r < 0.0f ? 0.0f : r > 6.0f ? 6.0f : r) / 6.0f;
      });
      return true;
    case M::SWISH_FWD: vmath::map(vmath::Fn::SWISH, n, a, o, static_cast<float>(p.get_swish_beta())); return true;
    case M::CMP_GT: binary(n, a, b, o, [](float x, float y) { return x > y ? 1.0f : 0.0f; }); return true;
    case M::CMP_GE: binary(n, a, b, o, [](float x, float y) { return x >= y ? 1.0f : 0.0f; }); return true;
    case M::CMP_LT: binary(n, a, b, o, [](float x, float y) { return x < y ? 1.0f : 0.0f; }); return true;
    case M::CMP_LE: binary(n, a, b, o, [](float x, float y) { return x <= y ? 1.0f : 0.0f; }); return true;
    case M::CMP_EQ: binary(n, a, b, o, [](float x, float y) { return x == y ? 1.0f : 0.0f; }); return true;
    case M::CMP_NEQ: binary(n, a, b, o, [](float x, float y) { return x != y ? 1.0f : 0.0f; }); return true;
    case M::BINARY_SELECT:
      for (int64_t i = 0; i < n; ++i) o[i] = c[i] != 0.0f ? a[i] : b[i];
      return true;
    default: return apply_rare(p, n, a, b, o);
  }
}

DNNGRAPH_EPILOGUE_CLONES void round_run(DataType t, int64_t n, float* o) {
  switch (t) {
    case DataType::NOT_SET: case DataType::FLOAT: case DataType::DOUBLE: return;
    case DataType::BFLOAT16:  // dtype::float_to_bf16 and back, branch-free so the loop vectorizes
      for (int64_t i = 0; i < n; ++i) {
        uint32_t b;
        std::memcpy(&b, o + i, 4);
        const uint32_t nearest = (b + 0x7fffu + ((b >> 16) & 1u)) & 0xffff0000u;
        const uint32_t quiet_nan = (b | 0x00400000u) & 0xffff0000u;
        b = (b & 0x7fffffffu) > 0x7f800000u ? quiet_nan : nearest;
        std::memcpy(o + i, &b, 4);
      }
      return;
    case DataType::HALF:
      for (int64_t i = 0; i < n; ++i) o[i] = dtype::half_to_float(dtype::float_to_half(o[i]));
      return;
    default:
      for (int64_t i = 0; i < n; ++i) o[i] = static_cast<float>(dtype::round_to(t, o[i]));
  }
}

// The extreme of n floats: the largest (kAbs: of |x|), or the smallest when kMin; NaN when one
// is NaN. `best` starts as the identity.
template <bool kAbs, bool kMin>
float extreme_portable(const float* x, int64_t n, float best) {
  bool nan = false;
  for (int64_t i = 0; i < n; ++i) {
    const float v = kAbs ? std::fabs(x[i]) : x[i];
    nan |= v != v;
    best = kMin ? (v < best ? v : best) : (v > best ? v : best);
  }
  return nan ? std::nanf("") : best;
}

#ifdef DNNGRAPH_EPILOGUE_AVX2
template <bool kAbs, bool kMin>
__attribute__((target("avx2"))) float extreme_avx2(const float* x, int64_t n, float best) {
  const __m256 sign = _mm256_set1_ps(-0.0f);
  __m256 b0 = _mm256_set1_ps(best), b1 = b0, nan = _mm256_setzero_ps();
  int64_t i = 0;
  for (; i + 16 <= n; i += 16) {  // two chains: max has a latency of 3-4 cycles
    __m256 v0 = _mm256_loadu_ps(x + i), v1 = _mm256_loadu_ps(x + i + 8);
    if (kAbs) {
      v0 = _mm256_andnot_ps(sign, v0);
      v1 = _mm256_andnot_ps(sign, v1);
    }
    nan = _mm256_or_ps(nan, _mm256_or_ps(_mm256_cmp_ps(v0, v0, _CMP_UNORD_Q), _mm256_cmp_ps(v1, v1, _CMP_UNORD_Q)));
    b0 = kMin ? _mm256_min_ps(v0, b0) : _mm256_max_ps(v0, b0);  // a NaN v leaves b as it was
    b1 = kMin ? _mm256_min_ps(v1, b1) : _mm256_max_ps(v1, b1);
  }
  alignas(32) float lanes[16];
  _mm256_store_ps(lanes, b0);
  _mm256_store_ps(lanes + 8, b1);
  best = extreme_portable<false, kMin>(lanes, 16, best);
  const float tail = extreme_portable<kAbs, kMin>(x + i, n - i, best);
  return _mm256_movemask_ps(nan) != 0 ? std::nanf("") : tail;
}
#endif

template <bool kAbs, bool kMin>
float extreme(const float* x, int64_t n, float best) {
#ifdef DNNGRAPH_EPILOGUE_AVX2
  static const bool kAvx2 = cpu_features().supports(Isa::AVX2);
  if (kAvx2) return extreme_avx2<kAbs, kMin>(x, n, best);
#endif
  return extreme_portable<kAbs, kMin>(x, n, best);
}

}  // namespace

bool extreme_run(ReductionMode m, int64_t n, const float* x, float& out) {
  constexpr float kInf = std::numeric_limits<float>::infinity();
  switch (m) {
    case ReductionMode::AMAX: out = extreme<true, false>(x, n, 0.0f); return true;
    case ReductionMode::MAX: out = extreme<false, false>(x, n, -kInf); return true;
    case ReductionMode::MIN: out = extreme<false, true>(x, n, kInf); return true;
    default: return false;
  }
}

bool has_pointwise_loop(const PointwiseAttr& op) {
  float x[1] = {1.0f}, y[1];  // n = 0: asks the switch without computing anything
  return apply_fp32(op, 0, x, x, x, y);
}

void apply_pointwise(const PointwiseAttr& op, DataType round_to, int64_t n, const float* a, const float* b,
                     const float* c, float* out) {
  static const float kZeros[EpilogueRun::kChunk] = {};
  if (!b) b = kZeros;  // absent operands read as 0, as ref does
  if (!c) c = kZeros;
  if (n > EpilogueRun::kChunk) {  // keep the zero operands in range
    for (int64_t i = 0; i < n; i += EpilogueRun::kChunk) {
      const int64_t m = std::min<int64_t>(EpilogueRun::kChunk, n - i);
      apply_pointwise(op, round_to, m, a + i, b == kZeros ? nullptr : b + i, c == kZeros ? nullptr : c + i, out + i);
    }
    return;
  }
  // Epilogue::init admits no mode without a loop (expr lowering turns GEN_INDEX into an index).
  if (!apply_fp32(op, n, a, b, c, out)) std::fill(out, out + n, std::nanf(""));
  round_run(round_to, n, out);
}

namespace {
// The vector conversion runs of this CPU's best ISA, for unit-stride bf16 and fp16 loads and stores
// (per element, a bf16 relu pass ran at a fifth of the fp32 one's bandwidth).
const ConvertKernels& unit_stride_conversions() {
  static const ConvertKernels& k = convert_kernels(cpu_features().best());
  return k;
}
}  // namespace

DNNGRAPH_EPILOGUE_CLONES void store_run(void* dst, DataType t, int64_t stride, int64_t n, const float* src) {
  if (stride == 1 && (t == DataType::BFLOAT16 || t == DataType::HALF)) {
    unit_stride_conversions().from_fp32(src, n, t, dst);
    return;
  }
  switch (t) {
    case DataType::FLOAT: {
      float* d = static_cast<float*>(dst);
      if (stride == 1) std::memmove(d, src, static_cast<size_t>(n) * sizeof(float));
      else for (int64_t i = 0; i < n; ++i) d[i * stride] = src[i];
      return;
    }
    case DataType::BFLOAT16: {
      uint16_t* d = static_cast<uint16_t*>(dst);
      for (int64_t i = 0; i < n; ++i) d[i * stride] = dtype::float_to_bf16(src[i]);
      return;
    }
    case DataType::HALF: {
      uint16_t* d = static_cast<uint16_t*>(dst);
      for (int64_t i = 0; i < n; ++i) d[i * stride] = dtype::float_to_half(src[i]);
      return;
    }
    case DataType::DOUBLE: {
      double* d = static_cast<double*>(dst);
      for (int64_t i = 0; i < n; ++i) d[i * stride] = src[i];
      return;
    }
    default:
      for (int64_t i = 0; i < n; ++i) dtype::store(dst, t, i * stride, src[i]);
  }
}

DNNGRAPH_EPILOGUE_CLONES void load_run(const void* src, DataType t, int64_t stride, int64_t n, float* dst) {
  if (stride == 1 && (t == DataType::BFLOAT16 || t == DataType::HALF)) {
    unit_stride_conversions().to_fp32(src, t, n, dst);
    return;
  }
  switch (t) {
    case DataType::FLOAT: {
      const float* s = static_cast<const float*>(src);
      for (int64_t i = 0; i < n; ++i) dst[i] = s[i * stride];
      return;
    }
    case DataType::BFLOAT16: {
      const uint16_t* s = static_cast<const uint16_t*>(src);
      for (int64_t i = 0; i < n; ++i) dst[i] = dtype::bf16_to_float(s[i * stride]);
      return;
    }
    case DataType::HALF: {
      const uint16_t* s = static_cast<const uint16_t*>(src);
      for (int64_t i = 0; i < n; ++i) dst[i] = dtype::half_to_float(s[i * stride]);
      return;
    }
    default:
      for (int64_t i = 0; i < n; ++i) dst[i] = static_cast<float>(dtype::load(src, t, i * stride));
  }
}

}  // namespace dnngraph::cpu
