// The SIMD bodies of the pooling kernels over a vector type V of simd/ (pool_kernels_<isa>.cpp
// includes this inside its ISA's target region). V gives Reg, kIsa, kWidth, load, store, set1,
// mul, fma, max_nan(acc, x) (x where x > acc or x is NaN, else acc) and split(a, b, even, odd)
// (the even and odd lanes of the 2 * kWidth values a, b). No include guard: it is meant to be
// included once per ISA file, after <cmath>.

namespace dnngraph::cpu::pool {
namespace {

// Two vectors of columns at a time through every row, then one, then the scalar tail.
template <class V>
void max_rows_simd(float* acc, const float* const* rows, int count, int64_t n) {
  constexpr int64_t W = V::kWidth;
  int64_t i = 0;
  for (; i + 2 * W <= n; i += 2 * W) {
    typename V::Reg a0 = V::load(acc + i), a1 = V::load(acc + i + W);
    for (int r = 0; r < count; ++r) {
      a0 = V::max_nan(a0, V::load(rows[r] + i));
      a1 = V::max_nan(a1, V::load(rows[r] + i + W));
    }
    V::store(acc + i, a0);
    V::store(acc + i + W, a1);
  }
  for (; i + W <= n; i += W) {
    typename V::Reg a = V::load(acc + i);
    for (int r = 0; r < count; ++r) a = V::max_nan(a, V::load(rows[r] + i));
    V::store(acc + i, a);
  }
  for (; i < n; ++i)
    for (int r = 0; r < count; ++r) acc[i] = (rows[r][i] > acc[i] || std::isnan(rows[r][i])) ? rows[r][i] : acc[i];
}

template <class V>
void sum_rows_simd(float* acc, const float* const* rows, const float* w, int count, int64_t n) {
  constexpr int64_t W = V::kWidth;
  int64_t i = 0;
  for (; i + 2 * W <= n; i += 2 * W) {
    typename V::Reg a0 = V::load(acc + i), a1 = V::load(acc + i + W);
    for (int r = 0; r < count; ++r) {
      const typename V::Reg wr = V::set1(w ? w[r] : 1.0f);
      a0 = V::fma(wr, V::load(rows[r] + i), a0);
      a1 = V::fma(wr, V::load(rows[r] + i + W), a1);
    }
    V::store(acc + i, a0);
    V::store(acc + i + W, a1);
  }
  for (; i + W <= n; i += W) {
    typename V::Reg a = V::load(acc + i);
    for (int r = 0; r < count; ++r) a = V::fma(V::set1(w ? w[r] : 1.0f), V::load(rows[r] + i), a);
    V::store(acc + i, a);
  }
  for (; i < n; ++i)
    for (int r = 0; r < count; ++r) acc[i] += (w ? w[r] : 1.0f) * rows[r][i];
}

template <class V>
void mul_row_simd(float* acc, const float* f, int64_t n) {
  int64_t i = 0;
  for (; i + V::kWidth <= n; i += V::kWidth) V::store(acc + i, V::mul(V::load(acc + i), V::load(f + i)));
  for (; i < n; ++i) acc[i] *= f[i];
}

template <class V>
void deinterleave2_simd(const float* x, int64_t n, float* even, float* odd) {
  int64_t j = 0;
  for (; j + V::kWidth <= n; j += V::kWidth) {
    typename V::Reg e, o;
    V::split(V::load(x + 2 * j), V::load(x + 2 * j + V::kWidth), e, o);
    V::store(even + j, e);
    V::store(odd + j, o);
  }
  for (; j < n; ++j) {
    even[j] = x[2 * j];
    odd[j] = x[2 * j + 1];
  }
}

template <class V>
constexpr PoolKernels kSimdPoolKernels{V::kIsa, max_rows_simd<V>, sum_rows_simd<V>, mul_row_simd<V>,
                                       deinterleave2_simd<V>};

}  // namespace
}  // namespace dnngraph::cpu::pool
