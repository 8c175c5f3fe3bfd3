// The SIMD bodies of the norm kernels over a vector type V of simd/ (norm_kernels_<isa>.cpp
// includes this inside its ISA's target region). V gives fp32 registers (Reg, kIsa, kWidth, load,
// store, set1, sub, mul, fma) and double registers (DReg, widen, dzero, dset1, dadd, dsub, dfma,
// dsum). No include guard: it is meant to be included once per ISA file.

namespace dnngraph::cpu::norm {
namespace {

template <class V>
void moments_simd(const float* x, int64_t n, double shift, double& s1, double& s2) {
  const typename V::DReg sh = V::dset1(shift);
  typename V::DReg a[4], b[4];
  for (int k = 0; k < 4; ++k) a[k] = b[k] = V::dzero();
  int64_t i = 0;
  for (; i + 2 * V::kWidth <= n; i += 2 * V::kWidth) {
    typename V::DReg d[4];
    V::widen(V::load(x + i), d[0], d[1]);
    V::widen(V::load(x + i + V::kWidth), d[2], d[3]);
    for (int k = 0; k < 4; ++k) {
      d[k] = V::dsub(d[k], sh);
      a[k] = V::dadd(a[k], d[k]);
      b[k] = V::dfma(d[k], d[k], b[k]);
    }
  }
  double t1 = V::dsum(V::dadd(V::dadd(a[0], a[1]), V::dadd(a[2], a[3])));
  double t2 = V::dsum(V::dadd(V::dadd(b[0], b[1]), V::dadd(b[2], b[3])));
  for (; i < n; ++i) {
    const double d = static_cast<double>(x[i]) - shift;
    t1 += d;
    t2 += d * d;
  }
  s1 += t1;
  s2 += t2;
}

template <class V>
void affine_simd(const float* x, int64_t n, float m, float m_lo, float a, const float* s, const float* b, float b0,
                 float* out) {
  const typename V::Reg vm = V::set1(m), vlo = V::set1(m_lo), va = V::set1(a), vb0 = V::set1(b0);
  int64_t i = 0;
  if (s) {
    for (; i + V::kWidth <= n; i += V::kWidth) {
      const typename V::Reg t = V::mul(V::sub(V::sub(V::load(x + i), vm), vlo), va);
      V::store(out + i, V::fma(t, V::load(s + i), b ? V::load(b + i) : vb0));
    }
  } else {
    for (; i + V::kWidth <= n; i += V::kWidth)
      V::store(out + i, V::fma(V::sub(V::sub(V::load(x + i), vm), vlo), va, b ? V::load(b + i) : vb0));
  }
  for (; i < n; ++i) out[i] = ((x[i] - m) - m_lo) * a * (s ? s[i] : 1.0f) + (b ? b[i] : b0);
}

template <class V>
void channel_affine_simd(const float* x, int64_t n, const float* m, const float* a, const float* b, float* out) {
  int64_t i = 0;
  for (; i + V::kWidth <= n; i += V::kWidth)
    V::store(out + i, V::fma(V::sub(V::load(x + i), V::load(m + i)), V::load(a + i), V::load(b + i)));
  for (; i < n; ++i) out[i] = (x[i] - m[i]) * a[i] + b[i];
}

template <class V>
constexpr NormKernels kSimdNormKernels{V::kIsa, moments_simd<V>, affine_simd<V>, channel_affine_simd<V>};

}  // namespace
}  // namespace dnngraph::cpu::norm
