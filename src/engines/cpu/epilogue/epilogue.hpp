// The CPU executor of the fused expression list (src/fusion/expr.hpp): it applies a Program to
// runs of anchor results that are hot in cache (a GEMM row strip, a conv output row), in fp32,
// loading broadcast operands, storing to any strides and data types, and accumulating fused
// reductions per thread. With no anchor it is a standalone pointwise executor (anchor = null).
#pragma once
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "dnngraph/status.hpp"
#include "engines/cpu/epilogue/epilogue_chain.hpp"
#include "fusion/expr.hpp"

namespace dnngraph::cpu {

// A Program compiled against the IR: tensor layouts resolved, ready to run many times.
class Epilogue {
 public:
  // False with `why` when the program uses something this executor cannot run.
  bool init(const expr::Program& prog, const ir::Graph& g, std::string& why);
  // The same with tensors looked up by id: layouts rewritten outside the IR (fused_program.hpp).
  bool init(const expr::Program& prog, const std::function<const ir::Tensor&(int)>& tensor, std::string& why);

  const std::vector<int64_t>& domain() const { return domain_; }
  int rank() const { return static_cast<int>(domain_.size()); }
  int num_regs() const { return prog_.num_regs; }
  // The anchor result is only stored, once, to an fp32 tensor (no other op): a producer may write
  // it there itself. Returns that tensor's id, or -1.
  int plain_fp32_store() const { return plain_store_; }
  bool has_reductions() const { return !prog_.reductions.empty(); }
  const expr::Program& program() const { return prog_; }

  struct Operand {  // a tensor the program reads or writes
    int id = -1;
    DataType dtype = DataType::FLOAT;
    std::vector<int64_t> strides;  // per domain dim, 0 where the tensor has size 1 (broadcast)
    int64_t volume = 1;            // reductions: the reduced tensor's element count
    std::vector<int64_t> dense;    // reductions: row-major strides over its dims, 0 on reduced dims
    ReductionMode reduce = ReductionMode::NOT_SET;
  };
  const std::vector<Operand>& operands() const { return operands_; }
  int operand_of(int instr) const { return operand_index_[static_cast<size_t>(instr)]; }
  // The type an APPLY's result is rounded to before use: the virtual tensor's (as lowered) or,
  // for a stored tensor, its own type, so later ops see the value that ref would read back.
  DataType round_of(int instr) const { return round_[static_cast<size_t>(instr)]; }
  // The program as one fused fp32 loop (epilogue_chain.hpp), when it has that form; else null.
  const Chain* chain() const { return has_chain_ ? &chain_ : nullptr; }
  // Whether a producer may write the chain's output itself and finish each tile with
  // EpilogueRun::chain_rows: every operand is broadcast, a unit-stride vector along domain dim
  // `n_axis` only (a bias), or laid out as the output (a residual). Records those kinds.
  bool prepare_in_place(int n_axis);
  bool in_place() const { return in_place_; }
  // Whether the chain's operands have those kinds (set by prepare_in_place), fp32 or not: a
  // producer may then hand it blocks of rows (EpilogueRun::chain_rows_into).
  bool rows_form() const { return rows_form_; }
  // The chain's output tensor and its strides per domain dim (0 on size-1 dims).
  int chain_store() const { return chain_.store_instr < 0 ? -1 : prog_.code[static_cast<size_t>(chain_.store_instr)].tensor; }
  const std::vector<int64_t>& chain_store_strides() const;
  enum class TileOperand : uint8_t { BROADCAST, COLUMN, SAME_AS_OUTPUT };
  TileOperand tile_operand(size_t j) const { return tile_kind_[j]; }

 private:
  void elide_rounding_before_stores(const std::function<const ir::Tensor&(int)>& tensor);

  expr::Program prog_;
  std::vector<int64_t> domain_;
  std::vector<Operand> operands_;
  std::vector<int> operand_index_;  // per instruction, -1 if it touches no tensor
  std::vector<DataType> round_;     // per instruction
  int plain_store_ = -1;
  Chain chain_;
  bool has_chain_ = false;
  bool in_place_ = false;
  bool rows_form_ = false;
  std::vector<TileOperand> tile_kind_;  // per chain operand
};

// One execution of an Epilogue: bound pointers, per-thread registers and reduction partials.
class EpilogueRun {
 public:
  static constexpr int64_t kChunk = 256;  // elements per register; a strip is cut into chunks

