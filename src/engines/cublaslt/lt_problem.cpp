#include "engines/cublaslt/lt_problem.hpp"

#include <algorithm>
#include <variant>

#include "core/dtype.hpp"

namespace dnngraph::cublaslt {
namespace {

using dtype::is_fp8;

std::string tensor_text(const ir::Tensor& t) { return "tensor '" + t.name + "'"; }

bool to_cuda_type(DataType t, CudaType& out) {
  switch (t) {
    case DataType::FLOAT: out = CudaType::R_32F; return true;
    case DataType::HALF: out = CudaType::R_16F; return true;
    case DataType::BFLOAT16: out = CudaType::R_16BF; return true;
    case DataType::FP8_E4M3: out = CudaType::R_8F_E4M3; return true;
    case DataType::FP8_E5M2: out = CudaType::R_8F_E5M2; return true;
    default: return false;
  }
}

// Describes the IR matrix X[..., R, C] as cuBLASLt stores it. `transposed`: the storage holds X^T
// (X row-major); otherwise X itself (X column-major).
bool storage_of(const ir::Tensor& t, uint64_t& rows, uint64_t& cols, int64_t& ld, bool& transposed) {
  const size_t r = t.dims.size();
  const int64_t R = t.dims[r - 2], C = t.dims[r - 1], sR = t.strides[r - 2], sC = t.strides[r - 1];
  // A column-major (m x n) matrix whose columns start `col_stride` apart, stored as X or X^T.
  auto column_major = [&](int64_t m, int64_t n, int64_t col_stride, bool is_transposed) {
    if (n > 1 && col_stride < m) return false;
    rows = static_cast<uint64_t>(m);
    cols = static_cast<uint64_t>(n);
    ld = std::max(col_stride, m);
    transposed = is_transposed;
    return true;
  };
  if (sC == 1 || C == 1) return column_major(C, R, sR, true);
  if (sR == 1 || R == 1) return column_major(R, C, sC, false);
  return false;
}

// The batch dims of `t` as one stride over the flattened batch of `batch_dims` (0 when broadcast).
bool batch_stride_of(const ir::Tensor& t, const std::vector<int64_t>& batch_dims, int64_t& stride) {
  std::vector<std::pair<int64_t, int64_t>> used;  // (size, stride) of the batch dims larger than 1
  for (size_t i = 0; i < batch_dims.size(); ++i) {
    if (batch_dims[i] == 1) continue;
    used.emplace_back(batch_dims[i], t.dims[i] == 1 ? 0 : t.strides[i]);
  }
  stride = used.empty() ? 0 : used.back().second;
  for (size_t i = 0; i + 1 < used.size(); ++i)
    if (used[i].second != used[i + 1].second * used[i + 1].first) return false;
  return true;
}

// How many nodes of the partition read tensor `id`.
int readers_inside(const Partition& p, int id) {
  int n = 0;
  for (size_t i = 0; i < p.nodes.size(); ++i)
    n += static_cast<int>(std::count(p.node(i).inputs.begin(), p.node(i).inputs.end(), id));
  return n;
}

struct Chain {
  int d = -1;       // the tensor cuBLASLt writes
  int stage = 0;    // 0 matmul, 1 alpha, 2 bias, 3 activation, 4 amax
  bool relu = false, gelu = false;
};

// One pointwise step of the epilogue; false with the reason.
bool pointwise_step(const Partition& p, const ir::Node& n, const PointwiseAttr& a, int64_t N, Chain& c,
                    LtProblem& out, std::string& why) {
  const int other = n.inputs.size() == 2 ? (n.inputs[0] == c.d ? n.inputs[1] : n.inputs[0]) : -1;
  switch (a.get_mode()) {
    case PointwiseMode::MUL: {
      const ir::Tensor& s = p.tensor(other);
      if (c.stage >= 1 || !s.is_pass_by_value || s.volume() != 1) {
        why = ir::describe(n) + ": cuBLASLt scales by alpha (one pass-by-value scalar) right after the matmul only";
        return false;
      }
      out.alpha = other;
      c.stage = 1;
      return true;
    }
    case PointwiseMode::ADD: {
      const ir::Tensor& b = p.tensor(other);
      const size_t r = b.dims.size();
      bool vector = r >= 2 && b.dims[r - 1] == N && (N == 1 || b.strides[r - 1] == 1);
      for (size_t i = 0; i + 1 < r; ++i) vector &= b.dims[i] == 1;
      if (c.stage >= 2 || !vector || b.is_pass_by_value || !to_cuda_type(b.dtype, out.bias_type)) {
        why = ir::describe(n) + ", " + tensor_text(b) + ": cuBLASLt adds a bias vector [1.., N] with unit stride, "
                                                     "before the activation";
        return false;
      }
      out.bias = other;
      c.stage = 2;
      return true;
    }
    case PointwiseMode::RELU_FWD:
      if (c.stage >= 3 || a.get_relu_lower_clip() != 0.0 || a.get_relu_upper_clip() ||
          a.get_relu_lower_clip_slope() != 0.0) {
        why = ir::describe(n) + ": cuBLASLt's RELU epilogue is the plain max(x, 0), once";
        return false;
      }
      c.relu = true;
      c.stage = 3;
      return true;
    case PointwiseMode::GELU_APPROX_TANH_FWD:
      if (c.stage >= 3) break;
      c.gelu = true;
      c.stage = 3;
      return true;
    case PointwiseMode::GELU_FWD:
      why = ir::describe(n) + ": cuBLASLt's GELU epilogue is the tanh approximation (GELU_APPROX_TANH_FWD), the graph "
                           "asks for the erf form (GELU_FWD)";
      return false;
    default: break;
  }
  why = ir::describe(n) + ": cuBLASLt's epilogues are alpha, bias, RELU or GELU (tanh) and AMAX, in that order";
  return false;
}

bool set_epilogue(const Chain& c, LtProblem& out) {
  const bool bias = out.bias >= 0;
  out.epilogue = c.relu ? (bias ? Epilogue::RELU_BIAS : Epilogue::RELU)
                 : c.gelu ? (bias ? Epilogue::GELU_BIAS : Epilogue::GELU)
                          : (bias ? Epilogue::BIAS : Epilogue::DEFAULT);
  return true;
}

bool operands(const Partition& p, const ir::Node& mm, LtProblem& out, std::string& why) {
  const ir::Tensor &A = p.tensor(mm.inputs[0]), &B = p.tensor(mm.inputs[1]), &D = p.tensor(out.d.id);
  const size_t r = D.dims.size();
  const std::vector<int64_t> batch(D.dims.begin(), D.dims.end() - 2);
  const int64_t M = D.dims[r - 2], N = D.dims[r - 1], K = A.dims[r - 1];
  out.m = N;
  out.n = M;
  out.k = K;
  out.batch = 1;
  for (int64_t b : batch) out.batch *= b;
  bool tb = false, ta = false, td = false;
  Matrix& a = out.a;  // the graph's B
  Matrix& b = out.b;  // the graph's A
  Matrix& d = out.d;
  a.id = mm.inputs[1];
  b.id = mm.inputs[0];
  if (!storage_of(B, a.rows, a.cols, a.ld, tb) || !storage_of(A, b.rows, b.cols, b.ld, ta) ||
      !storage_of(D, d.rows, d.cols, d.ld, td) || !td) {
    why = ir::describe(mm) + ": cuBLASLt needs A and B row- or column-major and the output row-major "
                          "(unit stride in its last dim)";
    return false;
  }
  a.op = tb ? Op::N : Op::T;  // op(A') = B^T
  b.op = ta ? Op::N : Op::T;  // op(B') = A^T
  if (!batch_stride_of(B, batch, a.batch_stride) || !batch_stride_of(A, batch, b.batch_stride) ||
      !batch_stride_of(D, batch, d.batch_stride) || (out.batch > 1 && d.batch_stride == 0)) {
    why = ir::describe(mm) + ": the batch dims do not flatten into one stride per operand (cuBLASLt's strided batch)";
    return false;
  }
  if (!to_cuda_type(A.dtype, b.type) || !to_cuda_type(B.dtype, a.type) || !to_cuda_type(D.dtype, d.type)) {
    why = ir::describe(mm) + ": cuBLASLt takes FLOAT, HALF, BFLOAT16 and FP8 matrices here; A is " +
          std::string(to_string(A.dtype)) + ", the output " + std::string(to_string(D.dtype));
    return false;
  }
  if (is_fp8(A.dtype) != is_fp8(B.dtype) || (!is_fp8(A.dtype) && A.dtype != B.dtype)) {
    why = ir::describe(mm) + ": A and B types do not form a cuBLASLt matmul";
    return false;
  }
  if (mm.compute_type != DataType::FLOAT) {
    why = ir::describe(mm) + ": compute type " + std::string(to_string(mm.compute_type)) +
          " (this engine runs cuBLASLt with FLOAT accumulation)";
    return false;
  }
  // FLOAT x FLOAT runs as TF32 only where the graph allows it (Graph::set_allow_tf32); else exact fp32.
  out.compute = A.dtype == DataType::FLOAT && p.graph->allow_tf32 ? ComputeType::C_32F_FAST_TF32 : ComputeType::C_32F;
  out.d_bytes = D.span_bytes();
  return true;
}

}  // namespace

bool match_partition(const Partition& p, LtProblem& out, std::string& why) {
  out = LtProblem{};
  if (p.nodes.empty() || !std::holds_alternative<MatmulAttr>(p.node(0).attr)) {
    why = "the partition is not built around a matmul";
    return false;
  }
  const ir::Node& mm = p.node(0);
  const int64_t N = p.tensor(mm.outputs[0]).dims.back();
  Chain c;
  c.d = mm.outputs[0];
  for (size_t i = 1; i < p.nodes.size(); ++i) {
    const ir::Node& n = p.node(i);
    const ir::Tensor& cur = p.tensor(c.d);
    if (std::find(n.inputs.begin(), n.inputs.end(), c.d) == n.inputs.end() || readers_inside(p, c.d) != 1) {
      why = ir::describe(n) + ": the epilogue must be one chain on the matmul's result";
      return false;
    }
    if (const auto* r = std::get_if<ReductionAttr>(&n.attr)) {
      if (r->get_mode() != ReductionMode::AMAX || i + 1 != p.nodes.size() ||
          p.tensor(n.outputs[0]).volume() != 1 || p.tensor(n.outputs[0]).dtype != DataType::FLOAT) {
        why = ir::describe(n) + ": cuBLASLt reduces only to the AMAX (one FLOAT) of its result, last";
        return false;
      }
      if (!is_fp8(p.tensor(mm.inputs[0]).dtype)) {
        why = ir::describe(n) + ": cuBLASLt computes AMAX (CUBLASLT_MATMUL_DESC_AMAX_D_POINTER) in FP8 matmuls only; "
                             "A is " + std::string(to_string(p.tensor(mm.inputs[0]).dtype));
        return false;
      }
      out.amax = n.outputs[0];
      c.stage = 4;
      break;
    }
    const auto* pw = std::get_if<PointwiseAttr>(&n.attr);
    if (!pw) {
      why = ir::describe(n) + ": not a cuBLASLt epilogue op";
      return false;
    }
    if (!p.is_internal(c.d) || cur.dtype != DataType::FLOAT) {
      why = tensor_text(cur) + ": an intermediate of the epilogue must stay inside (and in FLOAT): cuBLASLt "
                               "writes only its final result";
      return false;
    }
    if (!pointwise_step(p, n, *pw, N, c, out, why)) return false;
    c.d = n.outputs[0];
  }
  out.d.id = c.d;
  out.d_in_workspace = p.is_internal(c.d);
  if (out.d_in_workspace && out.amax < 0) {
    why = tensor_text(p.tensor(c.d)) + ": the result never leaves the partition";
    return false;
  }
  set_epilogue(c, out);
  return operands(p, mm, out, why);
}

}  // namespace dnngraph::cublaslt
