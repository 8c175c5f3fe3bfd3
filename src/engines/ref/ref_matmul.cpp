// Reference matmul: C[b, m, n] = sum_k A[b, m, k] * B[b, k, n] in double, any strides and dtypes,
// batch dims broadcast (an operand's batch dim of 1 is read at index 0).
#include "engines/ref/ops.hpp"

namespace dnngraph::ref {
namespace {

// Element offset of batch index `b` (row-major over C's batch dims) in `v`, broadcasting size-1 dims.
int64_t batch_offset(const View& v, const std::vector<int64_t>& batch_dims, int64_t b) {
  int64_t off = 0;
  for (size_t i = batch_dims.size(); i-- > 0;) {
    const int64_t idx = b % batch_dims[i];
    b /= batch_dims[i];
    if (v.dims[i] != 1) off += idx * v.strides[i];
  }
  return off;
}

}  // namespace

Status run(const MatmulAttr&, const NodeArgs& a) {
  const View& va = a.in[0];
  const View& vb = a.in[1];
  const View& vc = a.out[0];
  const size_t r = vc.dims.size();
  const std::vector<int64_t> batch_dims(vc.dims.begin(), vc.dims.end() - 2);
  int64_t batch = 1;
  for (int64_t d : batch_dims) batch *= d;
  const int64_t m_total = vc.dims[r - 2], n_total = vc.dims[r - 1], k_total = va.dims[r - 1];
  const int64_t a_m = va.strides[r - 2], a_k = va.strides[r - 1];
  const int64_t b_k = vb.strides[r - 2], b_n = vb.strides[r - 1];
  const int64_t c_m = vc.strides[r - 2], c_n = vc.strides[r - 1];
  a.pool.parallel_for(batch * m_total, [&](int64_t begin, int64_t end) {
    for (int64_t job = begin; job < end; ++job) {
      const int64_t bi = job / m_total, m = job % m_total;
      const int64_t a_row = batch_offset(va, batch_dims, bi) + m * a_m;
      const int64_t b_base = batch_offset(vb, batch_dims, bi);
      const int64_t c_row = batch_offset(vc, batch_dims, bi) + m * c_m;
      for (int64_t n = 0; n < n_total; ++n) {
        double acc = 0.0;
        for (int64_t k = 0; k < k_total; ++k)
          acc += dtype::load(va.data, va.dtype, a_row + k * a_k) *
                 dtype::load(vb.data, vb.dtype, b_base + k * b_k + n * b_n);
        dtype::store(vc.data, vc.dtype, c_row + n * c_n, acc);
      }
    }
  });
  return {};
}

}  // namespace dnngraph::ref
