// Memory-order iteration for a fused expression list: the domain's dims are reordered so that the
// innermost one has the smallest strides, dims of size 1 are dropped, and neighbours that every
// tensor lays out contiguously (or broadcasts along both) are merged. A contiguous elementwise
// chain becomes one long dim, so the CPU epilogue runs long unit-stride strips whatever the
// logical shape (NCHW dims over NHWC memory, a trailing dim of 3, ...).
#pragma once
#include <vector>

#include "fusion/expr.hpp"
#include "graph/ir.hpp"

namespace dnngraph::cpu {

// The tensors of one program with their layouts rewritten: copies of those few only, every other
// tensor read from the IR (a copy of the whole graph per partition made planning quadratic in the
// graph's size). Reads through to `g`, which must outlive it, as partitions do.
class ProgramTensors {
 public:
  ProgramTensors() = default;  // over no graph: holds nothing until assigned one
  explicit ProgramTensors(const ir::Graph& g) : graph_(&g) {}
  const ir::Tensor& tensor(int id) const;
  // The program's own copy of tensor `id`, made on first use.
  ir::Tensor& rewrite(int id);

 private:
  const ir::Graph* graph_ = nullptr;
  std::vector<ir::Tensor> copies_;  // sorted by id
};

// The tensors a program loads, stores or reduces into, each once (pass-by-value scalars excluded).
std::vector<int> program_tensors(const expr::Program& prog);

// Rewrites prog.domain and the dims/strides of every tensor of program_tensors(prog) and of
// `extra` (tensors of the domain's rank an engine reads besides the program, such as a norm's X)
// in `tensors`. Dims are ordered by the strides of tensor `primary` (largest first; -1 keeps the
// logical order). The first `fixed` dims keep their place and are never dropped or merged (the norm
// engine's row dim). INDEX axes are kept unmerged and renumbered.
void canonicalize_domain(expr::Program& prog, ProgramTensors& tensors, int primary, int fixed,
                         const std::vector<int>& extra = {});

}  // namespace dnngraph::cpu
