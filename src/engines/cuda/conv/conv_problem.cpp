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

// The implicit GEMM runs one group: `filters` (W or DW) has all `channels` of the gathered side.
bool check_one_group(const ir::Node& n, const ir::Tensor& filters, int64_t channels, const char* hint,
                     std::string& why) {
  if (filters.dims[1] == channels) return true;
  why = where(n, filters) + "grouped convolution (groups = " + std::to_string(channels / filters.dims[1]) +
        ") is not supported by the implicit GEMM" + hint;
  return false;
}

// The GEMM view's sizes fit the kernels' 32-bit ints: K (k tiles, taps) and the output tiles at
// the smallest tile (64 x 64), so that every knob's grid does.
bool check_gemm_ints(const ir::Node& n, const ir::Tensor& out, const ConvParams& cp, std::string& why) {
  int64_t tiles = 0;
  if (!checked::mul((cp.M + 63) / 64, (cp.N + 63) / 64, tiles)) tiles = INT64_MAX;
  return fits_kernel_int(n, out, "the GEMM's K (taps x channels)", cp.K, why) &&
         fits_kernel_int(n, out, "the count of 64 x 64 output tiles", tiles, why);
}

// The product of t's dims from `first` on, times `scale`; false on overflow.
bool dims_product(const ir::Tensor& t, size_t first, int64_t scale, int64_t& out) {
  out = scale;
  for (size_t i = first; i < t.dims.size(); ++i)
    if (!checked::mul(out, t.dims[i], out)) return false;
  return true;
}

// The GEMM's operands (x gathered, w read as a strided matrix, both IR ids), their type and the
// epilogue axes, once the sizes are in out.params; then whether those fit the kernels' ints.
bool set_gemm_operands(const ir::Node& n, const ir::Tensor& gemm_out, const ir::Tensor& x, const ir::Tensor& w,
                       DataType dtype, EpilogueAxes axes, ConvProblem& out, std::string& why) {
  out.dtype = dtype;
  out.x = x.id;
  out.w = w.id;
  out.axes = std::move(axes);
  return check_gemm_ints(n, gemm_out, out.params, why);
}

bool describe_dgrad(const ir::Node& n, const ir::Tensor& DY, const ir::Tensor& W, const ir::Tensor& DX,
                    ConvProblem& out, std::string& why) {
  if (!check_gathered(n, DY, why) || !check_one_group(n, W, DX.dims[1], "", why)) return false;
  if (DX.dims[1] % per_chunk(W) != 0) {
    why = where(n, DX) + "C=" + std::to_string(DX.dims[1]) + " is not a multiple of " + std::to_string(per_chunk(W)) +
          " (16-byte filter rows)";
    return false;
  }
  int64_t row = 0;
  const auto& attr = std::get<ConvDgradAttr>(n.attr);
  if (!check_filters(n, W, row, why) || !check_spatial_ints(n, attr, DY, W, DX, why)) return false;
  fill_spatial(attr, DY, W, DX, out.params);
  out.params.w_stride_k = W.strides[0];
  out.params.N = DX.dims[1];
  out.params.K = row / DX.dims[1] * DY.dims[1];  // taps x DY channels (at most W's volume x DY's channels)
  out.dgrad = true;
  return set_gemm_operands(n, DX, DY, W, DY.dtype, pixel_channel_axes(DX.dims.size()), out, why);
}

bool describe_fprop(const ir::Node& n, const ir::Tensor& X, const ir::Tensor& W, const ir::Tensor& Y,
                    ConvProblem& out, std::string& why) {
  if (!check_one_group(n, W, X.dims[1], "; depthwise convolutions have their own engine", why)) return false;
  int64_t row = 0;
  const auto& attr = std::get<ConvFpropAttr>(n.attr);
  if (!check_gathered(n, X, why) || !check_filters(n, W, row, why) || !check_spatial_ints(n, attr, X, W, Y, why))
    return false;
  fill_spatial(attr, X, W, Y, out.params);
  out.params.w_stride_k = W.strides[0];
  out.params.N = W.dims[0];
  out.params.K = row;
  return set_gemm_operands(n, Y, X, W, X.dtype, pixel_channel_axes(Y.dims.size()), out, why);
}

