#include "engines/cpu/epilogue/epilogue_chain.hpp"

#include <algorithm>
#include <type_traits>

#include "engines/cpu/epilogue/epilogue_chain_avx512.hpp"
#include "engines/cpu/simd/target.hpp"

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#include <immintrin.h>
#define DNNGRAPH_CHAIN_AVX2 1
#endif

namespace dnngraph::cpu {
namespace {

using expr::InstrKind;

bool is_fp32(DataType t) { return t == DataType::FLOAT || t == DataType::NOT_SET; }

// Whether this build has the AVX-512 loops and this CPU runs them (asked once).
bool avx512_usable() {
  static const bool kAvx512 = DNNGRAPH_SIMD_X86 && cpu_features().supports(Isa::AVX512);
  return kAvx512;
}

// The kernel over one element, the reference for both loops.
float step_scalar(const ChainStep& s, float v, float x) {
  switch (s.kind) {
    case ChainStep::ADD: return v + x;
    case ChainStep::MUL: return v * x;
    case ChainStep::SUB: return v - x;
    case ChainStep::SUB_FROM: return x - v;
    case ChainStep::RELU: {  // NaN stays NaN, -0 becomes +0 (lo = 0)
      const float l = v <= s.lo ? s.lo : v;
      return l > s.hi ? s.hi : l;
    }
  }
  return v;
}

void run_portable(const Chain& c, int64_t n, const float* anchor, const float* const* ptrs, const float* scalars,
                  float* out) {
  for (int64_t i = 0; i < n; ++i) {
    float v = anchor[i];
    for (const ChainStep& s : c.steps) {
      const float x = s.operand < 0 ? 0.0f : (ptrs[s.operand] ? ptrs[s.operand][i] : scalars[s.operand]);
      v = step_scalar(s, v, x);
    }
    out[i] = v;
  }
}

#ifdef DNNGRAPH_CHAIN_AVX2
// One step over kV vectors held in registers. ReLU as step_scalar's clips (ordered compares,
// false for NaN, and blends): NaN stays NaN and -0 gives +0.
template <int kV>
__attribute__((target("avx2,fma"), always_inline)) inline void step_avx2(const ChainStep& s, __m256* v,
                                                                         const float* p, float scalar) {
  __m256 x[kV];
  for (int j = 0; j < kV; ++j) x[j] = p ? _mm256_loadu_ps(p + 8 * j) : _mm256_set1_ps(scalar);
  switch (s.kind) {
    case ChainStep::ADD: for (int j = 0; j < kV; ++j) v[j] = _mm256_add_ps(v[j], x[j]); break;
    case ChainStep::MUL: for (int j = 0; j < kV; ++j) v[j] = _mm256_mul_ps(v[j], x[j]); break;
    case ChainStep::SUB: for (int j = 0; j < kV; ++j) v[j] = _mm256_sub_ps(v[j], x[j]); break;
    case ChainStep::SUB_FROM: for (int j = 0; j < kV; ++j) v[j] = _mm256_sub_ps(x[j], v[j]); break;
    case ChainStep::RELU: {
      const __m256 lo = _mm256_set1_ps(s.lo), hi = _mm256_set1_ps(s.hi);
      for (int j = 0; j < kV; ++j) {
        v[j] = _mm256_blendv_ps(v[j], lo, _mm256_cmp_ps(v[j], lo, _CMP_LE_OQ));
        v[j] = _mm256_blendv_ps(v[j], hi, _mm256_cmp_ps(v[j], hi, _CMP_GT_OQ));
      }
      break;
    }
  }
}

// kV vectors from anchor + i through every step into out + i. Each step's kind and operand are
// decoded once per kV * 8 floats: decoding them per vector cost more than the arithmetic (the
// bias + ReLU of a 64-channel conv took 11% of its time).
template <int kV>
__attribute__((target("avx2,fma"))) int64_t chain_blocks(const Chain& c, int64_t i, int64_t n, const float* anchor,
                                                         const float* const* ptrs, const float* scalars, float* out) {
  for (; i + 8 * kV <= n; i += 8 * kV) {
    __m256 v[kV];
    for (int j = 0; j < kV; ++j) v[j] = _mm256_loadu_ps(anchor + i + 8 * j);
    for (const ChainStep& s : c.steps) {
      const bool has = s.operand >= 0;
      const float* p = has && ptrs[s.operand] ? ptrs[s.operand] + i : nullptr;
      step_avx2<kV>(s, v, p, has ? scalars[s.operand] : 0.0f);
    }
    for (int j = 0; j < kV; ++j) _mm256_storeu_ps(out + i + 8 * j, v[j]);
  }
  return i;
}

__attribute__((target("avx2,fma"))) void run_avx2(const Chain& c, int64_t n, const float* anchor,
                                                   const float* const* ptrs, const float* scalars, float* out) {
  const int64_t full = chain_blocks<1>(c, chain_blocks<8>(c, 0, n, anchor, ptrs, scalars, out), n, anchor, ptrs,
                                       scalars, out);
  if (full < n) {
    const float* tail_ptrs[Chain::kMaxOperands];
    for (size_t j = 0; j < c.operand_instr.size(); ++j) tail_ptrs[j] = ptrs[j] ? ptrs[j] + full : nullptr;
    run_portable(c, n - full, anchor + full, tail_ptrs, scalars, out + full);
  }
}
#endif

// One step over a rows x cols block in place; the operand is a per-column vector (the same for
// every row), rows laid out as the block (same + i * ld), or a scalar.
template <class Op>
void block_step(int64_t rows, int64_t cols, float* data, int64_t ld, const float* column, const float* same,
                float scalar, Op op) {
  for (int64_t i = 0; i < rows; ++i) {
    float* row = data + i * ld;
    const float* x = column ? column : same ? same + i * ld : nullptr;
    for (int64_t k = 0; k < cols; ++k) row[k] = op(row[k], x ? x[k] : scalar);
  }
}

}  // namespace

void run_chain_block(const Chain& c, int64_t rows, int64_t cols, float* data, int64_t ld, const float* const* column,
                     const float* const* same, const float* scalars) {
#if DNNGRAPH_SIMD_X86
  if (avx512_usable()) {
    run_chain_tile_avx512(c, rows, cols, data, ld, column, same, scalars);
    return;
  }
#endif
  for (const ChainStep& s : c.steps) {
    const bool has = s.operand >= 0;
    const float* col = has ? column[s.operand] : nullptr;
    const float* sm = has ? same[s.operand] : nullptr;
    const float sc = has ? scalars[s.operand] : 0.0f;
    auto with = [&](auto kind) {
      const ChainStep one{decltype(kind)::value, s.operand, s.lo, s.hi};
      block_step(rows, cols, data, ld, col, sm, sc, [one](float v, float x) { return step_scalar(one, v, x); });
    };
    switch (s.kind) {  // the kind as a constant, so each loop is specialized
      case ChainStep::ADD: with(std::integral_constant<ChainStep::Kind, ChainStep::ADD>{}); break;
      case ChainStep::MUL: with(std::integral_constant<ChainStep::Kind, ChainStep::MUL>{}); break;
      case ChainStep::SUB: with(std::integral_constant<ChainStep::Kind, ChainStep::SUB>{}); break;
      case ChainStep::SUB_FROM: with(std::integral_constant<ChainStep::Kind, ChainStep::SUB_FROM>{}); break;
      case ChainStep::RELU: with(std::integral_constant<ChainStep::Kind, ChainStep::RELU>{}); break;
    }
  }
}

// The types a chain loads and stores through the vector conversion runs.
bool chain_type(DataType t) { return t == DataType::FLOAT || t == DataType::BFLOAT16 || t == DataType::HALF; }

bool Chain::fp32_only() const {
  return store_type == DataType::FLOAT &&
         std::all_of(operand_type.begin(), operand_type.end(), [](DataType t) { return t == DataType::FLOAT; });
}

bool Chain::build(const expr::Program& prog, const std::vector<DataType>& round,
                  const std::vector<DataType>& tensor_type) {
  steps.clear();
  operand_instr.clear();
  operand_type.clear();
  store_instr = -1;
  store_type = DataType::FLOAT;
  const auto type_of = [&](int tensor) { return tensor_type[static_cast<size_t>(tensor)]; };
  std::vector<int> operand_of_reg(static_cast<size_t>(prog.num_regs), -1);
  int value = -1;  // the register holding the chain's value
  for (size_t i = 0; i < prog.code.size(); ++i) {
    const expr::Instr& in = prog.code[i];
    switch (in.kind) {
      case InstrKind::LOAD_ANCHOR:
        if (value >= 0 || !is_fp32(round[i]) || round[i] == DataType::DOUBLE) return false;
        value = in.dst;
        break;
      case InstrKind::LOAD:
      case InstrKind::LOAD_SCALAR:
        if (!chain_type(type_of(in.tensor)) || operand_instr.size() >= kMaxOperands) return false;
        operand_of_reg[static_cast<size_t>(in.dst)] = static_cast<int>(operand_instr.size());
        operand_instr.push_back(static_cast<int>(i));
        operand_type.push_back(type_of(in.tensor));
        break;
      case InstrKind::APPLY: {
        if (value < 0 || !is_fp32(round[i])) return false;
        const PointwiseMode m = in.op.get_mode();
        if (m == PointwiseMode::RELU_FWD) {
          if (in.src[0] != value || in.op.get_relu_lower_clip_slope() != 0.0) return false;
          ChainStep relu{ChainStep::RELU, -1};
          relu.lo = static_cast<float>(in.op.get_relu_lower_clip());  // as the general executor rounds them
          if (auto hi = in.op.get_relu_upper_clip()) relu.hi = static_cast<float>(*hi);
          steps.push_back(relu);
        } else if (m == PointwiseMode::ADD || m == PointwiseMode::MUL || m == PointwiseMode::SUB) {
          const bool first = in.src[0] == value;
          const int other = first ? in.src[1] : in.src[0];
          if ((!first && in.src[1] != value) || other < 0 || operand_of_reg[static_cast<size_t>(other)] < 0) return false;
          ChainStep::Kind k = m == PointwiseMode::ADD ? ChainStep::ADD : m == PointwiseMode::MUL ? ChainStep::MUL
                              : first ? ChainStep::SUB : ChainStep::SUB_FROM;
          steps.push_back({k, operand_of_reg[static_cast<size_t>(other)]});
        } else {
          return false;
        }
        value = in.dst;
        break;
      }
      case InstrKind::STORE:
        if (store_instr >= 0 || in.src[0] != value || i + 1 != prog.code.size() || !chain_type(type_of(in.tensor)))
          return false;
        store_instr = static_cast<int>(i);
        store_type = type_of(in.tensor);
        break;
      default:
        return false;  // INDEX, REDUCE
    }
  }
  return store_instr >= 0 && (!steps.empty() || store_type != DataType::FLOAT);
}

bool chain_block_preferred(int64_t cols) { return cols < 8 || (avx512_usable() && cols <= 64); }

void run_chain(const Chain& c, int64_t n, const float* anchor, const float* const* ptrs, const float* scalars,
               float* out) {
#if DNNGRAPH_SIMD_X86
  if (avx512_usable()) {
    run_chain_avx512(c, n, anchor, ptrs, scalars, out);
    return;
  }
#endif
#ifdef DNNGRAPH_CHAIN_AVX2
  if (simd::x86_avx2_usable()) {
    run_avx2(c, n, anchor, ptrs, scalars, out);
    return;
  }
#endif
  run_portable(c, n, anchor, ptrs, scalars, out);
}

void TileChain::apply(int64_t rows, int64_t cols, float* c, int64_t row0, int64_t col0) const {
  const float* col_at[kMaxOperands];
  const float* same_at[kMaxOperands];
  for (size_t j = 0; j < chain->operand_instr.size(); ++j) {
    col_at[j] = column[j] ? column[j] + col0 : nullptr;
    same_at[j] = same[j] ? same[j] + row0 * ld + col0 : nullptr;
  }
  run_chain_block(*chain, rows, cols, c, ld, col_at, same_at, scalar);
}

}  // namespace dnngraph::cpu
