// What a partition asks of cuBLASLt: D = epilogue(alpha * A x B) in cuBLASLt's column-major terms.
//
// Recognized chain (each step optional, in this order):
//   matmul -> MUL by a pass-by-value scalar (alpha) -> ADD of a bias broadcast over M (a [1.., N]
//   vector) -> RELU_FWD or GELU_APPROX_TANH_FWD -> AMAX reduction to one value (FP8 inputs only:
//   cuBLASLt computes AMAX in its FP8 kernels)
// Row-major C = A x B is computed as column-major C^T = B^T x A^T, so cuBLASLt's A is the graph's
// B, its B the graph's A, and m = N, n = M. No GPU or library call is needed to match a partition.
#pragma once
#include <string>

#include "engines/cublaslt/cublaslt_api.hpp"
#include "fusion/partition.hpp"

namespace dnngraph::cublaslt {

// One operand as cuBLASLt stores it (column-major), and the op applied to it.
struct Matrix {
  int id = -1;  // IR tensor id
  CudaType type = CudaType::R_32F;
  uint64_t rows = 0, cols = 0;
  int64_t ld = 0;
  Op op = Op::N;
  int64_t batch_stride = 0;  // 0: broadcast over the batch
};

struct LtProblem {
  Matrix a, b, d;  // cuBLASLt's A (the graph's B), B (the graph's A), D (the graph's output, transposed)
  int64_t m = 0, n = 0, k = 0, batch = 1;
  ComputeType compute = ComputeType::C_32F;
  CudaType scale = CudaType::R_32F;
  Epilogue epilogue = Epilogue::DEFAULT;
  int alpha = -1;  // pass-by-value scalar tensor id
  int bias = -1;   // bias vector tensor id
  CudaType bias_type = CudaType::R_32F;
  int amax = -1;   // AMAX output tensor id (one FLOAT)
  bool d_in_workspace = false;  // D is internal: only its AMAX leaves the partition
  int64_t d_bytes = 0;
};

// Matches the partition against the chain above; false with the reason (node, tensor, rule).
bool match_partition(const Partition& p, LtProblem& out, std::string& why);

}  // namespace dnngraph::cublaslt