// DY is read as one [pixels][K] matrix: channels contiguous and its pixels packed.
bool check_packed_rows(const ir::Node& n, const ir::Tensor& DY, std::string& why) {
  int64_t expect = DY.dims[1];
  bool packed = DY.strides[1] == 1 && DY.dims[1] % per_chunk(DY) == 0;
  for (size_t i = DY.dims.size(); i-- > 2;) {
    packed = packed && (DY.dims[i] == 1 || DY.strides[i] == expect);
    expect *= DY.dims[i];
  }
  packed = packed && (DY.dims[0] == 1 || DY.strides[0] == expect);
  if (packed) return true;
  why = where(n, DY) + "must be packed NHWC with K a multiple of " + std::to_string(per_chunk(DY)) +
        " (read as one [pixels][K] matrix)";
  return false;
}

bool describe_wgrad(const ir::Node& n, const ir::Tensor& DY, const ir::Tensor& X, const ir::Tensor& DW,
                    ConvProblem& out, std::string& why) {
  if (!check_gathered(n, X, why) || !check_one_group(n, DW, X.dims[1], "", why) || !check_packed_rows(n, DY, why))
    return false;
  const auto& attr = std::get<ConvWgradAttr>(n.attr);
  if (!check_spatial_ints(n, attr, X, DW, DY, why)) return false;
  fill_spatial(attr, X, DW, DY, out.params);
  out.params.M = DW.dims[0];
  // N = C x taps of DW, K = DY's pixels: products of dims of validated tensors, checked all the same.
  if (!dims_product(DW, 2, DW.dims[1], out.params.N) || !dims_product(DY, 2, DY.dims[0], out.params.K)) {
    why = where(n, DW) + "the GEMM's sizes overflow 64 bits";
    return false;
  }
  out.params.w_stride_k = DY.dims[1];  // between DY's pixels
  out.wgrad = true;
  // DW [K, C, taps...]: rows are K; columns walk the taps, then C (KRSC packing).
  EpilogueAxes axes;
  axes.m = {0};
  for (size_t i = 2; i < DW.dims.size(); ++i) axes.n.push_back(static_cast<int>(i));
  axes.n.push_back(1);
  return set_gemm_operands(n, DW, X, DY, DY.dtype, std::move(axes), out, why);
}

// The partition's `Attr` anchor described by `body` (node, its inputs and output).
template <class Attr, class Body>
bool describe_anchor(const Partition& p, const char* op, ConvProblem& out, std::string& why, Body body,
                     TensorCoreInputs inputs = {}) {
  out = ConvProblem{};
  TensorCoreOperands o;
  if (!tensor_core_anchor<Attr>(p, op, o, why, inputs) || !body(*o.node, *o.in0, *o.in1, *o.out, out, why))
    return false;
  out.exact_fp32 = out.dtype == DataType::FLOAT && !p.graph->allow_tf32;
  return true;
}

}  // namespace

bool describe_conv_dgrad(const Partition& p, ConvProblem& out, std::string& why) {
  return describe_anchor<ConvDgradAttr>(p, "conv_dgrad", out, why, describe_dgrad);
}

bool describe_conv_fprop(const Partition& p, ConvProblem& out, std::string& why) {
  return describe_anchor<ConvFpropAttr>(p, "conv_fprop", out, why, describe_fprop, {.exact_fp32 = true});
}

bool describe_conv_wgrad(const Partition& p, ConvProblem& out, std::string& why) {
  return describe_anchor<ConvWgradAttr>(p, "conv_wgrad", out, why, describe_wgrad);
}

bool describe_conv(const Partition& p, ConvProblem& out, std::string& why) {
  const int a = anchor_node(p);
  const ir::Node* anchor = a >= 0 ? &p.graph->nodes[static_cast<size_t>(a)] : nullptr;
  if (anchor && ir::is<ConvDgradAttr>(*anchor)) return describe_conv_dgrad(p, out, why);
  if (anchor && ir::is<ConvWgradAttr>(*anchor)) return describe_conv_wgrad(p, out, why);
  return describe_conv_fprop(p, out, why);
}

}  // namespace dnngraph::cuda::conv
