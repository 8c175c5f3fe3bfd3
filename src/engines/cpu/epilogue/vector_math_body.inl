// The functions of vector_math.hpp over one lane type, written once: vector_math.cpp includes this
// file inside a namespace per lane type (libmvec's AVX-512 and AVX2 lanes, each in its ISA's
// target region, and libm's single floats), after defining that namespace's `Lanes`: Reg, kWidth,
// load, store, set1, add, mul, div, erfc, exp, tanh.
// No include guard: it is meant to be included once per lane type.

inline __attribute__((always_inline)) Lanes::Reg apply(Fn f, Lanes::Reg x, float beta) {
  using L = Lanes;
  const L::Reg one = L::set1(1.0f), half_x = L::mul(L::set1(0.5f), x);
  switch (f) {
    case Fn::GELU_ERF: return L::mul(half_x, L::erfc(L::mul(x, L::set1(-0.70710678118654752f))));
    case Fn::GELU_TANH: {
      const L::Reg cubic = L::mul(L::set1(0.044715f), L::mul(x, L::mul(x, x)));
      return L::mul(half_x, L::add(one, L::tanh(L::mul(L::set1(0.79788456080286536f), L::add(x, cubic)))));
    }
    case Fn::TANH: return L::tanh(x);
    case Fn::SIGMOID: return L::div(one, L::add(one, L::exp(L::mul(L::set1(-1.0f), x))));
    case Fn::SWISH: return L::mul(x, L::div(one, L::add(one, L::exp(L::mul(L::set1(-beta), x)))));
    case Fn::EXP: return L::exp(x);
  }
  return x;
}

// Whole lane groups in place, the last partial one through a padded copy, so every element takes
// the same formula whatever n.
void map_lanes(Fn f, int64_t n, const float* a, float* o, float beta) {
  int64_t i = 0;
  for (; i + Lanes::kWidth <= n; i += Lanes::kWidth) Lanes::store(o + i, apply(f, Lanes::load(a + i), beta));
  if (i < n) {
    float tail[Lanes::kWidth] = {};
    std::copy(a + i, a + n, tail);
    Lanes::store(tail, apply(f, Lanes::load(tail), beta));
    std::copy(tail, tail + (n - i), o + i);
  }
}
