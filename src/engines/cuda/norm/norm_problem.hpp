// cuda_norm_rowwise's view of a partition: a lone layernorm, rmsnorm, layernorm_backward or
// rmsnorm_backward node, its rows (dim 0) and packed row length (every other dim), its tensors and
// which outputs the partition produces; the kernel configuration chosen for it; and the kernel
// source (kernels/norm_rowwise.cuh instantiated). Needs no device: the compile tests use it too.
#pragma once
#include <cstdint>
#include <string>

#include "fusion/partition.hpp"

namespace dnngraph::cuda::norm {

struct NormProblem {
  bool backward = false;
  bool layernorm = true;
  // Tensor ids; -1 when the node has none or the partition does not produce it.
  int x = -1, dy = -1, scale = -1, bias = -1, eps = -1;
  int mean_in = -1, inv_in = -1;    // backward
  int out = -1;                     // Y or DX
  int mean_out = -1, inv_out = -1;  // forward statistics
  int dscale = -1, dbias = -1;      // backward
  DataType x_t = DataType::FLOAT, dy_t = DataType::FLOAT, out_t = DataType::FLOAT;
  DataType scale_t = DataType::FLOAT, bias_t = DataType::FLOAT, dscale_t = DataType::FLOAT, dbias_t = DataType::FLOAT;
  int64_t rows = 0, cols = 0;
  int64_t x_pitch = 0, dy_pitch = 0, out_pitch = 0, mean_pitch = 0, inv_pitch = 0;  // dim-0 strides
  // Elements per 16-byte access of X (8 for HALF/BFLOAT16, 4 for FLOAT) when the row length and
  // every row pitch are multiples of it; 1 otherwise (scalar access).
  int vec_width = 1;
  bool column_sums() const { return dscale >= 0 || dbias >= 0; }
};

// Fills `out` from the partition; false with `why` (naming the node or tensor and the rule) when
// this engine does not run it.
bool describe(const Partition& p, NormProblem& out, std::string& why);

// One kernel's shape: a row group of `threads` threads (a warp, or the block), `rows` groups per
// block (> 1 only for warp groups), each lane holding `items` vectors of `vec` elements of the row
// (0: the row is streamed twice instead of kept in registers).
struct NormConfig {
  int threads = 32;
  int rows = 1;
  int items = 1;
  int vec = 1;
  bool prefetch = false;  // backward with the row in registers: the next row loads during this one
  int block() const { return threads * rows; }
  bool resident() const { return items > 0; }
};

// The most row elements a lane keeps in registers (ptxas reports no spills up to these, sm_80 and
// sm_90a): forward 32 with vector access (24 in blocks of 1024 threads, whose lanes get at most 64
// registers), 16 with scalar access; backward holds X, DY and two column sums per element: 16
// (8 in blocks of 1024).
int max_resident_floats(bool backward, int block_threads, int vec);

// X and DY both HALF or BFLOAT16 (a backward row loaded raw takes half the registers of floats).
bool sixteen_bit_rows(const NormProblem& pr);

// The configuration for threads_per_row (0: the fewest threads of 32..1024 that keep the row in
// registers, streaming when 1024 cannot), rows_per_block (0: 8 for warp groups; only warp groups
// take more than 1), vec (16-byte accesses when the problem allows them) and prefetch (kept for a
// backward whose vector rows stay in registers).
NormConfig choose_config(const NormProblem& pr, int64_t threads_per_row, int64_t rows_per_block, bool vec,
                         bool prefetch = true);
// The same rows with scalar access (for pointers that are not 16-byte aligned): vec 1, as many
// elements per lane, streamed (one row per block) when scalar items would not fit.
NormConfig scalar_config(const NormProblem& pr, const NormConfig& c);

// Blocks per launch of the main kernel; for the backward, also the workspace slices of column sums:
// blocks_per_sm per SM (0: enough for 32 KB of X and DY rows in flight), at most 1024 threads per SM.
int64_t grid_blocks(const NormProblem& pr, const NormConfig& c, int multiprocessors, int64_t blocks_per_sm = 0);
// Workspace bytes: the backward's [2][slices][cols] fp32 column sums; 0 otherwise. False on overflow.
bool workspace_bytes(const NormProblem& pr, int64_t slices, int64_t& out);

inline constexpr const char* kMainKernel = "dg_norm_rowwise";
inline constexpr const char* kScalarKernel = "dg_norm_rowwise_scalar";
inline constexpr const char* kFinalizeKernel = "dg_norm_partials";
inline constexpr int kFinalizeLanes = 32;  // slice lanes per finalize column (kernels/norm_backward.cuh)
inline constexpr int kFinalizeColumns = 32;  // columns per finalize block
inline constexpr int kFinalizeThreads = kFinalizeLanes * kFinalizeColumns;

// KernelConfig for `c` inside namespace `ns`.
std::string config_source(const NormProblem& pr, const NormConfig& c, const std::string& ns);
// The entry point `kernel` running the config of namespace `ns` with `block` threads.
std::string entry_source(const std::string& kernel, const std::string& ns, int block);
// The plan's module: the main kernel, the scalar one when main is vectorized, and the column sums'
// finalize kernel when the backward produces DSCALE or DBIAS.
std::string kernel_source(const NormProblem& pr, const NormConfig& main);

}  // namespace dnngraph::cuda::norm
