// Pieces every CPU GEMM-based engine shares: the anchor + epilogue check, the ISA and blocking
// knobs, the cost estimate, and the per-execute workspace rule.
#pragma once
#include <string>
#include <vector>

#include "engines/cpu/epilogue/epilogue.hpp"
#include "engines/cpu/cpu_knobs.hpp"
#include "engines/cpu/gemm/driver.hpp"
#include "planning/engine.hpp"

namespace dnngraph::cpu {

// The partition's anchor node (or null) and its compiled epilogue; `why` says what failed.
// Checks: CPU device, anchor of the expected op, its inputs of a packable type, fp32-compatible
// compute type, and an epilogue this executor runs.
const ir::Node* check_anchor(const Partition& p, const Target& t, std::string_view op, Epilogue& epi,
                             std::string& why);

// Reads a GEMM knob setting (defaults for missing knobs: the best ISA, its blocking); an error
// when the schema rejects it or this CPU lacks its ISA.
Status read_gemm_knobs(const KnobSchema<GemmKnobs>& schema, std::string_view engine, const Knobs& k, Isa& isa,
                       gemm::Blocking& blk);
// Share of the device's fp32 peak a kernel of this ISA reaches on a large GEMM.
double isa_efficiency(Isa isa);

// Threads the plan was sized for; execute() passes the workspace only when the pool still fits.
inline void* usable_workspace(void* ws, int planned_threads, int pool_threads) {
  return pool_threads <= planned_threads ? ws : nullptr;
}

}  // namespace dnngraph::cpu
