// The epilogue chain on accumulators in registers, written once over a vector type V of simd/
// (add, sub, mul, set1, load and relu_clip): the GEMM microkernel applies it to each finished tile
// (kernel_body.inl) and the depthwise conv's 3-tap kernels to their blocks of pixels, before the
// store. acc[i][j] holds row i's j-th vector of columns; the tile's first element is (row0, col0)
// of the TileChain's block.
// No include guard: it is meant to be included inside an ISA's target region (DNNGRAPH_TARGET_BEGIN),
// once per translation unit, so that every instantiation is compiled for that ISA.

namespace dnngraph::cpu {
namespace {

template <class V, ChainStep::Kind K>
inline __attribute__((always_inline)) typename V::Reg chain_op(typename V::Reg v, typename V::Reg x) {
  if constexpr (K == ChainStep::ADD) return V::add(v, x);
  else if constexpr (K == ChainStep::MUL) return V::mul(v, x);
  else if constexpr (K == ChainStep::SUB) return V::sub(v, x);
  else return V::sub(x, v);  // SUB_FROM
}

// One arithmetic step on the MR x NV accumulators, the operand's form decided once per step: per
// register (same as the output, a residual) or per vector column (a bias, or a scalar broadcast).
template <class V, int MR, int NV, ChainStep::Kind K>
inline __attribute__((always_inline)) void arithmetic_step(const TileChain& tc, int operand, int64_t row0, int64_t col0,
                                                           typename V::Reg (&acc)[MR][NV]) {
  constexpr int W = V::kWidth;
  const float* column = tc.column[operand] ? tc.column[operand] + col0 : nullptr;
  const float* same = tc.same[operand] ? tc.same[operand] + row0 * tc.ld + col0 : nullptr;
  if (same) {
#pragma GCC unroll 16
    for (int i = 0; i < MR; ++i)
#pragma GCC unroll 4
      for (int j = 0; j < NV; ++j) acc[i][j] = chain_op<V, K>(acc[i][j], V::load(same + i * tc.ld + j * W));
    return;
  }
  typename V::Reg col[NV];
#pragma GCC unroll 4
  for (int j = 0; j < NV; ++j) col[j] = column ? V::load(column + j * W) : V::set1(tc.scalar[operand]);
#pragma GCC unroll 16
  for (int i = 0; i < MR; ++i)
#pragma GCC unroll 4
    for (int j = 0; j < NV; ++j) acc[i][j] = chain_op<V, K>(acc[i][j], col[j]);
}

// One chain step on the accumulators; ReLU with step_scalar's clips.
template <class V, int MR, int NV>
inline __attribute__((always_inline)) void apply_step(const ChainStep& st, const TileChain& tc, int64_t row0,
                                                     int64_t col0, typename V::Reg (&acc)[MR][NV]) {
  const int o = st.operand;
  switch (st.kind) {
    case ChainStep::ADD: arithmetic_step<V, MR, NV, ChainStep::ADD>(tc, o, row0, col0, acc); break;
    case ChainStep::MUL: arithmetic_step<V, MR, NV, ChainStep::MUL>(tc, o, row0, col0, acc); break;
    case ChainStep::SUB: arithmetic_step<V, MR, NV, ChainStep::SUB>(tc, o, row0, col0, acc); break;
    case ChainStep::SUB_FROM: arithmetic_step<V, MR, NV, ChainStep::SUB_FROM>(tc, o, row0, col0, acc); break;
    case ChainStep::RELU: {
      const typename V::Reg lo = V::set1(st.lo), hi = V::set1(st.hi);
#pragma GCC unroll 16
      for (int i = 0; i < MR; ++i)
#pragma GCC unroll 4
        for (int j = 0; j < NV; ++j) acc[i][j] = V::relu_clip(acc[i][j], lo, hi);
      break;
    }
  }
}

}  // namespace
}  // namespace dnngraph::cpu
