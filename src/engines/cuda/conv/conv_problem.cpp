#include "engines/cuda/conv/conv_problem.hpp"

#include "engines/cuda/common/tensor_core_types.hpp"

namespace dnngraph::cuda::conv {
namespace {

std::string where(const ir::Node& n, const ir::Tensor& t) { return "node '" + n.name + "', tensor '" + t.name + "': "; }

int64_t at(const std::vector<int64_t>& v, size_t i, int64_t fallback) { return i < v.size() ? v[i] : fallback; }

// Elements in one 16-byte chunk: 8 of 16-bit types, 4 of FLOAT.
int64_t per_chunk(const ir::Tensor& t) { return 16 / size_of(t.dtype); }

// Channels contiguous, a multiple of per_chunk of them, other strides multiples of per_chunk elements.
bool check_gathered(const ir::Node& n, const ir::Tensor& X, std::string& why) {
  const int64_t C = X.dims[1], e = per_chunk(X);
  if (X.strides[1] != 1 || C % e != 0) {
    why = where(n, X) + (X.strides[1] != 1 ? "channels are not contiguous (NHWC layout needed)"
                                           : "C=" + std::to_string(C) + " is not a multiple of " + std::to_string(e) +
                                                 " (the 16-byte im2col gathers take " + std::to_string(e) +
                                                 " channels at a time)");
    return false;
  }
  for (size_t i = 0; i < X.dims.size(); ++i)
    if (i != 1 && X.dims[i] > 1 && X.strides[i] % e != 0) {
      why = where(n, X) + "stride " + std::to_string(X.strides[i]) + " of dim " + std::to_string(i) +
            " is not a multiple of " + std::to_string(e) + " elements (16-byte gathers)";
      return false;
    }
  return true;
}

// Filters packed as K x (spatial..., C) with channels contiguous (KRSC); returns taps * C.
bool check_filters(const ir::Node& n, const ir::Tensor& W, int64_t& row, std::string& why) {
  int64_t expect = W.dims[1];
  bool packed = W.strides[1] == 1;
  for (size_t i = W.dims.size(); i-- > 2;) {
    packed = packed && (W.dims[i] == 1 || W.strides[i] == expect);
    expect *= W.dims[i];
  }
  if (!packed || (W.dims[0] > 1 && W.strides[0] % per_chunk(W) != 0)) {
    why = where(n, W) + "filters must be packed as K x (spatial..., C) with channels contiguous (KRSC) and a K stride "
                        "that is a multiple of " + std::to_string(per_chunk(W));
    return false;
  }
  row = expect;
  return true;
}

template <class Attr>
void fill_spatial(const Attr& attr, const ir::Tensor& gathered, const ir::Tensor& W, const ir::Tensor& out,
                  ConvParams& cp) {
  const size_t nsp = gathered.dims.size() - 2, off = 3 - nsp;
  for (int i = 0; i < 3; ++i) {
    cp.in[i] = cp.out[i] = cp.filt[i] = 1;
    cp.stride[i] = cp.dil[i] = 1;
    cp.pad[i] = 0;
  }
  cp.x_stride[0] = gathered.strides[0];
  for (size_t i = 0; i < nsp; ++i) {
    cp.in[off + i] = static_cast<int32_t>(gathered.dims[2 + i]);
    cp.out[off + i] = static_cast<int32_t>(out.dims[2 + i]);
    cp.filt[off + i] = static_cast<int32_t>(W.dims[2 + i]);
    cp.pad[off + i] = static_cast<int32_t>(at(attr.get_pre_padding(), i, 0));
    cp.stride[off + i] = static_cast<int32_t>(at(attr.get_stride(), i, 1));
    cp.dil[off + i] = static_cast<int32_t>(at(attr.get_dilation(), i, 1));
    cp.x_stride[1 + off + i] = gathered.strides[2 + i];
  }
  cp.C = static_cast<int32_t>(gathered.dims[1]);
  cp.w_stride_k = W.strides[0];
  cp.M = out.dims[0];
  for (size_t i = 0; i < nsp; ++i) cp.M *= out.dims[2 + i];
}

void output_axes(size_t rank, EpilogueAxes& axes) {
  axes.m.push_back(0);
  for (size_t i = 2; i < rank; ++i) axes.m.push_back(static_cast<int>(i));
  axes.n = {1};
}

}  // namespace

bool describe_conv_dgrad(const Partition& p, ConvProblem& out, std::string& why) {
  out = ConvProblem{};
  const int a = anchor_node(p);
  if (a < 0 || !ir::is<ConvDgradAttr>(p.graph->nodes[static_cast<size_t>(a)])) {
    why = "the partition is not anchored on a conv_dgrad";
    return false;
  }
  const ir::Node& n = p.graph->nodes[static_cast<size_t>(a)];
  const ir::Tensor& DY = p.tensor(n.inputs[0]);
  const ir::Tensor& W = p.tensor(n.inputs[1]);
  const ir::Tensor& DX = p.tensor(n.outputs[0]);
  if (!check_tensor_core_types(*p.graph, n, DY, W, why) || !check_gathered(n, DY, why)) return false;
  if (W.dims[1] != DX.dims[1]) {
    why = where(n, W) + "grouped convolution (groups = " + std::to_string(DX.dims[1] / W.dims[1]) +
          ") is not supported by the implicit GEMM";
    return false;
  }
  if (DX.dims[1] % per_chunk(W) != 0) {
    why = where(n, DX) + "C=" + std::to_string(DX.dims[1]) + " is not a multiple of " + std::to_string(per_chunk(W)) +
          " (16-byte filter rows)";
    return false;
  }
  int64_t row = 0;
  if (!check_filters(n, W, row, why)) return false;
  fill_spatial(std::get<ConvDgradAttr>(n.attr), DY, W, DX, out.params);
  out.params.N = DX.dims[1];
  out.params.K = row / DX.dims[1] * DY.dims[1];  // taps x DY channels
  out.dtype = DY.dtype;
  out.x = DY.id;
  out.w = W.id;
  out.dgrad = true;
  output_axes(DX.dims.size(), out.axes);
  return true;
}

bool describe_conv_fprop(const Partition& p, ConvProblem& out, std::string& why) {
  out = ConvProblem{};
  const int a = anchor_node(p);
  if (a < 0 || !ir::is<ConvFpropAttr>(p.graph->nodes[static_cast<size_t>(a)])) {
    why = "the partition is not anchored on a conv_fprop";
    return false;
  }
  const ir::Node& n = p.graph->nodes[static_cast<size_t>(a)];
  const ir::Tensor& X = p.tensor(n.inputs[0]);
  const ir::Tensor& W = p.tensor(n.inputs[1]);
  const ir::Tensor& Y = p.tensor(n.outputs[0]);
  if (!check_tensor_core_types(*p.graph, n, X, W, why)) return false;
  if (W.dims[1] != X.dims[1]) {
    why = where(n, W) + "grouped convolution (groups = " + std::to_string(X.dims[1] / W.dims[1]) +
          ") is not supported by the implicit GEMM; depthwise convolutions have their own engine";
    return false;
  }
  int64_t row = 0;
  if (!check_gathered(n, X, why) || !check_filters(n, W, row, why)) return false;
  fill_spatial(std::get<ConvFpropAttr>(n.attr), X, W, Y, out.params);
  out.params.N = W.dims[0];
  out.params.K = row;
  out.dtype = X.dtype;
  out.x = X.id;
  out.w = W.id;
  output_axes(Y.dims.size(), out.axes);
  return true;
}

bool describe_conv_wgrad(const Partition& p, ConvProblem& out, std::string& why) {
  out = ConvProblem{};
  const int a = anchor_node(p);
  if (a < 0 || !ir::is<ConvWgradAttr>(p.graph->nodes[static_cast<size_t>(a)])) {
    why = "the partition is not anchored on a conv_wgrad";
    return false;
  }
  const ir::Node& n = p.graph->nodes[static_cast<size_t>(a)];
  const ir::Tensor& DY = p.tensor(n.inputs[0]);
  const ir::Tensor& X = p.tensor(n.inputs[1]);
  const ir::Tensor& DW = p.tensor(n.outputs[0]);
  if (!check_tensor_core_types(*p.graph, n, DY, X, why) || !check_gathered(n, X, why)) return false;
  if (DW.dims[1] != X.dims[1]) {
    why = where(n, DW) + "grouped convolution (groups = " + std::to_string(X.dims[1] / DW.dims[1]) +
          ") is not supported by the implicit GEMM";
    return false;
  }
  // DY is read as one [pixels][K] matrix: channels contiguous and its pixels packed.
  int64_t pixel_stride = DY.dims[1], expect = DY.dims[1];
  bool packed = DY.strides[1] == 1 && DY.dims[1] % per_chunk(DY) == 0;
  for (size_t i = DY.dims.size(); i-- > 2;) {
    packed = packed && (DY.dims[i] == 1 || DY.strides[i] == expect);
    expect *= DY.dims[i];
  }
  packed = packed && (DY.dims[0] == 1 || DY.strides[0] == expect);
  if (!packed) {
    why = where(n, DY) + "must be packed NHWC with K a multiple of " + std::to_string(per_chunk(DY)) +
          " (read as one [pixels][K] matrix)";
    return false;
  }
  fill_spatial(std::get<ConvWgradAttr>(n.attr), X, DW, DY, out.params);
  out.params.M = DW.dims[0];
  out.params.N = DW.dims[1];
  for (size_t i = 2; i < DW.dims.size(); ++i) out.params.N *= DW.dims[i];
  out.params.K = DY.dims[0];
  for (size_t i = 2; i < DY.dims.size(); ++i) out.params.K *= DY.dims[i];
  out.params.w_stride_k = pixel_stride;
  out.dtype = DY.dtype;
  out.x = X.id;
  out.w = DY.id;
  out.wgrad = true;
  // DW [K, C, taps...]: rows are K; columns walk the taps, then C (KRSC packing).
  out.axes.m = {0};
  for (size_t i = 2; i < DW.dims.size(); ++i) out.axes.n.push_back(static_cast<int>(i));
  out.axes.n.push_back(1);
  return true;
}

bool describe_conv(const Partition& p, ConvProblem& out, std::string& why) {
  const int a = anchor_node(p);
  const ir::Node* anchor = a >= 0 ? &p.graph->nodes[static_cast<size_t>(a)] : nullptr;
  if (anchor && ir::is<ConvDgradAttr>(*anchor)) return describe_conv_dgrad(p, out, why);
  if (anchor && ir::is<ConvWgradAttr>(*anchor)) return describe_conv_wgrad(p, out, why);
  return describe_conv_fprop(p, out, why);
}

}  // namespace dnngraph::cuda::conv
