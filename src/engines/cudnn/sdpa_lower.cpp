#include "engines/cudnn/sdpa_lower.hpp"

#include <cmath>
#include <cstring>
#include <limits>
#include <variant>

namespace dnngraph::cudnn {
namespace {

std::string node_text(const ir::Node& n) { return "node '" + n.name + "' (" + std::string(op_name(n.attr)) + ")"; }

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
  int64_t next_uid_ = kSdpaNegInfUid + 1;
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

// S = select(row >= col, S, -inf): the frontend's top-left causal mask (a right bound of 0).
BackendDescriptor causal_mask(SdpaBuilder& g, BackendDescriptor s, const std::vector<int64_t>& dims,
                              BackendDescriptor neg_inf) {
  BackendDescriptor row = g.tensor(Dtype::INT32, dims), col = g.tensor(Dtype::INT32, dims);
  g.pointwise(PwMode::GEN_INDEX, Dtype::FLOAT, s, nullptr, nullptr, row, 2);
  g.pointwise(PwMode::GEN_INDEX, Dtype::FLOAT, s, nullptr, nullptr, col, 3);
  BackendDescriptor keep = g.tensor(Dtype::BOOLEAN, dims), out = g.tensor(Dtype::FLOAT, dims);
  g.pointwise(PwMode::CMP_GE, Dtype::BOOLEAN, row, col, nullptr, keep);
  g.pointwise(PwMode::BINARY_SELECT, Dtype::FLOAT, s, neg_inf, keep, out);
  return out;
}

}  // namespace

const ir::Node* sdpa_node(const Partition& p) {
  for (size_t i = 0; i < p.nodes.size(); ++i)
    if (std::holds_alternative<SdpaAttr>(p.node(i).attr)) return &p.node(i);
  return nullptr;
}

std::string sdpa_unsupported_reason(const Partition& p, const ir::Node& n) {
  const auto& a = std::get<SdpaAttr>(n.attr);
  if (p.nodes.size() != 1)
    return node_text(n) + ": the cudnn engine lowers an sdpa node alone in its partition (this one holds " +
           std::to_string(p.nodes.size()) + " nodes)";
  const DataType t = p.tensor(n.inputs[slot::SDPA_Q]).dtype;
  if (t != DataType::HALF && t != DataType::BFLOAT16)
    return node_text(n) + ": data type " + std::string(to_string(t)) +
           " (the engine offers cuDNN's flash attention for HALF and BFLOAT16)";
  if (a.get_diagonal_band_left_bound())
    return node_text(n) + ": a diagonal band left bound (sliding window) is not lowered to cuDNN";
  if (auto r = a.get_diagonal_band_right_bound(); r && *r != 0)
    return node_text(n) + ": a diagonal band right bound other than 0 is not lowered to cuDNN";
  if (a.get_diagonal_band_right_bound() && a.get_diagonal_alignment() != DiagonalAlignment::TOP_LEFT)
    return node_text(n) + ": a bottom-right causal mask is not lowered to cuDNN (top-left only)";
  return {};
}

void sdpa_tensor_plans(const Partition& p, const ir::Node& n, std::vector<TensorPlan>& tensors) {
  const auto& a = std::get<SdpaAttr>(n.attr);
  for (TensorPlan& t : tensors)
    if (t.id == n.inputs[slot::SDPA_K]) {  // K^T: the same bytes read with swapped strides
      std::swap(t.dims[2], t.dims[3]);
      std::swap(t.strides[2], t.strides[3]);
    }
  const double d = static_cast<double>(p.tensor(n.inputs[slot::SDPA_Q]).dims[3]);
  auto constant = [&](int64_t uid, float v) {
    TensorPlan c;
    c.uid = uid;
    c.dims.assign(4, 1);
    c.strides.assign(4, 1);
    c.dtype = Dtype::FLOAT;
    c.by_value = true;
    c.value = bits_of(v);
    tensors.push_back(std::move(c));
  };
  constant(kSdpaScaleUid, static_cast<float>(a.get_attn_scale().value_or(1.0 / std::sqrt(d))));
  if (a.get_padding_mask() || a.get_diagonal_band_right_bound()) {
    // cuDNN before 9.10 wants the lowest float for masked scores, later ones -inf (as the frontend).
    const size_t v = version();
    constant(kSdpaNegInfUid, v != 0 && v < 91000 ? std::numeric_limits<float>::lowest()
                                                 : -std::numeric_limits<float>::infinity());
  }
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
  auto neg_inf_it = by_uid.find(kSdpaNegInfUid);
  BackendDescriptor neg_inf = neg_inf_it == by_uid.end() ? nullptr : neg_inf_it->second;

  SdpaBuilder g(api, out);
  BackendDescriptor s = g.tensor(Dtype::FLOAT, scores), scaled = g.tensor(Dtype::FLOAT, scores);
  g.matmul(desc(n.inputs[slot::SDPA_Q]), desc(n.inputs[slot::SDPA_K]), s, seq_q, seq_kv, nullptr);
  g.pointwise(PwMode::MUL, Dtype::FLOAT, s, by_uid.at(kSdpaScaleUid), nullptr, scaled);
  s = scaled;
  if (seq_q && seq_kv) s = padding_mask(g, s, scores, seq_q, seq_kv, neg_inf);
  if (a.get_diagonal_band_right_bound()) s = causal_mask(g, s, scores, neg_inf);
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
  if (!g.status().ok()) return {g.status().code(), g.status().message() + " (" + node_text(n) + ")"};
  return {};
}

}  // namespace dnngraph::cudnn
