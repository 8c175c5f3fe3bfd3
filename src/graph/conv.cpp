// Convolutions: conv_fprop (X, W -> Y), conv_dgrad (DY, W -> DX, the transposed convolution) and
// conv_wgrad (DY, X -> DW). Dims are N, C, spatial... (ranks 3 to 5); strides pick the layout.
// Groups follow from channel counts: groups = C / W.C.
#include <string>

#include <nlohmann/json.hpp>

#include "core/checked.hpp"
#include "graph/families.hpp"
#include "graph/infer_util.hpp"
#include "graph/ir.hpp"
#include "graph/json_fields.hpp"

namespace dnngraph {
namespace {

// Padding, stride and dilation with one value per spatial dim, defaults filled in.
struct ConvParams {
  std::vector<int64_t> pre, post, stride, dilation;
};

std::string str(int64_t v) { return std::to_string(v); }

// Rows the dilated kernel reaches past its first: dilation * (k - 1); INT64_MAX when that overflows.
int64_t kernel_reach(const ConvParams& p, size_t i, int64_t k) {
  int64_t reach = 0;
  return checked::mul(p.dilation[i], k - 1, reach) ? reach : INT64_MAX;
}

// Forward output size of one spatial dim; may be < 1 when the dilated kernel does not fit. Dims,
// paddings and strides are below 2^48 (validated), so only the kernel's reach needs checking.
int64_t forward_size(const ConvParams& p, size_t i, int64_t in, int64_t k) {
  const int64_t room = in + p.pre[i] + p.post[i] - 1;
  const int64_t reach = kernel_reach(p, i, k);
  return reach > room ? 0 : (room - reach) / p.stride[i] + 1;
}

// One value per spatial dim, or empty for `fallback`.
Status per_spatial(const NodeSpec& node, const std::vector<int64_t>& v, size_t nsp, int64_t fallback,
                   const char* what, std::vector<int64_t>& out) {
  if (v.empty()) {
    out.assign(nsp, fallback);
    return {};
  }
  if (v.size() != nsp)
    return node_error(ErrorCode::INVALID_VALUE, node, nullptr,
                      std::string(what) + " has " + str(static_cast<int64_t>(v.size())) + " values but there are " +
                          str(static_cast<int64_t>(nsp)) + " spatial dims (give one per spatial dim, or none)");
  out = v;
  return {};
}

template <class Attr>
Status conv_params(const Attr& attr, const NodeSpec& node, size_t nsp, ConvParams& p) {
  if (auto s = per_spatial(node, attr.get_pre_padding(), nsp, 0, "pre-padding", p.pre); !s.ok()) return s;
  if (auto s = per_spatial(node, attr.get_post_padding(), nsp, 0, "post-padding", p.post); !s.ok()) return s;
  if (auto s = per_spatial(node, attr.get_stride(), nsp, 1, "stride", p.stride); !s.ok()) return s;
  if (auto s = per_spatial(node, attr.get_dilation(), nsp, 1, "dilation", p.dilation); !s.ok()) return s;
  for (size_t i = 0; i < nsp; ++i) {
    if (p.pre[i] < 0 || p.post[i] < 0)
      return node_error(ErrorCode::INVALID_VALUE, node, nullptr,
                        "padding " + dims_to_string(p.pre) + "/" + dims_to_string(p.post) + " must not be negative");
    if (p.stride[i] < 1)
      return node_error(ErrorCode::INVALID_VALUE, node, nullptr,
                        "stride " + dims_to_string(p.stride) + " must be >= 1 in every spatial dim");
    if (p.dilation[i] < 1)
      return node_error(ErrorCode::INVALID_VALUE, node, nullptr,
                        "dilation " + dims_to_string(p.dilation) + " must be >= 1 in every spatial dim");
    for (const auto* v : {&p.pre, &p.post, &p.stride, &p.dilation})
      if ((*v)[i] > checked::kMaxExtent)
        return node_error(ErrorCode::INVALID_VALUE, node, nullptr,
                          "padding, stride and dilation must be at most 2^48; got " + dims_to_string(*v));
  }
  return {};
}

// Both inputs present and well formed, rank 3..5, equal ranks; `out`, if the user set its dims, too.
Status check_operands(const NodeSpec& node, const char* a_name, const char* b_name) {
  const TensorAttr* a = node.inputs.size() > 0 ? node.inputs[0].get() : nullptr;
  const TensorAttr* b = node.inputs.size() > 1 ? node.inputs[1].get() : nullptr;
  if (auto s = check_input(node, a, a_name); !s.ok()) return s;
  if (auto s = check_input(node, b, b_name); !s.ok()) return s;
  const size_t rank = a->get_dim().size();
  if (rank < 3 || rank > 5)
    return node_error(ErrorCode::INVALID_VALUE, node, a,
                      "rank " + str(static_cast<int64_t>(rank)) +
                          " is outside 3..5 (dims are N, C and 1 to 3 spatial dims)");
  if (b->get_dim().size() != rank)
    return node_error(ErrorCode::SHAPE_DEDUCTION_FAILED, node, b,
                      "rank " + str(static_cast<int64_t>(b->get_dim().size())) + " differs from " + a_name +
                          "'s rank " + str(static_cast<int64_t>(rank)));
  const TensorAttr* out = node.outputs[0].get();
  if (!out->get_dim().empty() && out->get_dim().size() != rank)
    return node_error(ErrorCode::SHAPE_DEDUCTION_FAILED, node, out,
                      "rank " + str(static_cast<int64_t>(out->get_dim().size())) + " differs from " + a_name +
                          "'s rank " + str(static_cast<int64_t>(rank)));
  return {};
}

bool is_8bit_integer(DataType t) { return t == DataType::INT8 || t == DataType::UINT8; }

// The two inputs share a type, or are both floating point: each is read into the compute type, so
// a FLOAT prologue (scale, bias, ReLU at the intermediate type) may feed a HALF wgrad, as in the
// frontend; integer inputs must match (their math is the integer product). Neither is BOOLEAN nor
// INT64; 8-bit integer inputs accumulate into INT32 or FLOAT outputs. Run after fill_output so the
// output's type is known. Engines that need equal types say so in their reasons.
Status check_types(const NodeSpec& node) {
  const TensorAttr* a = node.inputs[0].get();
  const TensorAttr* b = node.inputs[1].get();
  const TensorAttr* out = node.outputs[0].get();
  const DataType t = a->get_data_type();
  const DataType bt = b->get_data_type();
  if (bt != t && !(is_floating(bt) && is_floating(t)))
    return node_error(ErrorCode::INVALID_DATA_TYPE, node, b,
                      "data type " + std::string(to_string(bt)) + " differs from the " + std::string(to_string(t)) +
                          " of '" + a->get_name() +
                          "' (convolution inputs must share a data type unless both are floating point)");
  for (const TensorAttr* x : {a, out}) {
    const DataType xt = x->get_data_type();
    if (xt == DataType::BOOLEAN || xt == DataType::INT64)
      return node_error(ErrorCode::INVALID_DATA_TYPE, node, x,
                        "data type " + std::string(to_string(xt)) + " is not allowed for convolutions");
  }
  const DataType ot = out->get_data_type();
  if (is_8bit_integer(t) && ot != DataType::INT32 && ot != DataType::FLOAT)
    return node_error(ErrorCode::INVALID_DATA_TYPE, node, out,
                      "data type " + std::string(to_string(ot)) + " is not allowed for " + std::string(to_string(t)) +
                          " inputs (the output must be INT32 or FLOAT)");
  return {};
}

// groups = c / c_per_group, which must divide exactly, and k must split into the groups.
Status conv_groups(const NodeSpec& node, const TensorAttr* chan_tensor, int64_t c, const TensorAttr* filter,
                   int64_t c_per_group, int64_t k, int64_t& groups) {
  // A user's output dims are not checked before inference: a DX of 0 channels made groups 0 and
  // k % groups a division by zero (found by fuzz_graph_json).
  if (c <= 0)
    return node_error(ErrorCode::SHAPE_DEDUCTION_FAILED, node, chan_tensor,
                      "channel count " + str(c) + " must be positive");
  if (c_per_group <= 0)
    return node_error(ErrorCode::SHAPE_DEDUCTION_FAILED, node, filter,
                      "the filter's channels per group " + str(c_per_group) + " must be positive");
  if (c % c_per_group != 0)
    return node_error(ErrorCode::SHAPE_DEDUCTION_FAILED, node, chan_tensor,
                      "channel count " + str(c) + " is not a multiple of the filter's channels per group " +
                          str(c_per_group) + " (groups = C / filter C must be whole)");
  groups = c / c_per_group;
  if (k % groups != 0)
    return node_error(ErrorCode::SHAPE_DEDUCTION_FAILED, node, filter,
                      "output channel count K=" + str(k) + " is not divisible by groups=" + str(groups));
  return {};
}

// Every spatial dim: forward_size(in, k) must equal out. `in_t` names the tensor blamed.
Status check_forward_relation(const NodeSpec& node, const TensorAttr* blamed, const ConvParams& p,
                              const std::vector<int64_t>& in, const std::vector<int64_t>& k,
                              const std::vector<int64_t>& out, const char* in_name, const char* out_name) {
  const size_t nsp = in.size() - 2;
  std::vector<int64_t> fwd(nsp);
  for (size_t i = 0; i < nsp; ++i) fwd[i] = forward_size(p, i, in[i + 2], k[i + 2]);
  if (fwd != std::vector<int64_t>(out.begin() + 2, out.end()))
    return node_error(ErrorCode::SHAPE_DEDUCTION_FAILED, node, blamed,
                      std::string("a convolution over ") + in_name + "'s spatial dims " +
                          dims_to_string({in.begin() + 2, in.end()}) + " gives " + dims_to_string(fwd) + ", not " +
                          out_name + "'s " + dims_to_string({out.begin() + 2, out.end()}));
  return {};
}

// ---- inference

Status infer(const ConvFpropAttr& attr, NodeSpec& node, const GraphDefaults& defaults) {
  if (auto s = check_operands(node, "X", "W"); !s.ok()) return s;
  const TensorAttr* x = node.inputs[0].get();
  const TensorAttr* w = node.inputs[1].get();
  const auto& xd = x->get_dim();
  const auto& wd = w->get_dim();
  const size_t nsp = xd.size() - 2;
  ConvParams p;
  if (auto s = conv_params(attr, node, nsp, p); !s.ok()) return s;
  int64_t groups = 1;
  if (auto s = conv_groups(node, x, xd[1], w, wd[1], wd[0], groups); !s.ok()) return s;
  std::vector<int64_t> yd = {xd[0], wd[0]};
  for (size_t i = 0; i < nsp; ++i) {
    const int64_t o = forward_size(p, i, xd[i + 2], wd[i + 2]);
    if (o < 1)
      return node_error(ErrorCode::SHAPE_DEDUCTION_FAILED, node, x,
                        "spatial dim " + str(static_cast<int64_t>(i)) + ": input " + str(xd[i + 2]) + " padded by " +
                            str(p.pre[i]) + "+" + str(p.post[i]) + " is smaller than the dilated kernel " +
                            (kernel_reach(p, i, wd[i + 2]) == INT64_MAX ? std::string("(beyond int64)")
                                                                        : str(kernel_reach(p, i, wd[i + 2]) + 1)) +
                            " (output size would be < 1)");
    yd.push_back(o);
  }
  if (auto s = fill_output(node, *node.outputs[0], yd, x->get_stride(), defaults, x->get_data_type()); !s.ok())
    return s;
  return check_types(node);
}

Status infer(const ConvDgradAttr& attr, NodeSpec& node, const GraphDefaults& defaults) {
  if (auto s = check_operands(node, "DY", "W"); !s.ok()) return s;
  const TensorAttr* dy = node.inputs[0].get();
  const TensorAttr* w = node.inputs[1].get();
  TensorAttr& dx = *node.outputs[0];
  const auto& dyd = dy->get_dim();
  const auto& wd = w->get_dim();
  const size_t nsp = dyd.size() - 2;
  ConvParams p;
  if (auto s = conv_params(attr, node, nsp, p); !s.ok()) return s;
  if (dyd[1] != wd[0])
    return node_error(ErrorCode::SHAPE_DEDUCTION_FAILED, node, w,
                      "output channels K=" + str(wd[0]) + " differ from DY's channel count " + str(dyd[1]));
  std::vector<int64_t> dxd;
  if (!dx.get_dim().empty()) {
    // The user's DX picks among the input sizes a strided forward conv maps onto DY's size.
    dxd = dx.get_dim();
    int64_t groups = 1;
    if (dxd[0] != dyd[0])
      return node_error(ErrorCode::SHAPE_DEDUCTION_FAILED, node, &dx,
                        "batch " + str(dxd[0]) + " differs from DY's batch " + str(dyd[0]));
    if (auto s = conv_groups(node, &dx, dxd[1], w, wd[1], wd[0], groups); !s.ok()) return s;
    if (auto s = check_forward_relation(node, &dx, p, dxd, wd, dyd, "DX", "DY"); !s.ok()) return s;
  } else {
    // Without DX dims the channel count is W's: groups = 1.
    dxd = {dyd[0], wd[1]};
    for (size_t i = 0; i < nsp; ++i) {
      // (dy - 1) * stride - pre - post + reach + 1, where the product and the reach may overflow.
      int64_t in = 0;
      const int64_t reach = kernel_reach(p, i, wd[i + 2]);
      if (!checked::mul_add(dyd[i + 2] - 1, p.stride[i], reach == INT64_MAX ? reach : reach + 1, in) ||
          in > checked::kMaxExtent)
        return node_error(ErrorCode::SHAPE_DEDUCTION_FAILED, node, dy,
                          "spatial dim " + str(static_cast<int64_t>(i)) +
                              ": the transposed convolution's output would be larger than 2^48");
      in -= p.pre[i] + p.post[i];
      if (in < 1)
        return node_error(ErrorCode::SHAPE_DEDUCTION_FAILED, node, dy,
                          "spatial dim " + str(static_cast<int64_t>(i)) + ": the padding " + str(p.pre[i]) + "+" +
                              str(p.post[i]) + " exceeds the transposed convolution's extent (DX size would be " +
                              str(in) + " < 1)");
      dxd.push_back(in);
    }
  }
  if (auto s = fill_output(node, dx, dxd, dy->get_stride(), defaults, dy->get_data_type()); !s.ok()) return s;
  return check_types(node);
}

// Largest kernel size k with forward_size(in, k) == out, or 0 when none exists.
int64_t largest_kernel(const ConvParams& p, size_t i, int64_t in, int64_t out) {
  int64_t stepped = 0;  // (out - 1) * stride
  if (!checked::mul(out - 1, p.stride[i], stepped)) return 0;
  const int64_t room = in + p.pre[i] + p.post[i] - 1 - stepped;
  if (room < 0) return 0;
  const int64_t k = room / p.dilation[i] + 1;
  return forward_size(p, i, in, k) == out ? k : 0;
}

Status infer(const ConvWgradAttr& attr, NodeSpec& node, const GraphDefaults& defaults) {
  if (auto s = check_operands(node, "DY", "X"); !s.ok()) return s;
  const TensorAttr* dy = node.inputs[0].get();
  const TensorAttr* x = node.inputs[1].get();
  TensorAttr& dw = *node.outputs[0];
  const auto& dyd = dy->get_dim();
  const auto& xd = x->get_dim();
  const size_t nsp = dyd.size() - 2;
  ConvParams p;
  if (auto s = conv_params(attr, node, nsp, p); !s.ok()) return s;
  if (dyd[0] != xd[0])
    return node_error(ErrorCode::SHAPE_DEDUCTION_FAILED, node, x,
                      "batch " + str(xd[0]) + " differs from DY's batch " + str(dyd[0]));
  std::vector<int64_t> dwd;
  if (!dw.get_dim().empty()) {
    dwd = dw.get_dim();
    if (dwd[0] != dyd[1])
      return node_error(ErrorCode::SHAPE_DEDUCTION_FAILED, node, &dw,
                        "output channels K=" + str(dwd[0]) + " differ from DY's channel count " + str(dyd[1]));
    int64_t groups = 1;
    if (auto s = conv_groups(node, x, xd[1], &dw, dwd[1], dwd[0], groups); !s.ok()) return s;
    if (auto s = check_forward_relation(node, &dw, p, xd, dwd, dyd, "X", "DY"); !s.ok()) return s;
  } else {
    // Without DW dims: groups = 1 and the largest kernel the sizes allow.
    dwd = {dyd[1], xd[1]};
    for (size_t i = 0; i < nsp; ++i) {
      const int64_t k = largest_kernel(p, i, xd[i + 2], dyd[i + 2]);
      if (k < 1)
        return node_error(ErrorCode::SHAPE_DEDUCTION_FAILED, node, dy,
                          "spatial dim " + str(static_cast<int64_t>(i)) + ": no kernel size maps X's " +
                              str(xd[i + 2]) + " onto DY's " + str(dyd[i + 2]) + " with padding " + str(p.pre[i]) +
                              "+" + str(p.post[i]) + ", stride " + str(p.stride[i]) + ", dilation " +
                              str(p.dilation[i]) + " (set DW's dims)");
      dwd.push_back(k);
    }
  }
  if (auto s = fill_output(node, dw, dwd, x->get_stride(), defaults, x->get_data_type()); !s.ok()) return s;
  return check_types(node);
}

// ---- JSON fields: both paddings, stride and dilation, always written

template <class A>
void write_conv(const A& a, nlohmann::json& j) {
  j["pre_padding"] = a.get_pre_padding();
  j["post_padding"] = a.get_post_padding();
  j["stride"] = a.get_stride();
  j["dilation"] = a.get_dilation();
}

template <class A>
void read_conv(JsonFields& f, A& a) {
  // "padding" sets both sides, as set_padding does; the writer always writes the two sides.
  if (auto v = f.integers("padding")) a.set_padding(*v);
  if (auto v = f.integers("pre_padding")) a.set_pre_padding(*v);
  if (auto v = f.integers("post_padding")) a.set_post_padding(*v);
  if (auto v = f.integers("stride")) a.set_stride(*v);
  if (auto v = f.integers("dilation")) a.set_dilation(*v);
}

// ---- FLOPs: 2 per multiply-add

double volume(const std::vector<int64_t>& dims, size_t from) {
  double v = 1;
  for (size_t i = from; i < dims.size(); ++i) v *= static_cast<double>(dims[i]);
  return v;
}

// Each output element sums over the input channels of its group and the filter window.
double fprop_flops(const ir::Graph& g, const ir::Node& n) {
  return 2.0 * static_cast<double>(g.tensor(n.outputs[0]).volume()) * volume(g.tensor(n.inputs[1]).dims, 1);
}

// Each DX element sums over the K / groups output channels of its group and the filter window.
double dgrad_flops(const ir::Graph& g, const ir::Node& n) {
  const auto& w = g.tensor(n.inputs[1]).dims;
  const double groups = static_cast<double>(g.tensor(n.outputs[0]).dims[1]) / static_cast<double>(w[1]);
  return 2.0 * static_cast<double>(g.tensor(n.outputs[0]).volume()) * static_cast<double>(w[0]) / groups *
         volume(w, 2);
}

// Each DW element sums over the batch and DY's spatial positions.
double wgrad_flops(const ir::Graph& g, const ir::Node& n) {
  const auto& dy = g.tensor(n.inputs[0]).dims;
  return 2.0 * static_cast<double>(g.tensor(n.outputs[0]).volume()) * static_cast<double>(dy[0]) * volume(dy, 2);
}

// The three convolutions: two inputs, one output, the same fields.
template <class A, Status (*Infer)(const A&, NodeSpec&, const GraphDefaults&)>
OpTraits conv_traits(std::string_view name, std::vector<std::string_view> inputs, std::string_view output,
                     std::string_view pattern, double (*flops)(const ir::Graph&, const ir::Node&)) {
  return typed<A, Infer, write_conv<A>, read_conv<A>>({.name = name, .inputs = std::move(inputs), .required_inputs = 2,
                                                       .outputs = {output}, .fusion_pattern = pattern, .flops = flops});
}

}  // namespace

const OpTraits& traits(OpTag<ConvFpropAttr>) {
  static const auto t = conv_traits<ConvFpropAttr, infer>("conv_fprop", {"X", "W"}, "Y", "conv_epilogue", fprop_flops);
  return t;
}

const OpTraits& traits(OpTag<ConvDgradAttr>) {
  static const auto t =
      conv_traits<ConvDgradAttr, infer>("conv_dgrad", {"DY", "W"}, "DX", "conv_epilogue", dgrad_flops);
  return t;
}

const OpTraits& traits(OpTag<ConvWgradAttr>) {
  static const auto t = conv_traits<ConvWgradAttr, infer>("conv_wgrad", {"DY", "X"}, "DW", "single_op", wgrad_flops);
  return t;
}

}  // namespace dnngraph
