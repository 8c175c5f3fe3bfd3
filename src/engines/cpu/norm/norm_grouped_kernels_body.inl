// The bodies of the grouped norm kernels, plain loops that the compiler vectorizes for the ISA
// of the region that includes this file (norm_grouped_kernels_<isa>.cpp, or the baseline in
// norm_grouped_kernels.cpp). Sums over one group run in eight double lanes, so that they need no
// reassociation to vectorize. No include guard: included once per ISA file.

namespace dnngraph::cpu::norm {
namespace {

constexpr int kLanes = 8;

// Element i's slot of an accumulator stepped by S (0: lane i % 8 of the local lanes).
template <int S>
inline double& slot(double* acc, double* lanes, int64_t i, int64_t k) {
  if constexpr (S == 1) return acc[i];
  else return lanes[k];
}

template <int S>
inline void fold(double* acc, const double* lanes) {
  if constexpr (S == 0) {
    double t = 0;
    for (int k = 0; k < kLanes; ++k) t += lanes[k];
    acc[0] += t;
  }
}

// Calls body(i, lane) for i in [0, n): full blocks of kLanes with a constant trip count (what
// vectorizes), then the tail in lane 0.
template <class Body>
inline void blocks(int64_t n, Body& body) {
  int64_t b = 0;
  for (; b + kLanes <= n; b += kLanes)
    for (int64_t k = 0; k < kLanes; ++k) body(b + k, k);
  for (; b < n; ++b) body(b, 0);
}

template <int G>
void moments_t(const float* x, int64_t n, const double* shift, double* s1, double* s2) {
  double l1[kLanes] = {}, l2[kLanes] = {};
  auto body = [&](int64_t i, int64_t k) {
    const double d = static_cast<double>(x[i]) - shift[G * i];
    slot<G>(s1, l1, i, k) += d;
    slot<G>(s2, l2, i, k) += d * d;
  };
  blocks(n, body);
  fold<G>(s1, l1);
  fold<G>(s2, l2);
}

void moments_any(const float* x, int64_t n, const double* shift, int gi, double* s1, double* s2) {
  if (gi) moments_t<1>(x, n, shift, s1, s2);
  else moments_t<0>(x, n, shift, s1, s2);
}

template <int G, int P>
void backward_sums_t(const float* x, const float* dy, int64_t n, const float* mean, const float* inv,
                     const float* scale, double* sg, double* sgx, double* ds, double* db) {
  double lg[kLanes] = {}, lgx[kLanes] = {}, ls[kLanes] = {}, lb[kLanes] = {};
  auto body = [&](int64_t i, int64_t k) {
    const float xhat = (x[i] - mean[G * i]) * inv[G * i], d = dy[i], g = d * scale[P * i];
    slot<G>(sg, lg, i, k) += g;
    slot<G>(sgx, lgx, i, k) += static_cast<double>(g * xhat);
    slot<P>(ds, ls, i, k) += static_cast<double>(d * xhat);
    slot<P>(db, lb, i, k) += d;
  };
  blocks(n, body);
  fold<G>(sg, lg);
  fold<G>(sgx, lgx);
  fold<P>(ds, ls);
  fold<P>(db, lb);
}

void backward_sums_any(const float* x, const float* dy, int64_t n, const float* mean, const float* inv, int gi,
                       const float* scale, int pi, double* sg, double* sgx, double* ds, double* db) {
  if (gi && pi) backward_sums_t<1, 1>(x, dy, n, mean, inv, scale, sg, sgx, ds, db);
  else if (gi) backward_sums_t<1, 0>(x, dy, n, mean, inv, scale, sg, sgx, ds, db);
  else if (pi) backward_sums_t<0, 1>(x, dy, n, mean, inv, scale, sg, sgx, ds, db);
  else backward_sums_t<0, 0>(x, dy, n, mean, inv, scale, sg, sgx, ds, db);
}

template <int G, int P>
void backward_dx_t(const float* x, const float* dy, int64_t n, const float* mean, const float* inv, const float* c1,
                   const float* c2, const float* scale, float* dx) {
  for (int64_t i = 0; i < n; ++i) {
    const float xhat = (x[i] - mean[G * i]) * inv[G * i];
    dx[i] = inv[G * i] * (dy[i] * scale[P * i] - c1[G * i] - xhat * c2[G * i]);
  }
}

void backward_dx_any(const float* x, const float* dy, int64_t n, const float* mean, const float* inv, const float* c1,
                     const float* c2, int gi, const float* scale, int pi, float* dx) {
  if (gi && pi) backward_dx_t<1, 1>(x, dy, n, mean, inv, c1, c2, scale, dx);
  else if (gi) backward_dx_t<1, 0>(x, dy, n, mean, inv, c1, c2, scale, dx);
  else if (pi) backward_dx_t<0, 1>(x, dy, n, mean, inv, c1, c2, scale, dx);
  else backward_dx_t<0, 0>(x, dy, n, mean, inv, c1, c2, scale, dx);
}

template <Isa I>
constexpr GroupedKernels kGroupedKernels{I, moments_any, backward_sums_any, backward_dx_any};

}  // namespace
}  // namespace dnngraph::cpu::norm
