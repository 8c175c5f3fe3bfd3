// A matmul partition as the GEMM kernels see it: operand types, sizes, majors and strides, the
// broadcast batch, and the epilogue axes. One description serves the mma.sync and wgmma engines.
#pragma once
#include <string>
#include <vector>

#include "engines/cuda/common/epilogue_layout.hpp"
#include "engines/cuda/common/tensor_core_types.hpp"
#include "engines/cuda/gemm/gemm_params.hpp"

namespace dnngraph::cuda::gemm {

struct MatmulProblem {
  DataType dtype = DataType::BFLOAT16;  // of A and B (FLOAT: multiplied as TF32)
  DataType b_dtype = DataType::BFLOAT16;  // B's: dtype's, or the other FP8 format
  int a = -1, b = -1;                   // IR tensor ids
  int64_t M = 0, N = 0, K = 0;
  int64_t a_sm = 0, a_sk = 0, b_sk = 0, b_sn = 0;  // element strides
  std::vector<int64_t> batch, a_bs, b_bs;          // output batch dims; operand strides (0: broadcast)
  bool a_k_major = true, b_k_major = true;         // which dim is contiguous in memory
  bool a_vec = true, b_vec = true;                 // 16-byte chunks along the contiguous dim
  EpilogueAxes axes;
  // FLOAT inputs the graph does not let round to TF32 (described only with TensorCoreInputs::exact_fp32):
  // only cuda_gemm_wgmma_tma's 3xTF32 (tf32x3=1) multiplies them.
  bool exact_fp32 = false;
  int64_t batch_count() const;
};

// Checks the partition (CUDA device of sm_80+, a matmul anchor, BFLOAT16 or HALF inputs or FLOAT
// ones the graph allows to round to TF32, fp32 compute) and describes it; false with `why`.
// `inputs`: whether FLOAT inputs the graph keeps exact (the wgmma engine's 3xTF32) and FP8 pairs
// (its k32 wgmma) are described too.
bool describe_matmul(const Partition& p, const Target& t, MatmulProblem& out, std::string& why,
                     TensorCoreInputs inputs = {});
// The graph-only part (no device checks): what the NVRTC compile tests use without a GPU.
bool describe_matmul_graph(const Partition& p, MatmulProblem& out, std::string& why,
                           TensorCoreInputs inputs = {});

// Kernel arguments for the plan's pointers (tiles counted by the caller).
GemmParams gemm_params(const MatmulProblem& mp, const void* a, const void* b);

}  // namespace dnngraph::cuda::gemm
