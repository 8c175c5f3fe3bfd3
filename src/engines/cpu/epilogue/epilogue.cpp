#include "engines/cpu/epilogue/epilogue.hpp"

#include <algorithm>
#include <cmath>
#include <cstring>

#include "core/dtype.hpp"

namespace dnngraph::cpu {
namespace {

using expr::InstrKind;

constexpr int kMaxRank = 12;

// NaN propagates through MIN/MAX/AMAX, as in ref_reduction.cpp.
double max_nan(double acc, double v) { return (std::isnan(v) || v > acc) ? v : acc; }
double min_nan(double acc, double v) { return (std::isnan(v) || v < acc) ? v : acc; }

double combine(ReductionMode m, double acc, double v) {
  switch (m) {
    case ReductionMode::MUL: return acc * v;
    case ReductionMode::MIN: return min_nan(acc, v);
    case ReductionMode::MAX: case ReductionMode::AMAX: return max_nan(acc, v);
    default: return acc + v;  // ADD, AVG, NORM1, NORM2: partial sums add up
  }
}

// The term one element contributes (|x| for AMAX and NORM1, x*x for NORM2).
double term(ReductionMode m, float x) {
  const double v = x;
  switch (m) {
    case ReductionMode::AMAX: case ReductionMode::NORM1: return std::fabs(v);
    case ReductionMode::NORM2: return v * v;
    default: return v;
  }
}

// Folds n values into one accumulator (reduced along the strip).
double fold(ReductionMode m, double acc, const float* x, int64_t n) {
  if (m == ReductionMode::ADD || m == ReductionMode::AVG) {
    double s = 0;
    for (int64_t i = 0; i < n; ++i) s += x[i];
    return acc + s;
  }
  // MAX, MIN, AMAX: exact in fp32, so fold the strip there, vectorized (per element in double,
  // the AMAX of a chain was half the executor's time).
  if (float e = 0.0f; n > 0 && extreme_run(m, n, x, e)) return combine(m, acc, e);
  for (int64_t i = 0; i < n; ++i) acc = combine(m, acc, term(m, x[i]));
  return acc;
}

// Folds x[k] into acc[k * inc] for k < n (one accumulator per element: reduced across strips).
// The mode is decided once per strip: with combine and term's switches per element, the sums of
// a global average pool fused after a 1x1 conv (MobileNetV2's last layer, 1280 channels x 49
// pixels) took 19% of the partition's samples.
template <class Term, class Combine>
void fold_each(double* acc, int64_t inc, const float* x, int64_t n, Term t, Combine c) {
  for (int64_t k = 0; k < n; ++k) acc[k * inc] = c(acc[k * inc], t(x[k]));
}
void fold_each(ReductionMode m, double* acc, int64_t inc, const float* x, int64_t n) {
  const auto same = [](float v) { return static_cast<double>(v); };
  const auto add = [](double a, double v) { return a + v; };
  switch (m) {
    case ReductionMode::ADD: case ReductionMode::AVG: return fold_each(acc, inc, x, n, same, add);
    case ReductionMode::NORM1: return fold_each(acc, inc, x, n, [](float v) { return std::fabs(static_cast<double>(v)); }, add);
    case ReductionMode::NORM2: return fold_each(acc, inc, x, n, [](float v) { return double(v) * v; }, add);
    default:
      for (int64_t k = 0; k < n; ++k) acc[k * inc] = combine(m, acc[k * inc], term(m, x[k]));
  }
}

}  // namespace

// An APPLY (or the anchor's value) rounded to bf16 or fp16 and only stored into tensors of that
// type skips the rounding pass: the store rounds it the same way (to nearest even), and rounding
// twice changes nothing. A bf16 relu: 0.38 -> 0.29 ms at 2^20 elements (fp32: 0.21).
void Epilogue::elide_rounding_before_stores(const std::function<const ir::Tensor&(int)>& tensor) {
  const auto& code = prog_.code;
  for (size_t i = 0; i < code.size(); ++i) {
    const DataType t = round_[i];
    const bool computed = code[i].kind == InstrKind::APPLY || code[i].kind == InstrKind::LOAD_ANCHOR;
    if (!computed || (t != DataType::BFLOAT16 && t != DataType::HALF)) continue;
    bool only_stored = true, read = false;
    for (size_t j = i + 1; j < code.size() && only_stored; ++j) {
      const expr::Instr& in = code[j];
      const bool reads = std::find(std::begin(in.src), std::end(in.src), code[i].dst) != std::end(in.src);
      if (reads) {
        read = true;
        only_stored = in.kind == InstrKind::STORE && tensor(in.tensor).dtype == t;
      }
      if (in.dst == code[i].dst) break;  // overwritten: later reads see another value
    }
    if (only_stored && read) round_[i] = DataType::NOT_SET;
  }
}

bool Epilogue::init(const expr::Program& prog, const ir::Graph& g, std::string& why) {
  return init(prog, [&](int id) -> const ir::Tensor& { return g.tensor(id); }, why);
}

bool Epilogue::init(const expr::Program& prog, const std::function<const ir::Tensor&(int)>& tensor, std::string& why) {
  prog_ = prog;
  domain_ = prog.domain;
  if (rank() > kMaxRank) {
    why = "the fused domain has rank " + std::to_string(rank()) + " (the CPU epilogue handles up to 12)";
    return false;
  }
  for (const auto& in : prog.code)
    if (in.kind == expr::InstrKind::APPLY && !has_pointwise_loop(in.op)) {
      why = "pointwise mode " + std::string(to_string(in.op.get_mode())) + " has no CPU loop";
      return false;
    }
  operands_.clear();
  operand_index_.assign(prog.code.size(), -1);
  round_.assign(prog.code.size(), DataType::NOT_SET);
  int stores_of_anchor = 0;
  for (size_t i = 0; i < prog.code.size(); ++i) {
    const expr::Instr& in = prog.code[i];
    if (in.kind == InstrKind::LOAD_ANCHOR && prog.anchor_output >= 0)  // ref reads it back in its type
      round_[i] = tensor(prog.anchor_output).dtype;
    if (in.kind == InstrKind::APPLY) {
      round_[i] = in.round_to;
      if (in.tensor >= 0 && !tensor(in.tensor).is_virtual) round_[i] = tensor(in.tensor).dtype;
    }
    if (in.kind == InstrKind::LOAD_SCALAR) {  // a host value; only its type matters
      Operand op;
      op.id = in.tensor;
      op.dtype = tensor(in.tensor).dtype;
      operand_index_[i] = static_cast<int>(operands_.size());
      operands_.push_back(std::move(op));
      continue;
    }
    const bool touches = in.kind == InstrKind::LOAD || in.kind == InstrKind::STORE || in.kind == InstrKind::REDUCE;
    if (!touches) continue;
    const ir::Tensor& t = tensor(in.tensor);
    if (t.rank() != rank()) {
      why = "tensor '" + t.name + "': rank " + std::to_string(t.rank()) + " differs from the fused domain's";
      return false;
    }
    Operand op;
    op.id = in.tensor;
    op.dtype = t.dtype;
    op.strides.resize(domain_.size());
    for (int d = 0; d < rank(); ++d) op.strides[d] = t.dims[d] == 1 ? 0 : t.strides[d];
    if (in.kind == InstrKind::REDUCE) {
      op.reduce = in.reduce;
      op.dense.assign(domain_.size(), 0);
      for (int d = rank(); d-- > 0;) {
        op.dense[d] = t.dims[d] == 1 ? 0 : op.volume;
        op.volume *= t.dims[d];
      }
    }
    if (in.kind == InstrKind::STORE && in.src[0] == 0 && prog.anchor_node >= 0) ++stores_of_anchor;
    operand_index_[i] = static_cast<int>(operands_.size());
    operands_.push_back(std::move(op));
  }
  elide_rounding_before_stores(tensor);
  // Only "load anchor, store it to one fp32 tensor": the producer can write there directly.
  plain_store_ = -1;
  if (prog.anchor_node >= 0 && prog.code.size() == 2 && stores_of_anchor == 1 &&
      prog.code[1].kind == InstrKind::STORE && tensor(prog.code[1].tensor).dtype == DataType::FLOAT)
    plain_store_ = prog.code[1].tensor;
  std::vector<DataType> tensor_type;
  for (const auto& in : prog.code) {
    if (in.tensor < 0) continue;
    if (static_cast<size_t>(in.tensor) >= tensor_type.size())
      tensor_type.resize(static_cast<size_t>(in.tensor) + 1, DataType::NOT_SET);
    tensor_type[static_cast<size_t>(in.tensor)] = tensor(in.tensor).dtype;
  }
  has_chain_ = plain_store_ < 0 && prog.anchor_node >= 0 && chain_.build(prog, round_, tensor_type);
  return true;
}

const std::vector<int64_t>& Epilogue::chain_store_strides() const {
  return operands_[static_cast<size_t>(operand_of(chain_.store_instr))].strides;
}

bool Epilogue::prepare_in_place(int n_axis) {
  in_place_ = rows_form_ = false;
  tile_kind_.clear();
  if (!has_chain_ || n_axis < 0 || n_axis >= rank()) return false;
  const auto& out = chain_store_strides();
  for (int instr : chain_.operand_instr) {
    if (prog_.code[static_cast<size_t>(instr)].kind == InstrKind::LOAD_SCALAR) {
      tile_kind_.push_back(TileOperand::BROADCAST);
      continue;
    }
    const auto& st = operands_[static_cast<size_t>(operand_of(instr))].strides;
    bool broadcast = true, column = true;
    for (int d = 0; d < rank(); ++d) {
      broadcast &= st[static_cast<size_t>(d)] == 0;
      column &= d == n_axis ? st[static_cast<size_t>(d)] == 1 : st[static_cast<size_t>(d)] == 0;
    }
    if (broadcast) tile_kind_.push_back(TileOperand::BROADCAST);
    else if (column) tile_kind_.push_back(TileOperand::COLUMN);
    else if (st == out) tile_kind_.push_back(TileOperand::SAME_AS_OUTPUT);
    else return false;
  }
  rows_form_ = true;
  in_place_ = chain_.fp32_only();  // the producer's fp32 tiles go straight to the output
  return in_place_;
}

EpilogueRun::EpilogueRun(const Epilogue& e, const std::vector<void*>& ptrs, int slots) : e_(e) {
  const auto& code = e.program().code;
  data_.resize(e.operands().size());
  partial_offset_.assign(e.operands().size(), -1);
  for (size_t i = 0; i < e.operands().size(); ++i) {
    const auto& op = e.operands()[i];
    data_[i] = ptrs[static_cast<size_t>(op.id)];
    if (op.reduce != ReductionMode::NOT_SET) {
      partial_offset_[i] = partial_size_;
      partial_size_ += op.volume;
    }
  }
  scalars_.assign(code.size(), 0.0f);
  for (size_t i = 0; i < code.size(); ++i)
    if (code[i].kind == InstrKind::LOAD_SCALAR) {
      const void* p = ptrs[static_cast<size_t>(code[i].tensor)];
      const DataType t = e.operands()[static_cast<size_t>(e.operand_of(static_cast<int>(i)))].dtype;
      scalars_[i] = p ? static_cast<float>(dtype::load(p, t, 0)) : 0.0f;
    }
  slots = std::max(slots, 1);
  regs_.assign(static_cast<size_t>(slots), std::vector<float>(static_cast<size_t>(std::max(e.num_regs(), 1) * kChunk)));
  if (const Chain* ch = e.chain(); ch && !ch->fp32_only())  // the store and each operand, converted
    chain_scratch_.assign(static_cast<size_t>(slots), std::vector<float>((ch->operand_instr.size() + 1) * kChunk));
  partials_.assign(static_cast<size_t>(slots), {});
  for (auto& p : partials_) {
    p.resize(static_cast<size_t>(partial_size_));
    for (size_t i = 0; i < e.operands().size(); ++i) {
      const auto& op = e.operands()[i];
      if (op.reduce == ReductionMode::NOT_SET) continue;
      std::fill_n(p.begin() + partial_offset_[i], op.volume, expr::reduction_identity(op.reduce));
    }
  }
}

void EpilogueRun::strip(int slot, const int64_t* coord, int axis, int64_t len, int64_t step, const float* anchor) {
  if (e_.chain() && run_chain_strip(slot, coord, axis, len, step, anchor)) return;
  const auto& dims = e_.domain();
  int64_t c[kMaxRank];
  std::copy(coord, coord + e_.rank(), c);
  while (len > 0) {
    int64_t run = std::min(len, kChunk);
    if (step == 1) run = std::min(run, dims[static_cast<size_t>(axis)] - c[axis]);
    run_chunk(slot, c, axis, run, step, anchor);
    if (anchor) anchor += run;
    len -= run;
    c[axis] += run * step;
    if (step == 1 && c[axis] >= dims[static_cast<size_t>(axis)]) {
      c[axis] = 0;
      for (int d = axis - 1; d >= 0; --d) {  // carry into the outer dims
        if (++c[d] < dims[static_cast<size_t>(d)]) break;
        c[d] = 0;
      }
    }
  }
}

void EpilogueRun::run_chunk(int slot, const int64_t* c, int axis, int64_t n, int64_t step, const float* anchor) {
  const auto& code = e_.program().code;
  float* regs = regs_[static_cast<size_t>(slot)].data();
  const float* r[64];
  std::vector<const float*> r_heap;
  const float** rp = r;
  if (e_.num_regs() > 64) {
    r_heap.resize(static_cast<size_t>(e_.num_regs()));
    rp = r_heap.data();
  }
  auto buf = [&](int reg) { return regs + static_cast<int64_t>(reg) * kChunk; };
  for (size_t i = 0; i < code.size(); ++i) {
    const expr::Instr& in = code[i];
    const int oi = e_.operand_of(static_cast<int>(i));
    int64_t off = 0, inc = 0;
    if (oi >= 0 && in.kind != InstrKind::LOAD_SCALAR) {
      const auto& st = e_.operands()[static_cast<size_t>(oi)].strides;
      for (int d = 0; d < e_.rank(); ++d) off += c[d] * st[static_cast<size_t>(d)];
      inc = st[static_cast<size_t>(axis)] * step;
    }
    switch (in.kind) {
      case InstrKind::LOAD_ANCHOR: {
        const DataType rt = e_.round_of(static_cast<int>(i));
        if (rt == DataType::FLOAT || rt == DataType::DOUBLE || rt == DataType::NOT_SET) {
          rp[in.dst] = anchor;
        } else {
          apply_pointwise(PointwiseAttr().set_mode(PointwiseMode::IDENTITY), rt, n, anchor, nullptr, nullptr, buf(in.dst));
          rp[in.dst] = buf(in.dst);
        }
        break;
      }
      case InstrKind::LOAD: {
        const auto& op = e_.operands()[static_cast<size_t>(oi)];
        const void* src = data_[static_cast<size_t>(oi)];
        if (op.dtype == DataType::FLOAT && inc == 1) {
          rp[in.dst] = static_cast<const float*>(src) + off;
        } else if (inc == 0) {
          const float v = static_cast<float>(dtype::load(src, op.dtype, off));
          std::fill_n(buf(in.dst), n, v);
          rp[in.dst] = buf(in.dst);
        } else {
          const size_t es = static_cast<size_t>(size_of(op.dtype));
          load_run(static_cast<const char*>(src) + off * static_cast<int64_t>(es), op.dtype, inc, n, buf(in.dst));
          rp[in.dst] = buf(in.dst);
        }
        break;
      }
      case InstrKind::LOAD_SCALAR:
        std::fill_n(buf(in.dst), n, scalars_[i]);
        rp[in.dst] = buf(in.dst);
        break;
      case InstrKind::INDEX: {
        float* o = buf(in.dst);
        const int64_t base = c[in.axis];
        for (int64_t k = 0; k < n; ++k) o[k] = static_cast<float>(in.axis == axis ? base + k * step : base);
        rp[in.dst] = o;
        break;
      }
      case InstrKind::APPLY:
        apply_pointwise(in.op, e_.round_of(static_cast<int>(i)), n, rp[in.src[0]], in.src[1] >= 0 ? rp[in.src[1]] : nullptr,
                        in.src[2] >= 0 ? rp[in.src[2]] : nullptr, buf(in.dst));
        rp[in.dst] = buf(in.dst);
        break;
      case InstrKind::STORE: {
        const auto& op = e_.operands()[static_cast<size_t>(oi)];
        const size_t es = static_cast<size_t>(size_of(op.dtype));
        store_run(static_cast<char*>(data_[static_cast<size_t>(oi)]) + off * static_cast<int64_t>(es), op.dtype, inc, n,
                  rp[in.src[0]]);
        break;
      }
      case InstrKind::REDUCE: {
        const auto& op = e_.operands()[static_cast<size_t>(oi)];
        double* acc = partials_[static_cast<size_t>(slot)].data() + partial_offset_[static_cast<size_t>(oi)];
        int64_t idx = 0;
        for (int d = 0; d < e_.rank(); ++d) idx += c[d] * op.dense[static_cast<size_t>(d)];
        const int64_t dinc = op.dense[static_cast<size_t>(axis)] * step;
        const float* x = rp[in.src[0]];
        if (dinc == 0) {
          acc[idx] = fold(op.reduce, acc[idx], x, n);
        } else {
          fold_each(op.reduce, acc + idx, dinc, x, n);
        }
        break;
      }
    }
  }
}

Status EpilogueRun::finish() {
  if (partial_size_ == 0) return {};
  std::vector<double> total = partials_[0];
  for (size_t s = 1; s < partials_.size(); ++s)
    for (size_t i = 0; i < e_.operands().size(); ++i) {
      const auto& op = e_.operands()[i];
      if (op.reduce == ReductionMode::NOT_SET) continue;
      for (int64_t k = partial_offset_[i]; k < partial_offset_[i] + op.volume; ++k)
        total[static_cast<size_t>(k)] = combine(op.reduce, total[static_cast<size_t>(k)], partials_[s][static_cast<size_t>(k)]);
    }
  int64_t domain_volume = 1;
  for (int64_t d : e_.domain()) domain_volume *= d;
  for (size_t i = 0; i < e_.operands().size(); ++i) {
    const auto& op = e_.operands()[i];
    if (op.reduce == ReductionMode::NOT_SET) continue;
    const int64_t count = domain_volume / std::max<int64_t>(op.volume, 1);
    // Walk the reduced tensor's elements in row-major order; store through its real strides.
    std::vector<int64_t> idx(e_.domain().size(), 0);
    std::vector<int64_t> dims(e_.domain().size());
    for (size_t d = 0; d < dims.size(); ++d) dims[d] = op.dense[d] ? e_.domain()[d] : 1;
    for (int64_t k = 0; k < op.volume; ++k) {
      double v = total[static_cast<size_t>(partial_offset_[i] + k)];
      if (op.reduce == ReductionMode::AVG) v /= static_cast<double>(count);
      if (op.reduce == ReductionMode::NORM2) v = std::sqrt(v);
      int64_t off = 0;
      for (size_t d = 0; d < dims.size(); ++d) off += idx[d] * op.strides[d];
      dtype::store(data_[i], op.dtype, off, v);
      for (size_t d = dims.size(); d-- > 0;) {
        if (++idx[d] < dims[d]) break;
        idx[d] = 0;
      }
    }
  }
  return {};
}

}  // namespace dnngraph::cpu
