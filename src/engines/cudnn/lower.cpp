#include "engines/cudnn/lower.hpp"

#include "engines/cudnn/sdpa_lower.hpp"

#include <algorithm>
#include <initializer_list>
#include <limits>
#include <map>
#include <utility>
#include <variant>

// `bool name(From v, To& out)`: maps dnngraph's enum `From` to cuDNN's `To`, whose values (listed
// by `list`, cudnn_api.hpp) bear the same names; NOT_SET maps to none.
#define DG_CUDNN_SAME_NAMES(name, From, To, list)   \
  bool name(From v, To& out) {                      \
    using Source = From;                            \
    using Target = To;                              \
    switch (v) {                                    \
      list(DG_CUDNN_SAME_NAME_CASE)                 \
      case Source::NOT_SET: return false;           \
    }                                               \
    return false;                                   \
  }
#define DG_CUDNN_SAME_NAME_CASE(value_name, value) \
  case Source::value_name: out = Target::value_name; return true;

namespace dnngraph::cudnn {
namespace {

bool is_conv(const OpAttr& a) {
  return std::holds_alternative<ConvFpropAttr>(a) || std::holds_alternative<ConvDgradAttr>(a) ||
         std::holds_alternative<ConvWgradAttr>(a);
}

bool is_scalar(const ir::Tensor& t) { return t.is_pass_by_value && t.volume() == 1; }

// How the partition's tensors are lifted to the ranks cuDNN takes.
struct Lift {
  bool conv_1d = false;  // insert a unit H at index 2 of every rank-3 tensor
  int min_rank = 3;      // otherwise: leading unit dims up to this rank
  int rank = 3;          // the partition's rank after lifting (scalars take it)
};

Lift plan_lift(const Partition& p) {
  Lift L;
  int max_rank = 0;
  for (size_t i = 0; i < p.nodes.size(); ++i) {
    const ir::Node& n = p.node(i);
    if (is_conv(n.attr) && p.tensor(n.inputs[0]).rank() == 3) L.conv_1d = true;
    for (const auto* list : {&n.inputs, &n.outputs})
      for (int id : *list)
        if (id >= 0 && !is_scalar(p.tensor(id))) max_rank = std::max(max_rank, p.tensor(id).rank());
  }
  L.rank = L.conv_1d ? 4 : std::max(L.min_rank, max_rank);
  return L;
}

void lift(const Lift& L, const ir::Tensor& t, std::vector<int64_t>& dims, std::vector<int64_t>& strides) {
  dims = t.dims;
  strides = t.strides;
  if (is_scalar(t)) {
    dims.assign(static_cast<size_t>(L.rank), 1);
    strides.assign(static_cast<size_t>(L.rank), 1);
    return;
  }
  if (L.conv_1d && dims.size() == 3) {
    // The unit H spans what W spans, so the layout (NCW or NWC) reads the same as NCHW or NHWC.
    dims.insert(dims.begin() + 2, 1);
    strides.insert(strides.begin() + 2, t.dims[2] * t.strides[2]);
    return;
  }
  while (static_cast<int>(dims.size()) < L.min_rank) {
    strides.insert(strides.begin(), dims.empty() ? 1 : dims[0] * strides[0]);
    dims.insert(dims.begin(), 1);
  }
}


// Per-spatial-dim conv parameters with defaults, lifted for 1D.
struct ConvGeometry {
  std::vector<int64_t> pre, post, stride, dilation;
};

template <class A>
ConvGeometry conv_geometry(const A& a, size_t spatial, bool lift_1d) {
  auto fill = [&](const std::vector<int64_t>& v, int64_t def) {
    std::vector<int64_t> out = v.empty() ? std::vector<int64_t>(spatial, def) : v;
    if (lift_1d) out.insert(out.begin(), def);
    return out;
  };
  return {fill(a.get_pre_padding(), 0), fill(a.get_post_padding(), 0), fill(a.get_stride(), 1),
          fill(a.get_dilation(), 1)};
}

bool to_pw_mode(PointwiseMode m, PwMode& out) {
  switch (m) {
#define DG_PW_CASE(name, value) \
  case PointwiseMode::name: out = PwMode::name; return true;
    DG_CUDNN_PW_MODES(DG_PW_CASE)
#undef DG_PW_CASE
    default: return false;  // NOT_SET and modes cuDNN does not have
  }
}

std::string no_cudnn_mode(const PointwiseAttr& a) {
  return "pointwise mode " + std::string(to_string(a.get_mode())) + " has no cuDNN counterpart";
}

bool is_backward(PointwiseMode m) { return kind_of(m) == PointwiseKind::ACTIVATION_BACKWARD; }

DG_CUDNN_SAME_NAMES(to_reduce_op, ReductionMode, ReduceOp, DG_CUDNN_REDUCE_OPS)

// The backend's names for one convolution operation: its descriptor type, the attributes of its
// two inputs and output (by node slot), of the convolution descriptor and of alpha and beta.
struct ConvOperation {
  Desc op;
  Attr input0, input1, output, conv_desc, alpha, beta;
  int x_slot;  // the input whose spatial rank the geometry takes
};

// cuDNN names an operation's attributes <prefix>_<operand>: (X, W) -> Y, (DY, W) -> DX, (DY, X) -> DW.
#define DG_CONV_OPERATION(desc, prefix, in0, in1, out, x_slot)                                            \
  ConvOperation{Desc::desc, Attr::prefix##_##in0, Attr::prefix##_##in1, Attr::prefix##_##out,            \
                Attr::prefix##_CONV_DESC, Attr::prefix##_ALPHA, Attr::prefix##_BETA, x_slot}
constexpr ConvOperation kConvFprop =
    DG_CONV_OPERATION(OPERATION_CONVOLUTION_FORWARD, OPERATION_CONVOLUTION_FORWARD, X, W, Y, 0);
constexpr ConvOperation kConvDgrad =
    DG_CONV_OPERATION(OPERATION_CONVOLUTION_BACKWARD_DATA, OPERATION_CONVOLUTION_BWD_DATA, DY, W, DX, 0);
constexpr ConvOperation kConvWgrad =
    DG_CONV_OPERATION(OPERATION_CONVOLUTION_BACKWARD_FILTER, OPERATION_CONVOLUTION_BWD_FILTER, DY, X, DW, 1);
#undef DG_CONV_OPERATION

// Builds the operation descriptors of one partition, reading tensor descriptors by IR id.
class OpLowering {
 public:
  OpLowering(const CudnnApi& api, const Partition& p, const Lift& L, Lowered& out,
             const std::map<int, BackendDescriptor>& tensors)
      : api_(api), p_(p), L_(L), out_(out), t_(tensors) {}

  Status node(const ir::Node& n) {
    comp_ = Dtype::FLOAT;
    if (!to_cudnn(n.compute_type, comp_)) comp_ = Dtype::FLOAT;
    return std::visit([&](const auto& a) { return lower(n, a); }, n.attr);
  }

 private:
  BackendDescriptor tensor(int id) const { return t_.at(id); }

  Descriptor& make(Desc type) {
    out_.descriptors.push_back(std::make_shared<Descriptor>(api_, type));
    return *out_.descriptors.back();
  }

  Status add_op(Descriptor& op) {
    if (auto s = op.finalize(); !s.ok()) return s;
    out_.ops.push_back(op.get());
    return {};
  }

  // Makes an operation descriptor of `type` with these descriptor attributes (set in order), then adds it.
  Status add_operation(Desc type, std::initializer_list<std::pair<Attr, BackendDescriptor>> operands) {
    Descriptor& op = make(type);
    for (const auto& [attr, desc] : operands) op.set_desc(attr, desc);
    return add_op(op);
  }

  // alpha = 1, beta = 0, in the precision cuDNN expects for the compute type.
  Descriptor& scale_pair(Descriptor& op, Attr alpha, Attr beta) {
    if (comp_ == Dtype::DOUBLE) return op.set_double(alpha, 1.0).set_double(beta, 0.0);
    return op.set_float(alpha, 1.0f).set_float(beta, 0.0f);
  }
  // Pointwise parameters are DOUBLE attributes whatever the math precision (as the cuDNN frontend sets them).
  static Descriptor& real(Descriptor& d, Attr a, double v) { return d.set_double(a, v); }

  template <class A>
  Status conv_desc(const ir::Node& n, const A& a, int x_slot, BackendDescriptor& out) {
    const size_t spatial = p_.tensor(n.inputs[static_cast<size_t>(x_slot)]).dims.size() - 2;
    const ConvGeometry g = conv_geometry(a, spatial, L_.conv_1d);
    Descriptor& d = make(Desc::CONVOLUTION);
    d.set_dtype(Attr::CONVOLUTION_COMP_TYPE, comp_)
        .set_enum(Attr::CONVOLUTION_CONV_MODE, AttrType::CONVOLUTION_MODE, static_cast<int>(ConvMode::CROSS_CORRELATION))
        .set_i64(Attr::CONVOLUTION_SPATIAL_DIMS, static_cast<int64_t>(g.stride.size()))
        .set_i64s(Attr::CONVOLUTION_PRE_PADDINGS, g.pre)
        .set_i64s(Attr::CONVOLUTION_POST_PADDINGS, g.post)
        .set_i64s(Attr::CONVOLUTION_FILTER_STRIDES, g.stride)
        .set_i64s(Attr::CONVOLUTION_DILATIONS, g.dilation);
    if (auto s = d.finalize(); !s.ok()) return s;
    out = d.get();
    return {};
  }

  Status lower(const ir::Node& n, const ConvFpropAttr& a) { return lower_conv(n, a, kConvFprop); }
  Status lower(const ir::Node& n, const ConvDgradAttr& a) { return lower_conv(n, a, kConvDgrad); }
  Status lower(const ir::Node& n, const ConvWgradAttr& a) { return lower_conv(n, a, kConvWgrad); }

  template <class A>
  Status lower_conv(const ir::Node& n, const A& a, const ConvOperation& c) {
    BackendDescriptor conv = nullptr;
    if (auto s = conv_desc(n, a, c.x_slot, conv); !s.ok()) return s;
    Descriptor& op = make(c.op);
    op.set_desc(c.input0, tensor(n.inputs[0]))
        .set_desc(c.input1, tensor(n.inputs[1]))
        .set_desc(c.output, tensor(n.outputs[0]))
        .set_desc(c.conv_desc, conv);
    scale_pair(op, c.alpha, c.beta);
    return add_op(op);
  }

  Status lower(const ir::Node& n, const MatmulAttr&) {
    Descriptor& mm = make(Desc::MATMUL);
    if (auto s = mm.set_dtype(Attr::MATMUL_COMP_TYPE, comp_).finalize(); !s.ok()) return s;
    return add_operation(Desc::OPERATION_MATMUL, {{Attr::OPERATION_MATMUL_ADESC, tensor(n.inputs[0])},
                                                  {Attr::OPERATION_MATMUL_BDESC, tensor(n.inputs[1])},
                                                  {Attr::OPERATION_MATMUL_CDESC, tensor(n.outputs[0])},
                                                  {Attr::OPERATION_MATMUL_DESC, mm.get()}});
  }

  Status lower(const ir::Node& n, const PointwiseAttr& a) {
    PwMode mode = PwMode::IDENTITY;
    if (!to_pw_mode(a.get_mode(), mode))
      return {ErrorCode::GRAPH_NOT_SUPPORTED, "cudnn: " + ir::describe(n) + ": " + no_cudnn_mode(a)};
    Descriptor& pw = make(Desc::POINTWISE);
    pw.set_enum(Attr::POINTWISE_MODE, AttrType::POINTWISE_MODE, static_cast<int>(mode))
        .set_dtype(Attr::POINTWISE_MATH_PREC, comp_);
    switch (a.get_mode()) {
      case PointwiseMode::RELU_FWD:
      case PointwiseMode::RELU_BWD:
        real(pw, Attr::POINTWISE_RELU_LOWER_CLIP, a.get_relu_lower_clip());
        // No upper clip: the largest value of the math precision, as the cuDNN frontend does.
        real(pw, Attr::POINTWISE_RELU_UPPER_CLIP,
             a.get_relu_upper_clip().value_or(comp_ == Dtype::DOUBLE ? std::numeric_limits<double>::max()
                                                                     : std::numeric_limits<float>::max()));
        if (a.get_relu_lower_clip_slope() != 0.0)
          real(pw, Attr::POINTWISE_RELU_LOWER_CLIP_SLOPE, a.get_relu_lower_clip_slope());
        break;
      case PointwiseMode::ELU_FWD:
      case PointwiseMode::ELU_BWD: real(pw, Attr::POINTWISE_ELU_ALPHA, a.get_elu_alpha()); break;
      case PointwiseMode::SOFTPLUS_FWD:
      case PointwiseMode::SOFTPLUS_BWD: real(pw, Attr::POINTWISE_SOFTPLUS_BETA, a.get_softplus_beta()); break;
      case PointwiseMode::SWISH_FWD:
      case PointwiseMode::SWISH_BWD: real(pw, Attr::POINTWISE_SWISH_BETA, a.get_swish_beta()); break;
      case PointwiseMode::GEN_INDEX: pw.set_i64(Attr::POINTWISE_AXIS, a.get_axis()); break;
      default: break;
    }
    if (auto s = pw.finalize(); !s.ok()) return s;
    Descriptor& op = make(Desc::OPERATION_POINTWISE);
    op.set_desc(Attr::OPERATION_POINTWISE_PW_DESCRIPTOR, pw.get());
    if (is_backward(a.get_mode())) {  // (dy, x) -> dx
      op.set_desc(Attr::OPERATION_POINTWISE_DYDESC, tensor(n.inputs[0]))
          .set_desc(Attr::OPERATION_POINTWISE_XDESC, tensor(n.inputs[1]))
          .set_desc(Attr::OPERATION_POINTWISE_DXDESC, tensor(n.outputs[0]));
      return add_op(op);
    }
    op.set_desc(Attr::OPERATION_POINTWISE_XDESC, tensor(n.inputs[0]));
    if (n.inputs.size() > 1) op.set_desc(Attr::OPERATION_POINTWISE_BDESC, tensor(n.inputs[1]));
    if (n.inputs.size() > 2) op.set_desc(Attr::OPERATION_POINTWISE_TDESC, tensor(n.inputs[2]));
    op.set_desc(Attr::OPERATION_POINTWISE_YDESC, tensor(n.outputs[0]));
    return add_op(op);
  }

  Status lower(const ir::Node& n, const ReductionAttr& a) {
    ReduceOp r = ReduceOp::ADD;
    to_reduce_op(a.get_mode(), r);
    Descriptor& red = make(Desc::REDUCTION);
    red.set_enum(Attr::REDUCTION_OPERATOR, AttrType::REDUCTION_OPERATOR_TYPE, static_cast<int>(r))
        .set_dtype(Attr::REDUCTION_COMP_TYPE, comp_);
    if (auto s = red.finalize(); !s.ok()) return s;
    return add_operation(Desc::OPERATION_REDUCTION, {{Attr::OPERATION_REDUCTION_XDESC, tensor(n.inputs[0])},
                                                     {Attr::OPERATION_REDUCTION_YDESC, tensor(n.outputs[0])},
                                                     {Attr::OPERATION_REDUCTION_DESC, red.get()}});
  }

  // CUDNN_GENSTATS_SUM_SQSUM (0), the one mode: per-channel sum and sum of squares.
  Status lower(const ir::Node& n, const GenstatsAttr&) {
    Descriptor& op = make(Desc::OPERATION_GEN_STATS);
    op.set_enum(Attr::OPERATION_GENSTATS_MODE, AttrType::GENSTATS_MODE, 0)
        .set_dtype(Attr::OPERATION_GENSTATS_MATH_PREC, comp_)
        .set_desc(Attr::OPERATION_GENSTATS_XDESC, tensor(n.inputs[0]))
        .set_desc(Attr::OPERATION_GENSTATS_SUMDESC, tensor(n.outputs[0]))
        .set_desc(Attr::OPERATION_GENSTATS_SQSUMDESC, tensor(n.outputs[1]));
    return add_op(op);
  }

  template <class A>
  Status lower(const ir::Node& n, const A&) {
    return {ErrorCode::GRAPH_NOT_SUPPORTED, "cudnn: " + ir::describe(n) + " has no cuDNN lowering"};
  }

  const CudnnApi& api_;
  const Partition& p_;
  const Lift& L_;
  Lowered& out_;
  const std::map<int, BackendDescriptor>& t_;
  Dtype comp_ = Dtype::FLOAT;
};

}  // namespace

DG_CUDNN_SAME_NAMES(to_cudnn, DataType, Dtype, DG_CUDNN_DTYPES)

std::string lowering_gap(const Partition& p) {
  for (size_t i = 0; i < p.nodes.size(); ++i) {
    const ir::Node& n = p.node(i);
    const bool lowered = is_conv(n.attr) || std::holds_alternative<MatmulAttr>(n.attr) ||
                         std::holds_alternative<PointwiseAttr>(n.attr) ||
                         std::holds_alternative<ReductionAttr>(n.attr) || std::holds_alternative<SdpaAttr>(n.attr) ||
                         std::holds_alternative<GenstatsAttr>(n.attr);
    if (!lowered)
      return ir::describe(n) + ": dnngraph's cudnn engine lowers conv_fprop/dgrad/wgrad, matmul, pointwise, "
                            "reduction, genstats and sdpa nodes only";
    PwMode mode;
    if (const auto* pw = std::get_if<PointwiseAttr>(&n.attr); pw && !to_pw_mode(pw->get_mode(), mode))
      return ir::describe(n) + ": " + no_cudnn_mode(*pw);
    for (const auto* list : {&n.inputs, &n.outputs})
      for (int id : *list) {
        Dtype d;
        if (id >= 0 && !to_cudnn(p.tensor(id).dtype, d))
          return ir::describe(n) + ", tensor '" + p.tensor(id).name + "': data type " +
                 std::string(to_string(p.tensor(id).dtype)) + " has no cuDNN counterpart";
        if (id >= 0 && p.tensor(id).rank() > 8)
          return ir::describe(n) + ", tensor '" + p.tensor(id).name + "': rank above cuDNN's 8 dims";
      }
    if (is_conv(n.attr) && p.tensor(n.inputs[0]).rank() < 3)
      return ir::describe(n) + ": convolution tensors of rank below 3";
  }
  return {};
}

std::string unsupported_reason(const Partition& p) {
  if (auto gap = lowering_gap(p); !gap.empty()) return gap;
  if (const ir::Node* n = sdpa_node(p)) return sdpa_unsupported_reason(p, *n);
  // What the engine offers is what was checked against ref on an H200 (cuDNN 9.14 / 9.19): conv_fprop
  // and matmul anchors with pointwise epilogues, conv_dgrad and conv_wgrad on their own
  // (CudnnGpu.DgradAndWgradEveryPlanMatchesRef). Lowered but not offered, with why:
  //  - partitions without an anchor: in a split FLOAT matmul chain, cuDNN's plans for the lone
  //    matmul (engine 0) and the pointwise-only pieces (engine 1) gave wrong results;
  //  - FLOAT matmuls: their one full-precision config was that engine 0;
  //  - conv_dgrad/conv_wgrad with other nodes, reductions (AMAX) and genstats: not yet checked against ref on a GPU;
  //  - types other than HALF, BFLOAT16, FLOAT (cuDNN took an INT64 matmul with engine 0).
  const ir::Node* anchor = nullptr;
  for (size_t i = 0; i < p.nodes.size(); ++i) {
    const ir::Node& n = p.node(i);
    const bool lone_grad = is_conv(n.attr) && p.nodes.size() == 1;
    if (std::holds_alternative<ConvFpropAttr>(n.attr) || std::holds_alternative<MatmulAttr>(n.attr) || lone_grad)
      anchor = &n;
    else if (is_conv(n.attr) || std::holds_alternative<ReductionAttr>(n.attr) ||
             std::holds_alternative<GenstatsAttr>(n.attr))
      return ir::describe(n) + ": lowered, but not yet checked against ref on a GPU, so not offered";
  }
  if (!anchor)
    return "node '" + p.node(0).name + "': the partition has no conv or matmul (cuDNN's pointwise-only plans "
           "mismatched ref on an H200; cuda_pointwise_jit serves pointwise graphs)";
  const DataType t = p.tensor(anchor->inputs[0]).dtype;
  if (t != DataType::HALF && t != DataType::BFLOAT16 && t != DataType::FLOAT)
    return ir::describe(*anchor) + ": input type " + std::string(to_string(t)) +
           " (the engine offers cuDNN for HALF, BFLOAT16 and FLOAT, the types checked against ref)";
  if (t == DataType::FLOAT && std::holds_alternative<MatmulAttr>(anchor->attr))
    return ir::describe(*anchor) + ": a FLOAT matmul (cuDNN's one full-precision config for it mismatched ref on an "
                                "H200; the own GEMM engines and cublaslt serve FLOAT matmuls)";
  return {};
}

Status plan_tensors(const Partition& p, std::vector<TensorPlan>& out) {
  out.clear();
  const Lift L = plan_lift(p);
  std::vector<bool> seen(p.graph->tensors.size(), false);
  auto add = [&](int id) -> Status {
    if (id < 0 || seen[static_cast<size_t>(id)]) return {};
    seen[static_cast<size_t>(id)] = true;
    const ir::Tensor& t = p.tensor(id);
    TensorPlan tp;
    tp.id = id;
    tp.uid = id + 1;
    if (!to_cudnn(t.dtype, tp.dtype))
      return {ErrorCode::GRAPH_NOT_SUPPORTED, "cudnn: tensor '" + t.name + "' has no data type"};
    lift(L, t, tp.dims, tp.strides);
    tp.by_value = t.is_pass_by_value;
    tp.is_virtual = p.is_internal(id);
    out.push_back(std::move(tp));
    return {};
  };
  for (size_t i = 0; i < p.nodes.size(); ++i) {
    const ir::Node& n = p.node(i);
    for (int id : n.inputs)
      if (auto s = add(id); !s.ok()) return s;
    for (int id : n.outputs)
      if (auto s = add(id); !s.ok()) return s;
  }
  if (const ir::Node* n = sdpa_node(p)) sdpa_tensor_plans(p, *n, out);
  return {};
}

PackLayout pack_layout(const std::vector<TensorPlan>& tensors) {
  PackLayout pl;
  for (const auto& t : tensors) {
    if (t.is_virtual) continue;
    pl.ids.push_back(t.id);
    pl.uids.push_back(t.uid);
    pl.by_value.push_back(t.by_value);
    pl.constants.push_back(t.value);
  }
  return pl;
}

Status lower_partition(const CudnnApi& api, const Partition& p, Lowered& out) {
  if (auto why = lowering_gap(p); !why.empty()) return {ErrorCode::GRAPH_NOT_SUPPORTED, "cudnn: " + why};
  if (auto s = plan_tensors(p, out.tensors); !s.ok()) return s;
  out.pack = pack_layout(out.tensors);
  std::map<int, BackendDescriptor> by_id;
  std::map<int64_t, BackendDescriptor> by_uid;
  for (const auto& t : out.tensors) {
    out.descriptors.push_back(std::make_shared<Descriptor>(api, Desc::TENSOR));
    Descriptor& d = *out.descriptors.back();
    d.set_dtype(Attr::TENSOR_DATA_TYPE, t.dtype)
        .set_i64s(Attr::TENSOR_DIMENSIONS, t.dims)
        .set_i64s(Attr::TENSOR_STRIDES, t.strides)
        .set_i64(Attr::TENSOR_UNIQUE_ID, t.uid)
        .set_i64(Attr::TENSOR_BYTE_ALIGNMENT, kAlignment)
        .set_bool(Attr::TENSOR_IS_VIRTUAL, t.is_virtual);
    if (t.by_value) d.set_bool(Attr::TENSOR_IS_BY_VALUE, true);
    if (auto s = d.finalize(); !s.ok())
      return {s.code(), s.message() + " (tensor '" + (t.id >= 0 ? p.tensor(t.id).name : "constant") + "')"};
    if (t.id >= 0) by_id[t.id] = d.get();
    by_uid[t.uid] = d.get();
  }
  if (const ir::Node* n = sdpa_node(p)) return lower_sdpa(api, p, *n, by_uid, out);
  const Lift L = plan_lift(p);
  OpLowering ops(api, p, L, out, by_id);
  for (size_t i = 0; i < p.nodes.size(); ++i)
    if (auto s = ops.node(p.node(i)); !s.ok()) return {s.code(), s.message() + " (" + ir::describe(p.node(i)) + ")"};
  return {};
}

}  // namespace dnngraph::cudnn
