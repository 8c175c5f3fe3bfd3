#include "engines/cuda/conv/conv_problem.hpp"

namespace dnngraph::cuda::conv {
namespace {

std::string where(const ir::Node& n, const ir::Tensor& t) { return "node '" + n.name + "', tensor '" + t.name + "': "; }

int64_t at(const std::vector<int64_t>& v, size_t i, int64_t fallback) { return i < v.size() ? v[i] : fallback; }

}  // namespace

bool describe_conv_fprop(const Partition& p, ConvProblem& out, std::string& why) {
  out = ConvProblem{};
  if (p.anchor < 0 || op_name(p.graph->nodes[static_cast<size_t>(p.anchor)].attr) != "conv_fprop") {
    why = "the partition is not anchored on a conv_fprop";
    return false;
  }
  const ir::Node& n = p.graph->nodes[static_cast<size_t>(p.anchor)];
  const auto& attr = std::get<ConvFpropAttr>(n.attr);
  const ir::Tensor& X = p.tensor(n.inputs[0]);
  const ir::Tensor& W = p.tensor(n.inputs[1]);
  const ir::Tensor& Y = p.tensor(n.outputs[0]);
  if (X.dtype != W.dtype || (X.dtype != DataType::BFLOAT16 && X.dtype != DataType::HALF)) {
    why = where(n, X) + "inputs of type " + std::string(to_string(X.dtype)) + " x " + std::string(to_string(W.dtype)) +
          " are not supported (BFLOAT16 or HALF, both the same)";
    return false;
  }
  if (n.compute_type != DataType::FLOAT && n.compute_type != DataType::NOT_SET) {
    why = "node '" + n.name + "': compute type " + std::string(to_string(n.compute_type)) +
          " is not supported (fp32 accumulation)";
    return false;
  }
  const size_t rank = X.dims.size(), nsp = rank - 2, off = 3 - nsp;
  const int64_t C = X.dims[1], K = W.dims[0];
  if (W.dims[1] != C) {
    why = where(n, W) + "grouped convolution (groups = " + std::to_string(C / W.dims[1]) +
          ") is not supported by the implicit GEMM; depthwise convolutions have their own engine";
    return false;
  }
  if (X.strides[1] != 1 || C % 8 != 0) {
    why = where(n, X) + (X.strides[1] != 1 ? "channels are not contiguous (NHWC layout needed)"
                                           : "C=" + std::to_string(C) +
                                                 " is not a multiple of 8 (the 16-byte im2col gathers take 8 channels "
                                                 "at a time)");
    return false;
  }
  for (size_t i = 0; i < rank; ++i)
    if (i != 1 && X.dims[i] > 1 && X.strides[i] % 8 != 0) {
      why = where(n, X) + "stride " + std::to_string(X.strides[i]) + " of dim " + std::to_string(i) +
            " is not a multiple of 8 elements (16-byte gathers)";
      return false;
    }
  // Filters: each output channel's taps and channels packed as T R S C.
  int64_t expect = C;
  bool packed = W.strides[1] == 1;
  for (size_t i = rank; i-- > 2;) {
    packed = packed && (W.dims[i] == 1 || W.strides[i] == expect);
    expect *= W.dims[i];
  }
  if (!packed || (K > 1 && W.strides[0] % 8 != 0)) {
    why = where(n, W) + "filters must be packed as K x (spatial..., C) with channels contiguous (KRSC) and a K stride "
                        "that is a multiple of 8";
    return false;
  }
  ConvParams& cp = out.params;
  for (int i = 0; i < 3; ++i) {
    cp.in[i] = cp.out[i] = cp.filt[i] = 1;
    cp.stride[i] = cp.dil[i] = 1;
    cp.pad[i] = 0;
  }
  cp.x_stride[0] = X.strides[0];
  for (size_t i = 0; i < nsp; ++i) {
    cp.in[off + i] = static_cast<int32_t>(X.dims[2 + i]);
    cp.out[off + i] = static_cast<int32_t>(Y.dims[2 + i]);
    cp.filt[off + i] = static_cast<int32_t>(W.dims[2 + i]);
    cp.pad[off + i] = static_cast<int32_t>(at(attr.get_pre_padding(), i, 0));
    cp.stride[off + i] = static_cast<int32_t>(at(attr.get_stride(), i, 1));
    cp.dil[off + i] = static_cast<int32_t>(at(attr.get_dilation(), i, 1));
    cp.x_stride[1 + off + i] = X.strides[2 + i];
  }
  cp.C = static_cast<int32_t>(C);
  cp.w_stride_k = W.strides[0];
  cp.M = Y.dims[0];
  for (size_t i = 0; i < nsp; ++i) cp.M *= Y.dims[2 + i];
  cp.N = K;
  cp.K = expect;
  out.dtype = X.dtype;
  out.x = X.id;
  out.w = W.id;
  out.axes.m.push_back(0);
  for (size_t i = 0; i < nsp; ++i) out.axes.m.push_back(static_cast<int>(2 + i));
  out.axes.n = {1};
  return true;
}

}  // namespace dnngraph::cuda::conv
