// The epilogue/pointwise expression list: a partition's pointwise DAG (and terminal reductions)
// lowered once into straight-line code over per-element registers. Every backend reads this one
// form: the CUDA emitter turns it into a functor spliced into kernels, the CPU engines run it
// over tiles. The iteration domain is one shape: the anchor's output, or for a pure pointwise
// partition the broadcast shape of its outputs.
#pragma once
#include <string>
#include <vector>

#include "dnngraph/attributes.hpp"
#include "fusion/partition.hpp"

namespace dnngraph::expr {

enum class InstrKind : int {
  LOAD_ANCHOR,  // dst = the anchor's result at this element (conv/matmul accumulator), in fp32
  LOAD,         // dst = tensor[element], broadcast (size-1 dims of the tensor are pinned to 0)
  LOAD_SCALAR,  // dst = pass-by-value scalar tensor (host value, uniform over the domain)
  INDEX,        // dst = the element's index along `axis` (GEN_INDEX)
  APPLY,        // dst = op(src[0], src[1], src[2])
  STORE,        // tensor[element] = src[0], converted to the tensor's type
  REDUCE,       // tensor[reduced element] op= src[0]  (tensor's size-1 dims are reduced)
};

struct Instr {
  InstrKind kind;
  int dst = -1;                  // register written (LOAD*, INDEX, APPLY)
  int src[3] = {-1, -1, -1};     // registers read (APPLY, STORE, REDUCE)
  int tensor = -1;               // IR tensor id (LOAD, LOAD_SCALAR, STORE, REDUCE)
  int axis = 0;                  // INDEX
  PointwiseAttr op;              // APPLY: mode and its parameters
  ReductionMode reduce = ReductionMode::NOT_SET;  // REDUCE
  // APPLY: the value is rounded to this type before use, as if stored in the virtual tensor it
  // stands for (NOT_SET or FLOAT: keep fp32).
  DataType round_to = DataType::NOT_SET;
};

struct Program {
  std::vector<Instr> code;
  int num_regs = 0;
  std::vector<int64_t> domain;   // dims iterated over
  int anchor_node = -1;          // node index whose output feeds LOAD_ANCHOR, -1 if none
  int anchor_output = -1;        // its output tensor id (internal unless also stored)
  std::vector<int> loads;        // tensor ids read (besides the anchor)
  std::vector<int> stores;       // tensor ids written in full
  std::vector<int> reductions;   // tensor ids reduced into (must be initialised by the engine)
  std::string to_string() const; // for logs and tests
};

// Lowers the partition's nodes other than `anchor_node` (every node when it is -1). The nodes must
// be pointwise ops, plus reductions whose input is computed here. Returns false with `why_not`
// when the partition does not fit (a node of another kind, a stored tensor smaller than the
// domain, ...).
bool lower(const Partition& p, int anchor_node, Program& out, std::string& why_not);

// The identity value a REDUCE accumulator starts from (0 for ADD, -inf for MAX, ...).
double reduction_identity(ReductionMode m);
// Whether the final value needs a step after accumulation: AVG divides by the count, NORM2 takes
// the square root. (NORM1 and AMAX accumulate |x|; NORM2 accumulates x*x.)
bool reduction_needs_finalize(ReductionMode m);

}  // namespace dnngraph::expr
