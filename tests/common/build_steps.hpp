// The five build steps a test takes a graph through before it executes: validate,
// build_operation_graph, create_execution_plans (heuristics A, then FALLBACK), check_support and
// build_plans, stopping at the first failure; optionally with only the ref engine selected.
#pragma once
#include "dnngraph/dnngraph.hpp"

namespace test_build {

inline dnngraph::Status run_build_steps(dnngraph::Graph& g, const dnngraph::Handle& handle) {
  namespace dg = dnngraph;
  if (auto s = g.validate(); !s.ok()) return s;
  if (auto s = g.build_operation_graph(handle); !s.ok()) return s;
  if (auto s = g.create_execution_plans({dg::HeurMode::A, dg::HeurMode::FALLBACK}); !s.ok()) return s;
  if (auto s = g.check_support(handle); !s.ok()) return s;
  return g.build_plans(handle);
}

// The build steps with the ref engine selected by name (the oracle the engine tests compare with).
inline dnngraph::Status build_on_ref(dnngraph::Graph& g, const dnngraph::Handle& handle) {
  g.select_engines({"ref"});
  return run_build_steps(g, handle);
}

}  // namespace test_build
