#include "engines/cuda/common/register_epilogue.hpp"

#include "engines/cuda/codegen/pointwise_ops.hpp"

namespace dnngraph::cuda {
namespace {

using codegen::Operand;
using codegen::Role;

const Operand* store_operand(const EpiloguePlan& epi) {
  for (const auto& op : epi.L.operands)
    if (op.role == Role::STORE) return &op;
  return nullptr;
}

// The stride of one step of the linear batch index: the innermost batch dim's (of those longer
// than 1), 0 when there is no batch. -1 when the batch dims are not packed outer to inner (or
// broadcast: a stride of 0).
int64_t packed_batch_stride(const codegen::Layout& L, const Operand& out) {
  const int batch_dims = L.rank() - 2;
  int64_t unit = 0, expected = 0;
  for (int d = batch_dims - 1; d >= 0; --d) {
    const int64_t size = L.dims[static_cast<size_t>(d)], stride = out.strides[static_cast<size_t>(d)];
    if (size == 1) continue;
    if (stride <= 0) return -1;
    if (unit == 0) unit = expected = stride;
    if (stride != expected) return -1;
    expected = stride * size;
  }
  return unit;
}

// The chain's expression cost per element (codegen::expression_cost). Unrolled over a thread's up to
// 128 accumulators, a chain above kMaxRegisterChainCost outgrows what the instruction cache keeps
// beside the main loop: measured on an H100 (2026-12-05), bias + ReLU (cost 2, 2.2-3.5k SASS
// instructions) ran 1.07-1.13x the staged epilogue's speed on convolutions, the matmul's x alpha +
// bias + GELU (cost 26, 13.4k instructions) 0.53-0.93x on 6 of its 8 tile settings (1.01-1.06x on
// the other two). Above it the chain runs one 64-column box at a time (EPI_TMA_STORE_BOXED).
constexpr int kMaxRegisterChainCost = 8;

int chain_cost(const expr::Program& prog) {
  int cost = 0;
  for (const auto& in : prog.code)
    if (in.kind == expr::InstrKind::APPLY) cost += codegen::expression_cost(in.op.get_mode());
  return cost;
}

}  // namespace

bool register_epilogue(const EpiloguePlan& epi, std::string& why) {
  const codegen::Layout& L = epi.L;
  if (epi.prog.stores.size() != 1) {
    why = "the epilogue stores " + std::to_string(epi.prog.stores.size()) + " tensors; the TMA store takes one";
    return false;
  }
  for (const auto& red : L.reductions)
    if (!red.full) {
      why = "the epilogue reduces into per-row or per-column outputs (sums such as genstats'); the staged epilogue "
            "serves those";
      return false;
    }
  const int r = L.rank();
  const Operand* out = store_operand(epi);
  if (out->dtype != DataType::BFLOAT16 && out->dtype != DataType::HALF) {
    why = "the output is " + std::string(to_string(out->dtype)) + "; the register epilogue stores 16-bit outputs";
    return false;
  }
  // TMA: rows (and batches) 16-byte aligned; the kernel's column pairs: an even column count.
  const int64_t row_stride = out->strides[static_cast<size_t>(r - 2)], cols = L.dims[static_cast<size_t>(r - 1)];
  if (out->strides[static_cast<size_t>(r - 1)] != 1 || (row_stride * 2) % 16 != 0 || cols % 2 != 0) {
    why = "the output's columns are not contiguous, its row stride (" + std::to_string(row_stride) +
          ") is not a multiple of 8, or its column count (" + std::to_string(cols) + ") is odd";
    return false;
  }
  const int64_t batch_stride = packed_batch_stride(L, *out);
  if (batch_stride < 0 || (batch_stride * 2) % 16 != 0) {
    why = "the output's batch dims are not one packed run of matrices with 16-byte aligned strides";
    return false;
  }
  for (const auto& op : L.operands)
    if (op.role == Role::LOAD && op.strides[static_cast<size_t>(r - 2)] != 0) {
      why = "an epilogue input varies along the output rows (a residual); the register epilogue loads per-column "
            "vectors and scalars";
      return false;
    }
  return true;
}

bool register_epilogue_unserialized(const EpiloguePlan& epi, bool pingpong, bool split_units) {
  return !((pingpong || split_units) && epi.L.full_count() > 0);
}

int register_epilogue_mode(const EpiloguePlan& epi) {
  return chain_cost(epi.prog) > kMaxRegisterChainCost ? kEpiTmaStoreBoxed : kEpiTmaStore;
}

int stored_tensor(const EpiloguePlan& epi) { return store_operand(epi)->tensor; }

TensorMapSpec register_epilogue_output_map(const EpiloguePlan& epi) {
  const codegen::Layout& L = epi.L;
  const Operand* out = store_operand(epi);
  const int r = L.rank();
  int64_t batches = 1;
  for (int d = 0; d + 2 < r; ++d) batches *= L.dims[static_cast<size_t>(d)];
  const int64_t rows = L.dims[static_cast<size_t>(r - 2)], row_stride = out->strides[static_cast<size_t>(r - 2)];
  const int64_t batch_stride = packed_batch_stride(L, *out);
  TensorMapSpec s;
  s.dtype = out->dtype;
  s.rank = 3;
  s.dims[0] = static_cast<uint64_t>(L.dims[static_cast<size_t>(r - 1)]);
  s.dims[1] = static_cast<uint64_t>(rows);
  s.dims[2] = static_cast<uint64_t>(batches);
  s.strides_bytes[0] = static_cast<uint64_t>(row_stride * 2);
  // One batch: a stride past the whole matrix, as a packed 3D tensor has.
  s.strides_bytes[1] = static_cast<uint64_t>(batch_stride > 0 ? batch_stride * 2 : (row_stride * rows * 2 + 15) / 16 * 16);
  s.box[0] = 64;  // one 128-byte row of 16-bit elements
  s.box[1] = 64;  // one consumer warpgroup's rows
  s.box[2] = 1;
  return s;
}

Status encode_register_epilogue_map(const Partition& p, const EpiloguePlan& epi, const ExecArgs& args, TensorMap& out) {
  const int y = stored_tensor(epi);
  const void* ptr = args.ptrs[static_cast<size_t>(y)];
  if (reinterpret_cast<uintptr_t>(ptr) % 16 != 0)
    return {ErrorCode::INVALID_VARIANT_PACK, "tensor '" + p.tensor(y).name +
                                                 "': the pointer is not 16-byte aligned, which the TMA store of "
                                                 "epilogue=1 needs (plans with epilogue=0 take any alignment)"};
  return encode_tensor_map(register_epilogue_output_map(epi), ptr, out);
}

}  // namespace dnngraph::cuda
