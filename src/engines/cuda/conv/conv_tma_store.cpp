#include "engines/cuda/conv/conv_tma_store.hpp"

namespace dnngraph::cuda::conv {
namespace {

using codegen::Operand;
using codegen::Role;

const Operand* store_operand(const EpiloguePlan& epi) {
  for (const auto& op : epi.L.operands)
    if (op.role == Role::STORE) return &op;
  return nullptr;
}

}  // namespace

bool register_epilogue(const EpiloguePlan& epi, const ConvProblem& cp, std::string& why) {
  const codegen::Layout& L = epi.L;
  if (!L.reductions.empty()) {
    why = "the epilogue reduces (AMAX, sums) across tiles; the staged epilogue serves reductions";
    return false;
  }
  if (epi.prog.stores.size() != 1) {
    why = "the epilogue stores " + std::to_string(epi.prog.stores.size()) + " tensors; the TMA store takes one";
    return false;
  }
  if (L.rank() != 2) {
    why = "the output has batch dims beside the pixels and channels";
    return false;
  }
  const Operand* out = store_operand(epi);
  if (out->dtype != DataType::BFLOAT16 && out->dtype != DataType::HALF) {
    why = "the output is " + std::string(to_string(out->dtype)) + "; the register epilogue stores 16-bit outputs";
    return false;
  }
  // TMA: rows 16-byte aligned; the kernel's column pairs: an even channel count.
  if (out->strides[1] != 1 || (out->strides[0] * 2) % 16 != 0 || cp.params.N % 2 != 0) {
    why = "the output's channels are not contiguous, its pixel stride (" + std::to_string(out->strides[0]) +
          ") is not a multiple of 8, or its channel count is odd";
    return false;
  }
  for (const auto& op : L.operands)
    if (op.role == Role::LOAD && op.strides[0] != 0) {
      why = "an epilogue input varies along the output pixels (a residual); the register epilogue loads per-channel "
            "vectors and scalars";
      return false;
    }
  return true;
}

int stored_tensor(const EpiloguePlan& epi) { return store_operand(epi)->tensor; }

TensorMapSpec output_map(const EpiloguePlan& epi, const ConvProblem& cp) {
  const Operand* out = store_operand(epi);
  TensorMapSpec s;
  s.dtype = out->dtype;
  s.rank = 2;
  s.dims[0] = static_cast<uint64_t>(cp.params.N);
  s.dims[1] = static_cast<uint64_t>(cp.params.M);
  s.strides_bytes[0] = static_cast<uint64_t>(out->strides[0] * 2);
  s.box[0] = 64;  // one 128-byte row of 16-bit elements
  s.box[1] = 64;  // one consumer warpgroup's rows
  return s;
}

}  // namespace dnngraph::cuda::conv
