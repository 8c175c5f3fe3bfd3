#include "engines/cuda/conv/conv_gemm_view.hpp"

namespace dnngraph::cuda::conv {

bool gemm_view(const ConvProblem& cp, int64_t& pixel_stride, std::string& why) {
  const ConvParams& p = cp.params;
  if (cp.dgrad || cp.wgrad) {
    why = "only conv_fprop is a plain GEMM over its activation";
    return false;
  }
  for (int i = 0; i < 3; ++i)
    if (p.filt[i] != 1 || p.pad[i] != 0 || p.in[i] != p.out[i] || (p.stride[i] != 1 && p.out[i] > 1)) {
      why = "the filter is not 1x1 with unit strides and no padding (it needs the im2col gather)";
      return false;
    }
  // Pixels innermost first (w, h, d, n): each dim of more than one element must step by the
  // extent of the dims inside it, so that pixel m sits at m * pixel_stride.
  const int64_t spatial = int64_t{p.out[0]} * p.out[1] * p.out[2];
  const int64_t sizes[4] = {p.in[2], p.in[1], p.in[0], p.M / spatial};
  const int64_t strides[4] = {p.x_stride[3], p.x_stride[2], p.x_stride[1], p.x_stride[0]};
  pixel_stride = 0;
  int64_t expect = 0;
  for (int d = 0; d < 4; ++d) {
    if (sizes[d] == 1) continue;
    if (pixel_stride != 0 && strides[d] != expect) {
      why = "the activation's pixels are not at one stride (stride " + std::to_string(strides[d]) + " where " +
            std::to_string(expect) + " would continue the rows)";
      return false;
    }
    if (pixel_stride == 0) pixel_stride = strides[d];
    expect = strides[d] * sizes[d];
  }
  if (pixel_stride == 0) pixel_stride = p.C;  // one pixel: any row stride will do
  return true;
}

gemm::GemmParams gemm_view_params(const ConvParams& p, int64_t pixel_stride, int splits, void* ws) {
  gemm::GemmParams g{};
  g.M = p.M;
  g.N = p.N;
  g.K = p.K;
  g.a_stride_m = pixel_stride;
  g.a_stride_k = 1;
  g.b_stride_k = 1;
  g.b_stride_n = p.w_stride_k;
  for (int d = 0; d < gemm::kMaxBatchDims; ++d) g.batch_size[d] = 1;
  g.batch_count = 1;
  g.a = p.x;
  g.b = p.w;
  g.a_batch_unit = g.b_batch_unit = 1;
  g.batch_dims = 0;
  g.epi_vec = p.epi_vec;
  g.tiles_m = p.tiles_m;
  g.tiles_n = p.tiles_n;
  g.splits = splits;
  g.ws = ws;
  return g;
}

TensorMapSpec k_rows_map(DataType dtype, int64_t k, int64_t rows, int64_t row_elems, int box_rows) {
  TensorMapSpec s;
  s.dtype = dtype;
  const int64_t es = size_of(dtype);
  s.rank = 3;
  s.dims[0] = static_cast<uint64_t>(k);
  s.dims[1] = static_cast<uint64_t>(rows);
  s.dims[2] = 1;
  s.strides_bytes[0] = static_cast<uint64_t>((row_elems * es + 15) / 16 * 16);
  s.strides_bytes[1] = (s.strides_bytes[0] * s.dims[1] + 15) / 16 * 16;
  s.box[0] = static_cast<uint32_t>(128 / es);
  s.box[1] = static_cast<uint32_t>(box_rows);
  s.box[2] = 1;
  return s;
}

TensorMapSpec gemm_view_activation_map(const ConvProblem& cp, int64_t pixel_stride) {
  // (pixel_stride x the element size is a multiple of 16: describe_conv)
  return k_rows_map(cp.dtype, cp.params.K, cp.params.M, pixel_stride, 128);
}

}  // namespace dnngraph::cuda::conv
