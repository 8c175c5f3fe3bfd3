// EpilogueRun's chain form (epilogue_chain.hpp): a strip through the chain, bf16 / fp16 operands
// and stores converted through the slot's scratch, a producer's block of rows in one call, and
// the in-place and in-register (TileChain) forms for fp32 chains.
#include <algorithm>

#include "core/dtype.hpp"
#include "engines/cpu/epilogue/epilogue.hpp"

namespace dnngraph::cpu {

bool EpilogueRun::run_chain_strip(int slot, const int64_t* coord, int axis, int64_t len, int64_t step,
                                  const float* anchor) {
  const Chain& ch = *e_.chain();
  if (!anchor || (step == 1 && coord[axis] + len > e_.domain()[static_cast<size_t>(axis)])) return false;
  auto offset = [&](int oi, int64_t& inc) {
    const auto& st = e_.operands()[static_cast<size_t>(oi)].strides;
    int64_t off = 0;
    for (int d = 0; d < e_.rank(); ++d) off += coord[d] * st[static_cast<size_t>(d)];
    inc = st[static_cast<size_t>(axis)] * step;
    return off;
  };
  const void* bases[Chain::kMaxOperands];  // unit-stride operands, in their type
  float vals[Chain::kMaxOperands];
  const auto& code = e_.program().code;
  for (size_t j = 0; j < ch.operand_instr.size(); ++j) {
    const int instr = ch.operand_instr[j];
    const int oi = e_.operand_of(instr);
    const DataType t = ch.operand_type[j];
    bases[j] = nullptr;
    if (code[static_cast<size_t>(instr)].kind == expr::InstrKind::LOAD_SCALAR) {
      vals[j] = scalars_[static_cast<size_t>(instr)];
      continue;
    }
    int64_t inc = 0;
    const int64_t off = offset(oi, inc);
    const void* data = data_[static_cast<size_t>(oi)];
    if (inc == 0) vals[j] = static_cast<float>(dtype::load(data, t, off));
    else if (inc == 1) bases[j] = static_cast<const char*>(data) + off * size_of(t);
    else return false;
  }
  const int so = e_.operand_of(ch.store_instr);
  int64_t inc = 0;
  const int64_t out_off = offset(so, inc);
  if (inc != 1) return false;
  run_typed(slot, len, anchor, bases, ch.operand_type.data(), vals,
            static_cast<char*>(data_[static_cast<size_t>(so)]) + out_off * size_of(ch.store_type));
  return true;
}

void EpilogueRun::run_typed(int slot, int64_t len, const float* anchor, const void* const* bases, const DataType* types,
                            const float* vals, void* out) {
  const Chain& ch = *e_.chain();
  const float* ptrs[Chain::kMaxOperands];
  if (ch.fp32_only()) {
    for (size_t j = 0; j < ch.operand_instr.size(); ++j) ptrs[j] = static_cast<const float*>(bases[j]);
    run_chain(ch, len, anchor, ptrs, vals, static_cast<float*>(out));
    return;
  }
  if (ch.steps.empty()) {  // the bf16 / fp16 store alone
    store_run(out, ch.store_type, 1, len, anchor);
    return;
  }
  // bf16 / fp16 operands and stores: kChunk elements at a time through the slot's scratch.
  float* scratch = chain_scratch_[static_cast<size_t>(slot)].data();
  for (int64_t i = 0; i < len; i += kChunk) {
    const int64_t n = std::min(kChunk, len - i);
    for (size_t j = 0; j < ch.operand_instr.size(); ++j) {
      ptrs[j] = nullptr;
      if (!bases[j]) continue;
      const DataType t = types[j];
      const char* at = static_cast<const char*>(bases[j]) + i * size_of(t);
      if (t == DataType::FLOAT) {
        ptrs[j] = reinterpret_cast<const float*>(at);
      } else {
        float* buf = scratch + (1 + j) * kChunk;
        load_run(at, t, 1, n, buf);
        ptrs[j] = buf;
      }
    }
    char* o = static_cast<char*>(out) + i * size_of(ch.store_type);
    if (ch.store_type == DataType::FLOAT) {
      run_chain(ch, n, anchor + i, ptrs, vals, reinterpret_cast<float*>(o));
    } else {
      run_chain(ch, n, anchor + i, ptrs, vals, scratch);
      store_run(o, ch.store_type, 1, n, scratch);
    }
  }
}

void EpilogueRun::chain_rows_into(int slot, const float* c, int64_t ldc, int64_t rows, int64_t cols, int64_t out_off,
                                  int64_t out_ld, int64_t n_index) {
  const Chain& ch = *e_.chain();
  const auto& code = e_.program().code;
  const void* column[Chain::kMaxOperands];
  const char* same[Chain::kMaxOperands];
  float vals[Chain::kMaxOperands];
  DataType types[Chain::kMaxOperands];
  // bf16 / fp16 per-column operands (a bias) in fp32 once per block, not once per row.
  thread_local std::vector<float> columns;
  size_t converted = 0;
  for (size_t j = 0; j < ch.operand_instr.size(); ++j) {
    const int instr = ch.operand_instr[j];
    const DataType t = types[j] = ch.operand_type[j];
    const char* data = static_cast<const char*>(data_[static_cast<size_t>(e_.operand_of(instr))]);
    column[j] = same[j] = nullptr;
    vals[j] = 0.0f;
    switch (e_.tile_operand(j)) {
      case Epilogue::TileOperand::BROADCAST:
        vals[j] = code[static_cast<size_t>(instr)].kind == expr::InstrKind::LOAD_SCALAR
                      ? scalars_[static_cast<size_t>(instr)] : static_cast<float>(dtype::load(data, t, 0));
        break;
      case Epilogue::TileOperand::COLUMN: column[j] = data + n_index * size_of(t); break;
      case Epilogue::TileOperand::SAME_AS_OUTPUT: same[j] = data + out_off * size_of(t); break;
    }
    if (column[j] && t != DataType::FLOAT) ++converted;
  }
  if (converted) {
    columns.resize(converted * static_cast<size_t>(cols));
    float* next = columns.data();
    for (size_t j = 0; j < ch.operand_instr.size(); ++j) {
      if (!column[j] || types[j] == DataType::FLOAT) continue;
      load_run(column[j], types[j], 1, cols, next);
      column[j] = next;
      types[j] = DataType::FLOAT;
      next += cols;
    }
  }
  const void* bases[Chain::kMaxOperands];
  char* out = static_cast<char*>(data_[static_cast<size_t>(e_.operand_of(ch.store_instr))]);
  for (int64_t i = 0; i < rows; ++i) {
    for (size_t j = 0; j < ch.operand_instr.size(); ++j)
      bases[j] = same[j] ? same[j] + i * out_ld * size_of(types[j]) : column[j];
    run_typed(slot, cols, c + i * ldc, bases, types, vals, out + (out_off + i * out_ld) * size_of(ch.store_type));
  }
}

bool EpilogueRun::in_place_safe() const {
  const Chain& ch = *e_.chain();
  const void* out = data_[static_cast<size_t>(e_.operand_of(ch.store_instr))];
  for (size_t j = 0; j < ch.operand_instr.size(); ++j)
    if (e_.tile_operand(j) == Epilogue::TileOperand::SAME_AS_OUTPUT &&
        data_[static_cast<size_t>(e_.operand_of(ch.operand_instr[j]))] == out)
      return false;
  return true;
}

void EpilogueRun::chain_rows(float* c, int64_t ldc, int64_t rows, int64_t cols, int64_t out_off, int64_t n_index) const {
  TileChain tc;
  tile_chain(out_off, n_index, ldc, tc);
  if (chain_block_preferred(cols)) {
    tc.apply(rows, cols, c, 0, 0);
    return;
  }
  const float* ptrs[Chain::kMaxOperands];
  for (int64_t i = 0; i < rows; ++i) {
    for (size_t j = 0; j < tc.chain->operand_instr.size(); ++j) ptrs[j] = tc.same[j] ? tc.same[j] + i * ldc : tc.column[j];
    run_chain(*tc.chain, cols, c + i * ldc, ptrs, tc.scalar, c + i * ldc);
  }
}

void EpilogueRun::tile_chain(int64_t out_off, int64_t n_index, int64_t ld, TileChain& tc) const {
  const Chain& ch = *e_.chain();
  tc.chain = &ch;
  tc.ld = ld;
  for (size_t j = 0; j < ch.operand_instr.size(); ++j) {
    const int instr = ch.operand_instr[j];
    const float* data = static_cast<const float*>(data_[static_cast<size_t>(e_.operand_of(instr))]);
    tc.column[j] = tc.same[j] = nullptr;
    switch (e_.tile_operand(j)) {
      case Epilogue::TileOperand::BROADCAST:
        tc.scalar[j] = e_.program().code[static_cast<size_t>(instr)].kind == expr::InstrKind::LOAD_SCALAR
                           ? scalars_[static_cast<size_t>(instr)] : *data;
        break;
      case Epilogue::TileOperand::COLUMN: tc.column[j] = data + n_index; break;
      case Epilogue::TileOperand::SAME_AS_OUTPUT: tc.same[j] = data + out_off; break;
    }
  }
}

}  // namespace dnngraph::cpu
