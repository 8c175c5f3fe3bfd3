// The microkernel body, written once over a vector type V and instantiated per ISA: each
// kernel_<isa>.cpp includes this file inside its own target region (so every instantiation is
// compiled for exactly that ISA) after defining V with:
//   Reg, kWidth, zero(), load(p), store(p, r), bcast(p), fma(a, b, acc) = a * b + acc.
// No include guard: it is meant to be included once per ISA file.

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
