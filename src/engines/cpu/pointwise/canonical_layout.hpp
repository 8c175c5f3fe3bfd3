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

// The tensors a program loads, stores or reduces into, each once (pass-by-value scalars excluded).
std::vector<int> program_tensors(const expr::Program& prog);

// Rewrites prog.domain and the dims/strides of every tensor of program_tensors(prog) and of
// `extra` (tensors of the domain's rank an engine reads besides the program, such as a norm's X)
// in `g`, a copy of the partition's graph owned by the caller. Dims are ordered by the strides of
// tensor `primary` (largest first; -1 keeps the logical order). The first `fixed` dims keep their
// place and are never dropped or merged (the norm engine's row dim). INDEX axes are kept unmerged
// and renumbered.
void canonicalize_domain(expr::Program& prog, ir::Graph& g, int primary, int fixed, const std::vector<int>& extra = {});

}  // namespace dnngraph::cpu
