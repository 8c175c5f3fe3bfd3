// The common epilogue, as one fused loop: the anchor value flows through a chain of fp32 ops
// (add / subtract / multiply by a per-element or broadcast operand, ReLU with its lower and upper
// clips) into one fp32 store, e.g. conv + bias + ReLU, or + ReLU6 (ONNX's Clip(0, 6)). The general executor runs every op over a chunk buffer and pays its
// bookkeeping per op and per chunk, which costs more than the op on the short strips of a conv
// (one pixel's channels); this loop keeps the value in a register from load to store.
#pragma once
#include <cstdint>
#include <vector>

#include "fusion/expr.hpp"

namespace dnngraph::cpu {

struct ChainStep {
  enum Kind : uint8_t { ADD, MUL, SUB, SUB_FROM, RELU } kind;  // SUB: v - x; SUB_FROM: x - v
  int operand = -1;  // index into the chain's operands (a LOAD or LOAD_SCALAR instruction), -1 for RELU
  // RELU: v <= lo ? lo : v, then v > hi ? hi : v (ordered compares: NaN stays NaN, as in the
  // general executor's relu and on ref); hi is +inf without an upper clip.
  float lo = 0.0f, hi = __builtin_huge_valf();
};

struct Chain {
  static constexpr size_t kMaxOperands = 16;  // build() refuses a program that loads more
  std::vector<ChainStep> steps;
  std::vector<int> operand_instr;  // per chain operand: the instruction that loads it
  std::vector<DataType> operand_type;  // per chain operand: FLOAT, BFLOAT16 or HALF
  int store_instr = -1;            // the one STORE
  DataType store_type = DataType::FLOAT;  // FLOAT, BFLOAT16 or HALF: rounded once, at the store

  // Fills the chain when `prog` has that form with fp32 rounding everywhere; `round` gives each
  // instruction's rounding type and `tensor_type` each tensor's type (by id). A chain that stores
  // bf16 or fp16 may have no steps (a conversion). False otherwise.
  bool build(const expr::Program& prog, const std::vector<DataType>& round, const std::vector<DataType>& tensor_type);
  // Whether every operand and the store are fp32: what the in-place and in-register forms take.
  bool fp32_only() const;
};

// out[i] = chain(anchor[i]) for i < n. Operand j is ptrs[j][i] when ptrs[j] is set, else scalars[j].
void run_chain(const Chain& c, int64_t n, const float* anchor, const float* const* ptrs, const float* scalars,
               float* out);

// The same chain in place over a rows x cols block (row stride ld), one step at a time over the
// whole block: for a GEMM task's block of few columns and for blocks narrower than a vector (a
// grouped conv's few channels per group), where a run_chain call per row costs more than its work. Operand j is column[j][k] when set (one
// vector for every row), else same[j][i * ld + k] when set, else scalars[j].
void run_chain_block(const Chain& c, int64_t rows, int64_t cols, float* data, int64_t ld, const float* const* column,
                     const float* const* same, const float* scalars);
// A chain with its operands resolved at one block's first element, for the GEMM microkernel to
// apply to each finished tile of the block in registers before its store (KernelSet::kernel_chain):
// a bias, a residual, ReLU or clip, with no second pass over the output. The tile at (row0, col0)
// of the block reads column + col0 and same + row0 * ld + col0.
struct TileChain {
  static constexpr size_t kMaxOperands = Chain::kMaxOperands;
  const Chain* chain = nullptr;
  // Per chain operand: one value per column (a bias) from the block's first column; or laid out as
  // the output (a residual) from the block's first element, row stride ld; else the scalar.
  const float* column[kMaxOperands] = {};
  const float* same[kMaxOperands] = {};
  float scalar[kMaxOperands] = {};
  int64_t ld = 0;  // the output's row stride

  // The chain on the rows x cols tile at (row0, col0) of the block, at c (row stride ld),
  // vectorized as run_chain_block: for the edge tiles a kernel computes aside.
  void apply(int64_t rows, int64_t cols, float* c, int64_t row0, int64_t col0) const;
};

// Whether run_chain_block beats a run_chain call per row on rows of `cols` floats: below a vector,
// and with AVX-512 up to 64 (a GEMM task of one or two B panels), whose rows are a few vectors.
bool chain_block_preferred(int64_t cols);

}  // namespace dnngraph::cpu
