// A normalization's partition made ready for cpu_norm_rowwise: the anchor node's tensors, and its
// epilogue lowered with the norm as anchor (the engine produces the normalized values, the CPU
// epilogue executor applies the rest), in memory order together with X, scale, bias and Y.
#pragma once
#include <string>

#include "engines/cpu/pointwise/fused_program.hpp"

namespace dnngraph::cpu::norm {

enum class NormKind { LAYERNORM, RMSNORM, BATCHNORM };

// The tensors of the anchor node (ids in the IR; -1 when absent).
struct NormSpec {
  NormKind kind = NormKind::LAYERNORM;
  int node = -1;
  int x = -1, scale = -1, bias = -1, y = -1, eps = -1;
  // batchnorm: its MEAN and INV_VARIANCE inputs; layernorm: its mean and inv_variance outputs;
  // rmsnorm: inv_rms in `inv`.
  int mean = -1, inv = -1;
  bool per_row() const { return kind != NormKind::BATCHNORM; }
};

// Reads the partition's anchor; false with `why` when it is not a normalization this engine runs
// (its tensors of a type other than FLOAT, HALF or BFLOAT16, a wider compute type, ...).
bool read_norm(const Partition& p, NormSpec& spec, std::string& why);

// Lowers and compiles the epilogue over the canonical domain (X's layout leads; dim 0 stays the
// outermost, unmerged dim for the per-row norms). Per-row statistic tensors become dense fp32
// arrays of N values (stride 1 along dim 0) in the program's tensors: the engine's own.
bool build_norm_program(const Partition& p, const NormSpec& spec, FusedProgram& out, std::string& why);

}  // namespace dnngraph::cpu::norm
