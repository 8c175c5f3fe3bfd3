// Which kernels to ship ahead of time, and how to find their keys: a graph planned with mode A
// for a (described) target, and per partition the first candidate of every engine whose build()
// compiles (compiles_kernels: the own CUDA engines) built. The kernels those builds ask the
// target's kernel cache for are the ones mode A's choice or each own engine's first would use.
#pragma once
#include <string>
#include <vector>

#include "graph/graph_impl.hpp"
#include "planning/engine.hpp"

namespace dnngraph {

// g must be lowered (build_operation_graph). Builds fail after compiling when the target has no
// CUDA context (a described one): those errors are expected and only counted in `failed`.
// `labels` receives "partition pattern: engine[knobs]" for each candidate built.
Status build_first_own_candidates(const GraphImpl& g, const Target& target, std::vector<std::string>& labels,
                                  int& failed);
// The same for every own-engine candidate of every partition (the generic kernels: with a
// dynamic-shape target they serve any shape, planning/shipped_kernels.hpp).
Status build_all_own_candidates(const GraphImpl& g, const Target& target, std::vector<std::string>& labels,
                                int& failed);

}  // namespace dnngraph
