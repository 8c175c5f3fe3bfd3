// The dot-product tile body (conv_dot_kernels.hpp), written once over a vector type V of simd/
// and included inside each ISA's target region by conv_dot_kernel_<isa>.cpp, which also defines
// lane_sums<N>(const V::Reg* acc, int n, float* out) (out[i] = the sum of acc[i]'s lanes, i < n)
// before including it.
// No include guard: it is meant to be included once per ISA file.

namespace dnngraph::cpu::conv_dot {
namespace {

template <class V, int NP, int NO>
void dot_tile(const DotArgs& a) {
  constexpr int W = V::kWidth;
  typename V::Reg acc[NP][NO];
#pragma GCC unroll 8
  for (int p = 0; p < NP; ++p)
#pragma GCC unroll 8
    for (int o = 0; o < NO; ++o) acc[p][o] = a.first ? V::zero() : V::load(a.acc + (p * NO + o) * W);
  for (int64_t t = a.t0; t < a.t1; ++t) {
    const float* xp[NP];
    const float* wp[NO];
    bool inside = false;
#pragma GCC unroll 8
    for (int p = 0; p < NP; ++p) {
      xp[p] = a.x[p * a.ntaps + t] + a.c0;
      inside |= a.x[p * a.ntaps + t] != a.zeros;
    }
    if (!inside) continue;  // a padding row or column that the whole tile reads
#pragma GCC unroll 8
    for (int o = 0; o < NO; ++o) wp[o] = a.w[o] + a.wtap[t] + a.c0;
#pragma GCC unroll 2
    for (int64_t c = 0; c < a.cn; c += W) {
      typename V::Reg wv[NO];
#pragma GCC unroll 8
      for (int o = 0; o < NO; ++o) wv[o] = V::load(wp[o] + c);
#pragma GCC unroll 8
      for (int p = 0; p < NP; ++p) {
        const typename V::Reg xv = V::load(xp[p] + c);
#pragma GCC unroll 8
        for (int o = 0; o < NO; ++o) acc[p][o] = V::fma(xv, wv[o], acc[p][o]);
      }
    }
  }
  if (!a.last) {
#pragma GCC unroll 8
    for (int p = 0; p < NP; ++p)
#pragma GCC unroll 8
      for (int o = 0; o < NO; ++o) V::store(a.acc + (p * NO + o) * W, acc[p][o]);
    return;
  }
  for (int p = 0; p < a.np; ++p) lane_sums<NO>(acc[p], a.no, a.out[p]);
}

}  // namespace
}  // namespace dnngraph::cpu::conv_dot
