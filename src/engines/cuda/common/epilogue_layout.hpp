// The fused epilogue of a GEMM-shaped anchor (matmul, implicit-GEMM convolution) on the GPU: the
// partition's pointwise chain and reductions, lowered to the expression list, laid out over the
// coordinates a GEMM kernel has at hand — [output batch dims..., m, n] — and emitted through the
// shared CUDA emitter (codegen::emit_epilogue) as the functor the kernel calls per accumulator pair.
//
// The anchor output's axes are grouped: batch axes stay dims of their own; the axes forming the
// GEMM row (m) and column (n) must collapse into one stride per operand (e.g. NHWC's N, H, W into
// one pixel index), which every densely packed or broadcast epilogue tensor does.
#pragma once
#include <string>
#include <vector>

#include "engines/cuda/codegen/layout.hpp"
#include "engines/cuda/codegen/params.hpp"
#include "planning/engine.hpp"
#include "runtime/cuda/context.hpp"

namespace dnngraph::cuda {

// Axes of the anchor output (the fused domain), outermost first within each group.
struct EpilogueAxes {
  std::vector<int> batch;
  std::vector<int> m;
  std::vector<int> n;
};

struct EpiloguePlan {
  expr::Program prog;
  codegen::Layout L;  // dims = [batch..., M, N]; vectors of 4 along n where operands allow
};

// The node a GEMM-shaped engine builds the partition around: its anchor, or its only node when
// that is a matmul or convolution the partitioner left alone (conv_wgrad is no fusion anchor).
// -1 when there is none.
int anchor_node(const Partition& p);
// The anchor node when it is an `Attr` op, else null with why ("the partition is not anchored on
// a <op>": `op` names it).
template <class Attr>
const ir::Node* anchor_of(const Partition& p, const char* op, std::string& why) {
  const int a = anchor_node(p);
  if (a >= 0 && ir::is<Attr>(p.graph->nodes[static_cast<size_t>(a)])) return &p.graph->nodes[static_cast<size_t>(a)];
  why = std::string("the partition is not anchored on a ") + op;
  return nullptr;
}

// Lowers the partition around its anchor and lays the epilogue out over the axes; false with `why`.
bool plan_epilogue(const Partition& p, const EpilogueAxes& axes, bool dynamic, EpiloguePlan& out, std::string& why);

// `namespace dg_gen { struct Epilogue ... }` for the kernel source (`register_store`: see
// codegen::emit_epilogue).
std::string epilogue_source(const EpiloguePlan& e, const ir::Graph& g, bool register_store = false);
// The kernel that finishes reductions not accumulated in their output ("" when none is needed).
inline constexpr const char* kEpilogueFinalizeKernel = "dg_gemm_finalize";
std::string finalize_source(const codegen::Layout& L);

// Execute-time pieces: the epilogue's kernel arguments (scalars read from their host pointers),
// whether vector access is allowed for these pointers (L.vec or 1), the accumulators reset to each
// reduction's identity before the main kernel, and the finalizer after it.
Status epilogue_params(const Partition& p, const codegen::Layout& L, const ExecArgs& args,
                       codegen::PointwiseParams& params, int& vec);
Status reset_reductions(HandleImpl& h, const codegen::Layout& L, const codegen::PointwiseParams& params);
Status run_finalize(HandleImpl& h, const codegen::Layout& L, CUfunction finalize,
                    codegen::PointwiseParams& params);

}  // namespace dnngraph::cuda
