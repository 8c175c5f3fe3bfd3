#include "engines/cudnn/sdpa_lower.hpp"

#include <cmath>
#include <cstring>
#include <limits>
#include <variant>

#include "graph/sdpa_features.hpp"

namespace dnngraph::cudnn {
namespace {


int tensor_id(const ir::Node& n, size_t slot) { return slot < n.inputs.size() ? n.inputs[slot] : -1; }

std::vector<int64_t> packed_strides(const std::vector<int64_t>& d) {
  std::vector<int64_t> s(d.size(), 1);
  for (size_t i = d.size() - 1; i-- > 0;) s[i] = s[i + 1] * d[i + 1];
  return s;
}

template <class T>
uint64_t bits_of(T v) {
  uint64_t b = 0;
  std::memcpy(&b, &v, sizeof(T));
  return b;
}

// Builds the operations one by one; every intermediate is a virtual tensor with a fresh uid.
class SdpaBuilder {
 public:
  SdpaBuilder(const CudnnApi& api, Lowered& out) : api_(api), out_(out) {}

  Status status() const { return status_; }

  BackendDescriptor tensor(Dtype t, const std::vector<int64_t>& dims) {
    Descriptor& d = make(Desc::TENSOR);
    d.set_dtype(Attr::TENSOR_DATA_TYPE, t)
        .set_i64s(Attr::TENSOR_DIMENSIONS, dims)
        .set_i64s(Attr::TENSOR_STRIDES, packed_strides(dims))
        .set_i64(Attr::TENSOR_UNIQUE_ID, next_uid_++)
        .set_i64(Attr::TENSOR_BYTE_ALIGNMENT, kAlignment)
        .set_bool(Attr::TENSOR_IS_VIRTUAL, true);
    return finish(d) ? d.get() : nullptr;
  }

  // y = mode(x[, b[, t]]) with math precision `prec`; GEN_INDEX takes `axis`.
  void pointwise(PwMode mode, Dtype prec, BackendDescriptor x, BackendDescriptor b, BackendDescriptor t,
                 BackendDescriptor y, int64_t axis = -1) {
    Descriptor& pw = make(Desc::POINTWISE);
    pw.set_enum(Attr::POINTWISE_MODE, AttrType::POINTWISE_MODE, static_cast<int>(mode))
        .set_dtype(Attr::POINTWISE_MATH_PREC, prec);
    if (mode == PwMode::GEN_INDEX) pw.set_i64(Attr::POINTWISE_AXIS, axis);
    if (!finish(pw)) return;
    Descriptor& op = make(Desc::OPERATION_POINTWISE);
    op.set_desc(Attr::OPERATION_POINTWISE_PW_DESCRIPTOR, pw.get()).set_desc(Attr::OPERATION_POINTWISE_XDESC, x);
    if (b) op.set_desc(Attr::OPERATION_POINTWISE_BDESC, b);
    if (t) op.set_desc(Attr::OPERATION_POINTWISE_TDESC, t);
    op.set_desc(Attr::OPERATION_POINTWISE_YDESC, y);
    add_op(op);
  }

  void reduction(ReduceOp r, BackendDescriptor x, BackendDescriptor y) {
    Descriptor& red = make(Desc::REDUCTION);
    red.set_enum(Attr::REDUCTION_OPERATOR, AttrType::REDUCTION_OPERATOR_TYPE, static_cast<int>(r))
        .set_dtype(Attr::REDUCTION_COMP_TYPE, Dtype::FLOAT);
    if (!finish(red)) return;
    Descriptor& op = make(Desc::OPERATION_REDUCTION);
    op.set_desc(Attr::OPERATION_REDUCTION_XDESC, x)
        .set_desc(Attr::OPERATION_REDUCTION_YDESC, y)
        .set_desc(Attr::OPERATION_REDUCTION_DESC, red.get());
    add_op(op);
  }

