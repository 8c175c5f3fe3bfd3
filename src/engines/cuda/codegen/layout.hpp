// The memory layout of a lowered expression program on the GPU: the iteration domain with
// mergeable dims collapsed, each tensor's strides over it, how each is accessed along the innermost
// dim (16-byte vectors, one broadcast value, or element by element), where reductions accumulate,
// and the workspace they need. The emitter (emitter.hpp) turns program + layout into CUDA source;
// the plan fills kernel arguments from the same layout.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "fusion/expr.hpp"

namespace dnngraph::cuda::codegen {

// Kernel limits, matching DG_MAX_* in kernels/dg_pointwise.cuh.
inline constexpr int kMaxRank = 8;
inline constexpr int kMaxOperands = 12;
inline constexpr int kMaxScalars = 8;
inline constexpr int kMaxReductions = 4;
inline constexpr int kThreads = 256;

enum class Access : int { VEC, BCAST, STRIDED };
enum class Role : int { LOAD, STORE, ACC };

struct Operand {
  int tensor = -1;      // IR tensor id
  Role role = Role::LOAD;
  DataType dtype = DataType::FLOAT;  // FLOAT for ACC (accumulators are fp32)
  std::vector<int64_t> strides;      // per collapsed dim, in elements; 0 = broadcast
  Access inner = Access::STRIDED;    // along the innermost dim
  int reduction = -1;                // ACC: index into Layout::reductions
};

struct Reduction {
  int tensor = -1;
  ReductionMode mode = ReductionMode::NOT_SET;
  DataType dtype = DataType::FLOAT;  // the output's type
  bool full = false;                 // the output is one element
  int operand = -1;                  // partial: its ACC operand
  bool in_output = false;            // accumulates in the output itself (fp32, nothing to finish, atomics)
  int64_t volume = 1;                // output elements
  double inv_count = 1;              // 1 / input elements per output element
  int64_t acc_offset = -1;           // workspace byte offset of its fp32 accumulator (when used)
};

struct LayoutOptions {
  bool dynamic = false;        // sizes and strides are kernel arguments, not constants
  bool deterministic = false;  // full reductions in two passes; order-dependent partial ones refused
  int unroll = 2;              // vectors per thread per loop trip
  int grid = 1;                // blocks the main kernel is launched with (sizes the partials)
};

struct Layout {
  std::vector<int64_t> dims;         // collapsed domain, outermost first (at least one dim)
  std::vector<int> dim_of_axis;      // original domain axis -> collapsed dim, -1 for size-1 axes
  std::vector<Operand> operands;     // loads, stores, partial-reduction accumulators
  std::vector<int> scalars;          // pass-by-value tensor ids, in kernel-argument order
  std::vector<Reduction> reductions;
  int vec = 1;                       // elements per vector along the innermost dim
  int unroll = 1;
  int grid = 1;
  bool wide_index = false;           // 64-bit index arithmetic
  bool dynamic = false;
  bool deterministic = false;
  int64_t volume = 1;                // domain elements
  int64_t workspace_bytes = 0;
  int64_t partials_offset = -1;      // deterministic full reductions: [full][grid] floats

  int rank() const { return static_cast<int>(dims.size()); }
  int full_count() const;
  bool needs_finalize() const;
  int operand_of(int tensor) const;  // -1 when the tensor is no operand
  int scalar_of(int tensor) const;
  int reduction_of(int tensor) const;
  // A one-line summary for logs and plan names.
  std::string describe() const;
};

// Fills `out` for the program, or says why the GPU kernel cannot run it.
bool plan_layout(const expr::Program& prog, const ir::Graph& g, const LayoutOptions& o, Layout& out,
                 std::string& why_not);

// Whether a reduction's result depends on the order of accumulation (sums and products in fp32).
bool order_dependent(ReductionMode m);

// Types the generated kernels load and store (dg_types.cuh).
bool supported_type(DataType t);

// The program's operands in the order a layout lists them: its loads (and scalars, into L), then
// its stores, then its reductions, through builder b's add_operand(tensor, role, reduction) and
// add_reduction(tensor); intermediate types are checked on the way. An anchor value (LOAD_ANCHOR)
// is only allowed where `anchored`. False with the reason b.fail(why) keeps.
template <class LayoutBuilder>
bool collect_operands(const expr::Program& prog, bool anchored, Layout& L, LayoutBuilder& b) {
  for (const auto& in : prog.code) {
    if (in.kind == expr::InstrKind::LOAD_ANCHOR && !anchored)
      return b.fail("an anchor value needs a GEMM or convolution kernel");
    if (in.kind == expr::InstrKind::LOAD && !b.add_operand(in.tensor, Role::LOAD, -1)) return false;
    if (in.kind == expr::InstrKind::LOAD_SCALAR) L.scalars.push_back(in.tensor);
    if (in.kind == expr::InstrKind::APPLY && in.round_to != DataType::NOT_SET && in.round_to != DataType::FLOAT &&
        !supported_type(in.round_to))
      return b.fail(b.tname(in.tensor) + ": intermediate type " + std::string(to_string(in.round_to)) +
                    " is not supported");
  }
  for (int t : prog.stores)
    if (!b.add_operand(t, Role::STORE, -1)) return false;
  for (int t : prog.reductions)
    if (!b.add_reduction(t)) return false;
  return true;
}

// Whether L's operands (`what`: "tensors", "epilogue tensors"), scalars and reductions fit the
// kernels' parameter arrays; false with `why`: "13 tensors; the kernel takes at most 12".
bool check_counts(const Layout& L, const char* what, std::string& why);
// Every element has its own offset and the offsets fill [0, volume): a permutation of a packed layout.
bool is_dense(const ir::Tensor& t);
// The reduction into `tensor` (mode from prog, type and packing checked) over a domain of
// `volume` elements; in_output and the operand are the caller's. False with `why`.
bool describe_reduction(const expr::Program& prog, const ir::Graph& g, int tensor, int64_t volume, Reduction& out,
                        std::string& why);
// The bits of a reduction's identity as fp32 (what accumulators are reset to).
uint32_t identity_bits(ReductionMode m);

}  // namespace dnngraph::cuda::codegen
