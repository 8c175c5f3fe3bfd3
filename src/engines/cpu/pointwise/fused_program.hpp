// A fused expression list made ready for the CPU: its types checked, its domain put in memory
// order (canonical_layout.hpp), compiled by the CPU epilogue executor; and the driver that runs
// it over its whole domain on every core in one pass. cpu_pointwise_fused and cpu_norm_rowwise
// share it.
#pragma once
#include <string>
#include <vector>

#include "engines/cpu/epilogue/epilogue.hpp"
#include "engines/cpu/pointwise/canonical_layout.hpp"
#include "fusion/expr.hpp"
#include "runtime/cpu/thread_pool.hpp"

namespace dnngraph::cpu {

struct FusedProgram {
  ProgramTensors tensors;  // the program's tensors in the canonical dims
  Epilogue epi;
};

// The program computes in fp32: every tensor and rounded intermediate must be a type fp32 holds
// exactly (FLOAT, HALF, BFLOAT16, FP8, INT8, UINT8, BOOLEAN), and no node may ask for a wider
// compute type. False with `why` naming the node or tensor otherwise.
bool check_program_types(const expr::Program& prog, const Partition& p, std::string& why);

// The tensor whose layout should lead the iteration order: the first stored one, else the first
// load that spans the whole domain, else -1.
int primary_tensor(const expr::Program& prog, const ir::Graph& g);

// Canonicalizes `prog` and the `extra` tensors in `tensors` (dims ordered by tensor `primary`'s
// strides, the first `fixed` dims kept) and compiles it.
bool compile_program(expr::Program prog, ProgramTensors tensors, int primary, int fixed, FusedProgram& out,
                     std::string& why, const std::vector<int>& extra = {});

// Runs a compiled program (no anchor) over its whole domain: one contiguous range of the canonical
// order per thread, reductions combined at the end.
Status run_domain(const Epilogue& e, const std::vector<void*>& ptrs, ThreadPool& pool);

}  // namespace dnngraph::cpu
