// The SIMD bodies of the pooling kernels over a vector type V (pool_kernels_<isa>.cpp includes
// this inside its own target region). V gives Reg, kWidth, load, store, set1, add, mul, fma and
// max_nan(acc, x): x where x > acc or x is NaN, else acc. The includer includes <cmath>.
void max_row_simd(float* acc, const float* x, int64_t n) {
  int64_t i = 0;
  for (; i + V::kWidth <= n; i += V::kWidth) V::store(acc + i, V::max_nan(V::load(acc + i), V::load(x + i)));
  for (; i < n; ++i) acc[i] = (x[i] > acc[i] || std::isnan(x[i])) ? x[i] : acc[i];
}

void add_row_simd(float* acc, const float* x, int64_t n) {
  int64_t i = 0;
  for (; i + V::kWidth <= n; i += V::kWidth) V::store(acc + i, V::add(V::load(acc + i), V::load(x + i)));
  for (; i < n; ++i) acc[i] += x[i];
}

void axpy_row_simd(float* acc, float w, const float* x, int64_t n) {
  const typename V::Reg vw = V::set1(w);
  int64_t i = 0;
  for (; i + V::kWidth <= n; i += V::kWidth) V::store(acc + i, V::fma(vw, V::load(x + i), V::load(acc + i)));
  for (; i < n; ++i) acc[i] += w * x[i];
}

void mul_row_simd(float* acc, const float* f, int64_t n) {
  int64_t i = 0;
  for (; i + V::kWidth <= n; i += V::kWidth) V::store(acc + i, V::mul(V::load(acc + i), V::load(f + i)));
  for (; i < n; ++i) acc[i] *= f[i];
}