  // `ptrs` by IR tensor id (as ExecArgs); `slots`: how many threads may call strip() at once.
  EpilogueRun(const Epilogue& e, const std::vector<void*>& ptrs, int slots);

  // Runs the program on `len` domain elements from index `coord`, stepping `step` along `axis`.
  // With step 1 a strip may run past the end of `axis` into the next index of the outer dims
  // (row-major order). `anchor` holds the len anchor values, contiguous (null when no anchor).
  // `slot` (< slots) identifies the calling thread: one slot is never used by two at once.
  void strip(int slot, const int64_t* coord, int axis, int64_t len, int64_t step, const float* anchor);

  // In-place chains (Epilogue::prepare_in_place): `rows` rows of `cols` values at c (row stride
  // ldc), the chain's output at element offset out_off of its tensor (SAME_AS_OUTPUT operands sit
  // at the same offsets) and at index n_index along the vectors' dim: applied in place.
  void chain_rows(float* c, int64_t ldc, int64_t rows, int64_t cols, int64_t out_off, int64_t n_index) const;
  // The same chain for a block at out_off / n_index (as chain_rows' first element), for a GEMM
  // kernel to apply to its tiles in registers.
  void tile_chain(int64_t out_off, int64_t n_index, int64_t ld, TileChain& tc) const;
  // Epilogue::rows_form chains, any types: `rows` rows of `cols` fp32 values at c (row stride
  // ldc) through the chain into its output at element offset out_off + i * out_ld for row i
  // (SAME_AS_OUTPUT operands at the same offsets), at index n_index along the vectors' dim: one
  // call for a producer's block instead of a strip per row.
  void chain_rows_into(int slot, const float* c, int64_t ldc, int64_t rows, int64_t cols, int64_t out_off,
                       int64_t out_ld, int64_t n_index);
  // False when an operand that is read per element is the output itself (in-place would
  // overwrite it before it is read): the producer then takes the buffered path.
  bool in_place_safe() const;

  // Combines the reductions' per-slot partials and stores them. Call once, after every strip.
  Status finish();

 private:
  void run_chunk(int slot, const int64_t* coord, int axis, int64_t len, int64_t step, const float* anchor);
  // The chain's loop over a strip whose operands are unit-stride or broadcast along it; false
  // (nothing done) when they are not.
  // bf16 and fp16 operands and stores are converted through the slot's chain scratch.
  bool run_chain_strip(int slot, const int64_t* coord, int axis, int64_t len, int64_t step, const float* anchor);
  // The chain over n elements: operand j from bases[j] (unit stride, of type types[j]) when set,
  // else vals[j]; stored at out in the chain's store type.
  void run_typed(int slot, int64_t n, const float* anchor, const void* const* bases, const DataType* types,
                 const float* vals, void* out);

  const Epilogue& e_;
  std::vector<void*> data_;              // per operand
  std::vector<float> scalars_;           // per instruction: LOAD_SCALAR values
  std::vector<std::vector<float>> regs_; // per slot: num_regs * kChunk
  std::vector<std::vector<float>> chain_scratch_;  // per slot, for a chain with bf16 / fp16 operands or store
  std::vector<std::vector<double>> partials_;  // per slot: every reduction's accumulators, concatenated
  std::vector<int64_t> partial_offset_;  // per operand: where its accumulators start (-1: none)
  int64_t partial_size_ = 0;
};

// out[i] = op(a[i], b[i], c[i]), in fp32 (a few rare modes in double per element); then rounded to
// `round_to`.
void apply_pointwise(const PointwiseAttr& op, DataType round_to, int64_t n, const float* a, const float* b,
                     const float* c, float* out);
// Whether apply_pointwise has a loop for op's mode (GEN_INDEX and NOT_SET have none); checked
// when a plan is made so that a mode without one is rejected with a reason, not run as NaN.
bool has_pointwise_loop(const PointwiseAttr& op);
// MAX, MIN or AMAX of n fp32 values (NaN if any is NaN) into `out`, vectorized; false for the
// other modes.
bool extreme_run(ReductionMode m, int64_t n, const float* x, float& out);
// Converts n fp32 values to `t` at dst + i * stride (element units).
void store_run(void* dst, DataType t, int64_t stride, int64_t n, const float* src);
// Loads n values of type `t` from src + i * stride as fp32.
void load_run(const void* src, DataType t, int64_t stride, int64_t n, float* dst);

}  // namespace dnngraph::cpu
