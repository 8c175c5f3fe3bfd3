// A graph given as JSON text, taken through every step a user takes on the CPU and checked
// against the ref engine: read twice (all engines; ref only), validated, planned, built, and,
// when every user tensor is small, executed on real buffers through uid variant packs. Inputs hold
// a fixed pattern of small multiples of 1/8 (exact in every float type); outputs are poisoned
// with NaN, gaps included, and followed by guard bytes, so an unwritten element, a write into a
// gap and a write past the end all show. Shared by the bad-input tests and fuzz_execute.
#pragma once
#include <cstdint>
#include <string>

#include "dnngraph/dnngraph.hpp"

namespace bad_input {

struct RunResult {
  dnngraph::Status status;  // the first failure on the all-engines graph; OK when every step passed
  std::string stage;        // the step that failed: "from_json", "validate", ..., "execute"
  bool executed = false;    // both graphs ran and their outputs were compared
  std::string mismatch;     // empty when the engines agree with ref (and ref accepted what they did)
};

struct RunLimits {
  int64_t max_elements = int64_t{1} << 20;  // per tensor, elements and span: larger ones are planned, not run
  int64_t max_workspace_bytes = int64_t{1} << 28;
};

// `handle` must be a CPU handle.
RunResult run_json_vs_ref(const std::string& json, const dnngraph::Handle& handle, const RunLimits& limits = {});

// Relative tolerance of a value stored in type t, against ref's double accumulation.
double tolerance_of(dnngraph::DataType t);

}  // namespace bad_input
