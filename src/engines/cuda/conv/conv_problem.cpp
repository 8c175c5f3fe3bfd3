#include "engines/cuda/conv/conv_problem.hpp"

#include "engines/cuda/common/tensor_core_types.hpp"
#include "engines/cuda/conv/conv_geometry.hpp"

namespace dnngraph::cuda::conv {
namespace {

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

}  // namespace

bool describe_conv_dgrad(const Partition& p, ConvProblem& out, std::string& why) {
  out = ConvProblem{};
  const ir::Node* anchor = anchor_of<ConvDgradAttr>(p, "conv_dgrad", why);
  if (!anchor) return false;
  const ir::Node& n = *anchor;
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
  out.params.w_stride_k = W.strides[0];
  out.params.N = DX.dims[1];
  out.params.K = row / DX.dims[1] * DY.dims[1];  // taps x DY channels
  out.dtype = DY.dtype;
  out.x = DY.id;
  out.w = W.id;
  out.dgrad = true;
  out.axes = pixel_channel_axes(DX.dims.size());
  return true;
}

bool describe_conv_fprop(const Partition& p, ConvProblem& out, std::string& why) {
  out = ConvProblem{};
  const ir::Node* anchor = anchor_of<ConvFpropAttr>(p, "conv_fprop", why);
  if (!anchor) return false;
  const ir::Node& n = *anchor;
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
  out.params.w_stride_k = W.strides[0];
  out.params.N = W.dims[0];
  out.params.K = row;
  out.dtype = X.dtype;
  out.x = X.id;
  out.w = W.id;
  out.axes = pixel_channel_axes(Y.dims.size());
  return true;
}

bool describe_conv_wgrad(const Partition& p, ConvProblem& out, std::string& why) {
  out = ConvProblem{};
  const ir::Node* anchor = anchor_of<ConvWgradAttr>(p, "conv_wgrad", why);
  if (!anchor) return false;
  const ir::Node& n = *anchor;
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