  // c = a . b; the overrides (per-batch lengths) bound the GEMM's M, N or K where given.
  void matmul(BackendDescriptor a, BackendDescriptor b, BackendDescriptor c, BackendDescriptor m_override,
              BackendDescriptor n_override, BackendDescriptor k_override) {
    Descriptor& mm = make(Desc::MATMUL);
    if (!finish(mm.set_dtype(Attr::MATMUL_COMP_TYPE, Dtype::FLOAT))) return;
    Descriptor& op = make(Desc::OPERATION_MATMUL);
    op.set_desc(Attr::OPERATION_MATMUL_ADESC, a)
        .set_desc(Attr::OPERATION_MATMUL_BDESC, b)
        .set_desc(Attr::OPERATION_MATMUL_CDESC, c)
        .set_desc(Attr::OPERATION_MATMUL_DESC, mm.get());
    if (m_override) op.set_desc(Attr::OPERATION_MATMUL_GEMM_M_OVERRIDE_DESC, m_override);
    if (n_override) op.set_desc(Attr::OPERATION_MATMUL_GEMM_N_OVERRIDE_DESC, n_override);
    if (k_override) op.set_desc(Attr::OPERATION_MATMUL_GEMM_K_OVERRIDE_DESC, k_override);
    add_op(op);
  }

 private:
  Descriptor& make(Desc type) {
    out_.descriptors.push_back(std::make_shared<Descriptor>(api_, type));
    return *out_.descriptors.back();
  }
  bool finish(Descriptor& d) {
    if (!status_.ok()) return false;
    status_ = d.finalize();
    return status_.ok();
  }
  void add_op(Descriptor& op) {
    if (finish(op)) out_.ops.push_back(op.get());
  }

