#include "engines/cuda/gemm/matmul_problem.hpp"

#include <cstring>

#include "core/checked.hpp"
#include "engines/cuda/common/tensor_core_types.hpp"

namespace dnngraph::cuda::gemm {
namespace {

// Which dim of an operand is contiguous, and whether 16-byte chunks (`per_chunk` elements) work
// along it: K-major when k is contiguous (or neither dim is: then elements are read one by one),
// else MN-major.
void pick_major(int64_t k_stride, int64_t mn_stride, int64_t mn_size, int64_t k_size, const std::vector<int64_t>& bs,
                int64_t per_chunk, bool& k_major, bool& vec) {
  k_major = k_stride == 1 || mn_stride != 1;
  const int64_t contiguous = k_major ? k_stride : mn_stride;
  const int64_t other = k_major ? mn_stride : k_stride;
  const int64_t other_size = k_major ? mn_size : k_size;
  vec = contiguous == 1 && (other_size == 1 || other % per_chunk == 0);
  for (int64_t s : bs) vec = vec && s % per_chunk == 0;
}

// M, N and K are TMA coordinates and k tile counts (32-bit), and the output tiles at the smallest
// tile (64 x 64) times the batch must fit the kernels' 32-bit tile index, so that every knob's
// grid does; false with `why`.
bool check_kernel_ints(const ir::Node& n, const ir::Tensor& A, const ir::Tensor& C, const MatmulProblem& mp,
                       std::string& why) {
  int64_t tiles = 0;
  if (!checked::mul((mp.M + 63) / 64, (mp.N + 63) / 64, tiles) || !checked::mul(tiles, mp.batch_count(), tiles))
    tiles = INT64_MAX;
  return fits_kernel_int(n, C, "M", mp.M, why) && fits_kernel_int(n, C, "N", mp.N, why) &&
         fits_kernel_int(n, A, "K", mp.K, why) &&
         fits_kernel_int(n, C, "the count of 64 x 64 output tiles over the batch", tiles, why);
}

// The matmul n = A x B -> C as the kernels see it.
bool describe_operands(const ir::Node& n, const ir::Tensor& A, const ir::Tensor& B, const ir::Tensor& C,
                       MatmulProblem& out, std::string& why) {
  const int r = A.rank();
  if (r - 2 > kMaxBatchDims) {
    why = "node '" + n.name + "': " + std::to_string(r - 2) + " batch dims; at most " + std::to_string(kMaxBatchDims);
    return false;
  }
  out.dtype = A.dtype;
  out.b_dtype = B.dtype;
  out.a = A.id;
  out.b = B.id;
  out.M = C.dims[static_cast<size_t>(r - 2)];
  out.N = C.dims[static_cast<size_t>(r - 1)];
  out.K = A.dims[static_cast<size_t>(r - 1)];
  out.a_sm = A.strides[static_cast<size_t>(r - 2)];
  out.a_sk = A.strides[static_cast<size_t>(r - 1)];
  out.b_sk = B.strides[static_cast<size_t>(r - 2)];
  out.b_sn = B.strides[static_cast<size_t>(r - 1)];
  for (int d = 0; d < r - 2; ++d) {
    const size_t i = static_cast<size_t>(d);
    out.batch.push_back(C.dims[i]);
    out.a_bs.push_back(A.dims[i] == 1 ? 0 : A.strides[i]);
    out.b_bs.push_back(B.dims[i] == 1 ? 0 : B.strides[i]);
    out.axes.batch.push_back(d);
  }
  for (int64_t s : {out.a_sm, out.a_sk, out.b_sk, out.b_sn})
    if (s < 0) {
      why = "node '" + n.name + "': negative operand strides are not supported";
      return false;
    }
  out.axes.m = {r - 2};
  out.axes.n = {r - 1};
  const int64_t per_chunk = 16 / size_of(out.dtype);
  pick_major(out.a_sk, out.a_sm, out.M, out.K, out.a_bs, per_chunk, out.a_k_major, out.a_vec);
  pick_major(out.b_sk, out.b_sn, out.N, out.K, out.b_bs, per_chunk, out.b_k_major, out.b_vec);
  if (out.M * out.N == 0 || out.K == 0) {
    why = "node '" + n.name + "': empty matmul";
    return false;
  }
  return check_kernel_ints(n, A, C, out, why);
}

}  // namespace

int64_t MatmulProblem::batch_count() const {
  int64_t v = 1;
  for (int64_t d : batch) v *= d;
  return v;
}

bool describe_matmul(const Partition& p, const Target& t, MatmulProblem& out, std::string& why,
                     TensorCoreInputs inputs) {
  if (!t.device().is_cuda() || !t.handle->cuda) {
    why = "runs on CUDA handles; this one is " + t.device().to_string();
    return false;
  }
  if (t.info().sm_version < 80) {
    why = "needs sm_80 or later (mma.sync bf16/tf32); the device is sm_" + std::to_string(t.info().sm_version);
    return false;
  }
  return describe_matmul_graph(p, out, why, inputs);
}

bool describe_matmul_graph(const Partition& p, MatmulProblem& out, std::string& why, TensorCoreInputs inputs) {
  out = MatmulProblem{};
  TensorCoreOperands op;
  if (!tensor_core_anchor<MatmulAttr>(p, "matmul", op, why, inputs) ||
      !describe_operands(*op.node, *op.in0, *op.in1, *op.out, out, why))
    return false;
  out.exact_fp32 = out.dtype == DataType::FLOAT && !p.graph->allow_tf32;
  return true;
}

GemmParams gemm_params(const MatmulProblem& mp, const void* a, const void* b) {
  GemmParams g;
  std::memset(&g, 0, sizeof(g));
  g.M = mp.M;
  g.N = mp.N;
  g.K = mp.K;
  g.a_stride_m = mp.a_sm;
  g.a_stride_k = mp.a_sk;
  g.b_stride_k = mp.b_sk;
  g.b_stride_n = mp.b_sn;
  for (int d = 0; d < kMaxBatchDims; ++d) g.batch_size[d] = 1;
  for (size_t d = 0; d < mp.batch.size(); ++d) {
    g.batch_size[d] = mp.batch[d];
    g.a_batch_stride[d] = mp.a_bs[d];
    g.b_batch_stride[d] = mp.b_bs[d];
  }
  g.batch_dims = static_cast<int32_t>(mp.batch.size());
  g.batch_count = mp.batch_count();
  g.a = a;
  g.b = b;
  g.a_batch_unit = g.b_batch_unit = 1;
  g.epi_vec = 1;
  g.splits = 1;
  return g;
}

}  // namespace dnngraph::cuda::gemm
