// The microkernel body, written once over a vector type V of simd/ and instantiated per ISA:
// kernel_<isa>.cpp includes this file inside its ISA's target region (so every instantiation is
// compiled for exactly that ISA). V gives Reg, kIsa, kWidth, zero(), load(p), store(p, r),
// bcast(p), add(a, b) and fma(a, b, acc) = a * b + acc.
// No include guard: it is meant to be included once per ISA file.

namespace dnngraph::cpu::gemm {
namespace {

// kPacked: A of each segment is one k-major panel at rows[s * MR] (element (i, k) at [k * MR + i]),
// a single stream; otherwise row i of segment s is rows[s * MR + i], unit stride.
template <class V, int MR, int NV, bool kPacked>
void microkernel(int nseg, int64_t seg_len, const float* const* rows, const float* b, float* c, int64_t ldc,
                 bool accumulate) {
  constexpr int W = V::kWidth;
  typename V::Reg acc[MR][NV];
#pragma GCC unroll 16
  for (int i = 0; i < MR; ++i) {  // the C tile is read at the end: start fetching it now
    __builtin_prefetch(c + i * ldc);
    __builtin_prefetch(c + i * ldc + NV * W - 1);
  }
#pragma GCC unroll 16
  for (int i = 0; i < MR; ++i)
#pragma GCC unroll 4
    for (int j = 0; j < NV; ++j) acc[i][j] = V::zero();
  for (int s = 0; s < nseg; ++s) {
    const float* r[MR];
#pragma GCC unroll 16
    for (int i = 0; i < MR; ++i) r[i] = kPacked ? rows[s * MR] + i : rows[s * MR + i];
    constexpr int64_t kStep = kPacked ? MR : 1;
#pragma GCC unroll 4
    for (int64_t k = 0; k < seg_len; ++k) {
      typename V::Reg bv[NV];
#pragma GCC unroll 4
      for (int j = 0; j < NV; ++j) bv[j] = V::load(b + j * W);
#pragma GCC unroll 16
      for (int i = 0; i < MR; ++i) {
        const typename V::Reg a = V::bcast(r[i] + k * kStep);
#pragma GCC unroll 4
        for (int j = 0; j < NV; ++j) acc[i][j] = V::fma(a, bv[j], acc[i][j]);
      }
      b += NV * W;
    }
  }
#pragma GCC unroll 16
  for (int i = 0; i < MR; ++i)
#pragma GCC unroll 4
    for (int j = 0; j < NV; ++j) {
      float* p = c + i * ldc + j * W;
      V::store(p, accumulate ? V::add(V::load(p), acc[i][j]) : acc[i][j]);
    }
}

// The kernels of V with MR rows and two vectors of columns (NR = 2 * kWidth): with the MR x 2
// accumulators, 2 B vectors and one broadcast, MR = 6 fills AVX2's 16 registers and MR = 12
// AVX-512's 32.
template <class V, int MR, int NV = 2>
constexpr KernelSet kKernelSet{V::kIsa, MR, NV * V::kWidth, microkernel<V, MR, NV, false>, microkernel<V, MR, NV, true>};

}  // namespace
}  // namespace dnngraph::cpu::gemm