  const CudnnApi& api_;
  Lowered& out_;
  Status status_;
  int64_t next_uid_ = kSdpaScaleUid + 16;  // above the lowering's constants
};

// S = select(mask, S, -inf) where mask is (row < seq_q) && (col < seq_kv): the frontend's padding mask.
BackendDescriptor padding_mask(SdpaBuilder& g, BackendDescriptor s, const std::vector<int64_t>& dims,
                               BackendDescriptor seq_q, BackendDescriptor seq_kv, BackendDescriptor neg_inf) {
  BackendDescriptor row = g.tensor(Dtype::INT32, dims), col = g.tensor(Dtype::INT32, dims);
  g.pointwise(PwMode::GEN_INDEX, Dtype::INT32, s, nullptr, nullptr, row, 2);
  g.pointwise(PwMode::GEN_INDEX, Dtype::INT32, s, nullptr, nullptr, col, 3);
  BackendDescriptor row_in = g.tensor(Dtype::BOOLEAN, dims), col_in = g.tensor(Dtype::BOOLEAN, dims),
                    both = g.tensor(Dtype::BOOLEAN, dims), out = g.tensor(Dtype::FLOAT, dims);
  g.pointwise(PwMode::CMP_LT, Dtype::BOOLEAN, row, seq_q, nullptr, row_in);
  g.pointwise(PwMode::CMP_LT, Dtype::BOOLEAN, col, seq_kv, nullptr, col_in);
  g.pointwise(PwMode::LOGICAL_AND, Dtype::BOOLEAN, row_in, col_in, nullptr, both);
  g.pointwise(PwMode::BINARY_SELECT, Dtype::FLOAT, s, neg_inf, both, out);
  return out;
}

// The row and column indices of the scores, as the frontend makes them for its band masks.
void score_indices(SdpaBuilder& g, BackendDescriptor s, const std::vector<int64_t>& dims, BackendDescriptor& row,
                   BackendDescriptor& col) {
  row = g.tensor(Dtype::INT32, dims), col = g.tensor(Dtype::INT32, dims);
  g.pointwise(PwMode::GEN_INDEX, Dtype::FLOAT, s, nullptr, nullptr, row, 2);
  g.pointwise(PwMode::GEN_INDEX, Dtype::FLOAT, s, nullptr, nullptr, col, 3);
}

// x = mode(x, b) in `type` (an index shifted by a length or a bound).
void shift(SdpaBuilder& g, PwMode mode, Dtype type, BackendDescriptor& x, BackendDescriptor b,
           const std::vector<int64_t>& dims) {
  BackendDescriptor y = g.tensor(type, dims);
  g.pointwise(mode, type, x, b, nullptr, y);
  x = y;
}

// S = select(lhs <cmp> rhs, S, -inf): the scores a band keeps.
BackendDescriptor keep_where(SdpaBuilder& g, PwMode cmp, BackendDescriptor lhs, BackendDescriptor rhs,
                             BackendDescriptor s, BackendDescriptor neg_inf, const std::vector<int64_t>& dims) {
  BackendDescriptor keep = g.tensor(Dtype::BOOLEAN, dims), out = g.tensor(Dtype::FLOAT, dims);
  g.pointwise(cmp, Dtype::BOOLEAN, lhs, rhs, nullptr, keep);
  g.pointwise(PwMode::BINARY_SELECT, Dtype::FLOAT, s, neg_inf, keep, out);
  return out;
}

// The lengths a bottom-right band aligns to (padding lengths, else the dims' constants); null for top-left.
struct BandInputs {
  BackendDescriptor seq_kv = nullptr, seq_q = nullptr, right = nullptr, left = nullptr, neg_inf = nullptr;
  Dtype left_type = Dtype::FLOAT;
};

// S = select(row [+ s_kv - s_q] [+ right] >= col, S, -inf): the frontend's right bound (causal when 0).
BackendDescriptor right_bound_mask(SdpaBuilder& g, BackendDescriptor s, const std::vector<int64_t>& dims,
                                   const BandInputs& in) {
  BackendDescriptor row = nullptr, col = nullptr;
  score_indices(g, s, dims, row, col);
  if (in.seq_kv) shift(g, PwMode::ADD, Dtype::INT32, row, in.seq_kv, dims);
  if (in.seq_q) shift(g, PwMode::SUB, Dtype::INT32, row, in.seq_q, dims);
  if (in.right) shift(g, PwMode::ADD, Dtype::INT32, row, in.right, dims);
  return keep_where(g, PwMode::CMP_GE, row, col, s, in.neg_inf, dims);
}

// S = select(col + left [- s_kv + s_q] > row, S, -inf): the frontend's left bound (sliding window).
BackendDescriptor left_bound_mask(SdpaBuilder& g, BackendDescriptor s, const std::vector<int64_t>& dims,
                                  const BandInputs& in) {
  BackendDescriptor row = nullptr, col = nullptr;
  score_indices(g, s, dims, row, col);
  shift(g, PwMode::ADD, in.left_type, col, in.left, dims);
  if (in.seq_kv) shift(g, PwMode::SUB, Dtype::INT32, col, in.seq_kv, dims);
  if (in.seq_q) shift(g, PwMode::ADD, Dtype::INT32, col, in.seq_q, dims);
  return keep_where(g, PwMode::CMP_GT, col, row, s, in.neg_inf, dims);
}

bool bottom_right(const SdpaAttr& a) { return a.get_diagonal_alignment() == DiagonalAlignment::BOTTOM_RIGHT; }

}  // namespace

const ir::Node* sdpa_node(const Partition& p) {
  for (size_t i = 0; i < p.nodes.size(); ++i)
    if (std::holds_alternative<SdpaAttr>(p.node(i).attr)) return &p.node(i);
  return nullptr;
}

std::string sdpa_unsupported_reason(const Partition& p, const ir::Node& n) {
  const auto& a = std::get<SdpaAttr>(n.attr);
  if (p.nodes.size() != 1)
    return ir::describe(n) + ": the cudnn engine lowers an sdpa node alone in its partition (this one holds " +
           std::to_string(p.nodes.size()) + " nodes)";
  // The bias is one pointwise add (lower_sdpa). Not lowered yet: each would be an op or a tensor
  // attribute of the graph below (ALiBi's slopes tensor, dropout's RNG op,
  // CUDNN_ATTR_TENSOR_RAGGED_OFFSET_DESC, page tables); K and V of different head counts would need
  // the two matmuls' head broadcasts checked on a GPU.
  if (const std::string missing = sdpa_features_missing(sdpa_features(*p.graph, n), {.bias = true}); !missing.empty())
    return ir::describe(n) + ": " + missing + " (not lowered to cuDNN by this engine yet)";
  const DataType t = p.tensor(n.inputs[slot::SDPA_Q]).dtype;
  if (t != DataType::HALF && t != DataType::BFLOAT16)
    return ir::describe(n) + ": data type " + std::string(to_string(t)) +
           " (the engine offers cuDNN's flash attention for HALF and BFLOAT16)";
  if (a.get_padding_mask() && !a.get_is_inference())
    return ir::describe(n) + ": the stats output with the padding mask (cuDNN 9.14 on an H200 left the stats of "
           "padded query rows infinite, where dnngraph defines 0)";
  const auto left = a.get_diagonal_band_left_bound(), right = a.get_diagonal_band_right_bound();
  const int64_t sq = p.tensor(n.inputs[slot::SDPA_Q]).dims[2], skv = p.tensor(n.inputs[slot::SDPA_K]).dims[2];
  const std::string lengths = " (seq_q " + std::to_string(sq) + " > seq_kv " + std::to_string(skv) + ")";
  if (left && *left < 1)
    return ir::describe(n) + ": a diagonal band left bound of " + std::to_string(*left) +
           " (cuDNN's sliding window keeps the diagonal: a left bound of at least 1)";
  if (right && bottom_right(a) && !a.get_padding_mask() && sq > skv)
    return ir::describe(n) + ": a bottom-right aligned band without padding needs seq_q <= seq_kv" + lengths +
           " (cuDNN's rule, as the frontend's)";
  if (left && !a.get_padding_mask() && sq > skv)
    return ir::describe(n) + ": a sliding window (left bound) without padding needs seq_q <= seq_kv" + lengths +
           " (cuDNN's rule, as the frontend's)";
  if (left && !right && skv > 1024 && library_report().version == 91400)
    return ir::describe(n) + ": a sliding window without a right bound and seq_kv " + std::to_string(skv) +
           " > 1024 (a known bug of cuDNN 9.14.0, which the frontend refuses too)";
  return {};
}

void sdpa_tensor_plans(const Partition& p, const ir::Node& n, std::vector<TensorPlan>& tensors) {
  const auto& a = std::get<SdpaAttr>(n.attr);
  // RNG_DUMP's slot holds a one-element placeholder without dropout (which is not lowered): no op reads it.
  std::erase_if(tensors, [&](const TensorPlan& t) { return n.outputs.size() > 2 && t.id == n.outputs[2]; });
  for (TensorPlan& t : tensors)
    if (t.id == n.inputs[slot::SDPA_K]) {  // K^T: the same bytes read with swapped strides
      std::swap(t.dims[2], t.dims[3]);
      std::swap(t.strides[2], t.strides[3]);
    }
  const double d = static_cast<double>(p.tensor(n.inputs[slot::SDPA_Q]).dims[3]);
  auto constant = [&](int64_t uid, Dtype type, uint64_t bits) {
    TensorPlan c;
    c.uid = uid;
    c.dims.assign(4, 1);
    c.strides.assign(4, 1);
    c.dtype = type;
    c.by_value = true;
    c.value = bits;
    tensors.push_back(std::move(c));
  };
  auto int32 = [&](int64_t uid, int64_t v) { constant(uid, Dtype::INT32, bits_of(static_cast<int32_t>(v))); };
  constant(kSdpaScaleUid, Dtype::FLOAT, bits_of(static_cast<float>(a.get_attn_scale().value_or(1.0 / std::sqrt(d)))));
  const auto left = a.get_diagonal_band_left_bound(), right = a.get_diagonal_band_right_bound();
  if (a.get_padding_mask() || left || right) {
    // cuDNN before 9.10 wants the lowest float for masked scores, later ones -inf (as the frontend).
    const size_t v = library_report().version;
    constant(kSdpaNegInfUid, Dtype::FLOAT,
             bits_of(v != 0 && v < 91000 ? std::numeric_limits<float>::lowest() : -std::numeric_limits<float>::infinity()));
  }
  const int64_t sq = p.tensor(n.inputs[slot::SDPA_Q]).dims[2], skv = p.tensor(n.inputs[slot::SDPA_K]).dims[2];
  const bool fixed_lengths = bottom_right(a) && !a.get_padding_mask();  // the dims stand for the lengths
  if (right && fixed_lengths) int32(kSdpaSeqKvUid, skv), int32(kSdpaSeqQUid, sq);
  if (right && *right != 0) int32(kSdpaRightUid, *right);
  if (left && bottom_right(a) && a.get_padding_mask()) int32(kSdpaLeftUid, *left);
  else if (left) constant(kSdpaLeftUid, Dtype::FLOAT, bits_of(static_cast<float>(*left - (fixed_lengths ? skv - sq : 0))));
}

Status lower_sdpa(const CudnnApi& api, const Partition& p, const ir::Node& n,
                  const std::map<int64_t, BackendDescriptor>& by_uid, Lowered& out) {
  const auto& a = std::get<SdpaAttr>(n.attr);
  auto desc = [&](int id) -> BackendDescriptor { return id >= 0 ? by_uid.at(id + 1) : nullptr; };
  const ir::Tensor &q = p.tensor(n.inputs[slot::SDPA_Q]), &v = p.tensor(n.inputs[slot::SDPA_V]);
  Dtype io = Dtype::HALF;
  to_cudnn(q.dtype, io);
  const int64_t b = q.dims[0], h = q.dims[1], sq = q.dims[2], skv = v.dims[2];
  const std::vector<int64_t> scores{b, h, sq, skv}, rows{b, h, sq, 1};
  BackendDescriptor seq_q = a.get_padding_mask() ? desc(tensor_id(n, slot::SDPA_SEQ_Q)) : nullptr;
  BackendDescriptor seq_kv = a.get_padding_mask() ? desc(tensor_id(n, slot::SDPA_SEQ_KV)) : nullptr;
  auto constant = [&](int64_t uid) -> BackendDescriptor {
    auto it = by_uid.find(uid);
    return it == by_uid.end() ? nullptr : it->second;
  };
  BackendDescriptor neg_inf = constant(kSdpaNegInfUid);

  SdpaBuilder g(api, out);
  BackendDescriptor s = g.tensor(Dtype::FLOAT, scores), scaled = g.tensor(Dtype::FLOAT, scores);
  g.matmul(desc(n.inputs[slot::SDPA_Q]), desc(n.inputs[slot::SDPA_K]), s, seq_q, seq_kv, nullptr);
  g.pointwise(PwMode::MUL, Dtype::FLOAT, s, by_uid.at(kSdpaScaleUid), nullptr, scaled);
  s = scaled;
  if (const int bias = tensor_id(n, slot::SDPA_BIAS); bias >= 0) {  // after the scale, as the frontend's composite
    BackendDescriptor biased = g.tensor(Dtype::FLOAT, scores);
    g.pointwise(PwMode::ADD, Dtype::FLOAT, s, desc(bias), nullptr, biased);
    s = biased;
  }
  if (seq_q && seq_kv) s = padding_mask(g, s, scores, seq_q, seq_kv, neg_inf);
  BandInputs band;
  band.neg_inf = neg_inf;
  if (bottom_right(a)) {  // the padding mask's lengths, else the dims' constants
    band.seq_kv = seq_kv ? seq_kv : constant(kSdpaSeqKvUid);
    band.seq_q = seq_q ? seq_q : constant(kSdpaSeqQUid);
  }
  band.right = constant(kSdpaRightUid);
  if (a.get_diagonal_band_right_bound()) s = right_bound_mask(g, s, scores, band);
  if (a.get_diagonal_band_left_bound()) {
    band.left = constant(kSdpaLeftUid);
    band.left_type = bottom_right(a) && seq_kv ? Dtype::INT32 : Dtype::FLOAT;
    if (!seq_kv) band.seq_kv = band.seq_q = nullptr;  // folded into the left bound's constant
    s = left_bound_mask(g, s, scores, band);
  }
  // Softmax as max, sub, exp, sum, div (the frontend's CompositeSoftmaxNode).
  BackendDescriptor mx = g.tensor(Dtype::FLOAT, rows), shifted = g.tensor(Dtype::FLOAT, scores),
                    e = g.tensor(Dtype::FLOAT, scores), sum = g.tensor(Dtype::FLOAT, rows);
  g.reduction(ReduceOp::MAX, s, mx);
  g.pointwise(PwMode::SUB, Dtype::FLOAT, s, mx, nullptr, shifted);
  g.pointwise(PwMode::EXP, Dtype::FLOAT, shifted, nullptr, nullptr, e);
  g.reduction(ReduceOp::ADD, e, sum);
  // Stats = max + log(sum) even in inference (then into the virtual STATS tensor): the frontend's
  // softmax always ends so, and cuDNN 9.14's heuristics offered no engine for the graph without it.
  const int stats_id = n.outputs.size() > 1 ? n.outputs[1] : -1;
  BackendDescriptor lg = g.tensor(Dtype::FLOAT, rows);
  g.pointwise(PwMode::LOG, Dtype::FLOAT, sum, nullptr, nullptr, lg);
  g.pointwise(PwMode::ADD, Dtype::FLOAT, mx, lg, nullptr, stats_id >= 0 ? desc(stats_id) : g.tensor(Dtype::FLOAT, rows));
  BackendDescriptor prob = g.tensor(io, scores);  // the second GEMM reads P in the I/O type
  g.pointwise(PwMode::DIV, Dtype::FLOAT, e, sum, nullptr, prob);
  g.matmul(prob, desc(n.inputs[slot::SDPA_V]), desc(n.outputs[0]), seq_q, nullptr, seq_kv);
  if (!g.status().ok()) return {g.status().code(), g.status().message() + " (" + ir::describe(n) + ")"};
  return {};
}

}  // namespace dnngraph::cudnn
