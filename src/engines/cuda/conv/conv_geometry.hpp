// What the CUDA convolution engines (implicit GEMM, depthwise) read alike from a convolution: its
// spatial geometry padded to three dims (1D and 2D: unit dims in front), the epilogue axes of a
// per-pixel output, and the prefix of their messages.
#pragma once
#include <string>
#include <vector>

#include "core/checked.hpp"
#include "engines/cuda/common/epilogue_layout.hpp"
#include "engines/cuda/common/tensor_core_types.hpp"

namespace dnngraph::cuda::conv {

inline std::string where(const ir::Node& n, const ir::Tensor& t) {
  return "node '" + n.name + "', tensor '" + t.name + "': ";
}

// An output [N, C, spatial...] seen per pixel: N and the spatial dims fold into the row (m), the
// channels are the column (n).
inline EpilogueAxes pixel_channel_axes(size_t rank) {
  EpilogueAxes axes;
  axes.m.push_back(0);
  for (size_t i = 2; i < rank; ++i) axes.m.push_back(static_cast<int>(i));
  axes.n = {1};
  return axes;
}

// Whether the spatial geometry fits the kernels' 32-bit index math: every size, padding, stride
// and dilation, the channel count, and each window's reach ((out - 1) * stride + (filt - 1) *
// dil + pad + in, a bound on every coordinate the gathers compute); false with `why`.
template <class Attr>
bool check_spatial_ints(const ir::Node& n, const Attr& attr, const ir::Tensor& gathered, const ir::Tensor& w,
                        const ir::Tensor& out, std::string& why) {
  const auto at = [](const std::vector<int64_t>& v, size_t i, int64_t fallback) {
    return i < v.size() ? v[i] : fallback;
  };
  if (!fits_kernel_int(n, gathered, "the channel count", gathered.dims[1], why)) return false;
  for (size_t i = 0; i + 2 < gathered.dims.size(); ++i) {
    const std::string dim = "dim " + std::to_string(i + 2);
    const int64_t pad = at(attr.get_pre_padding(), i, 0), stride = at(attr.get_stride(), i, 1);
    const int64_t dil = at(attr.get_dilation(), i, 1);
    int64_t reach = 0;
    if (!checked::mul_add(out.dims[2 + i] - 1, stride, pad + gathered.dims[2 + i], reach) ||
        !checked::mul_add(w.dims[2 + i] - 1, dil, reach, reach))
      reach = INT64_MAX;  // beyond every limit below
    if (!fits_kernel_int(n, gathered, dim, gathered.dims[2 + i], why) ||
        !fits_kernel_int(n, out, dim, out.dims[2 + i], why) || !fits_kernel_int(n, w, dim, w.dims[2 + i], why) ||
        !fits_kernel_int(n, gathered, "the window reach along " + dim + " (padding, stride and dilation)", reach, why))
      return false;
  }
  return true;
}

// The gathered tensor's spatial sizes and strides, the output's and the filter's sizes, and the
// attribute's padding, strides and dilations, into a kernel argument struct that has those fields
// (ConvParams, DwParams); C and M (output pixels) too.
template <class Attr, class Params>
void fill_spatial(const Attr& attr, const ir::Tensor& gathered, const ir::Tensor& w, const ir::Tensor& out,
                  Params& cp) {
  const auto at = [](const std::vector<int64_t>& v, size_t i, int64_t fallback) {
    return i < v.size() ? v[i] : fallback;
  };
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
    cp.filt[off + i] = static_cast<int32_t>(w.dims[2 + i]);
    cp.pad[off + i] = static_cast<int32_t>(at(attr.get_pre_padding(), i, 0));
    cp.stride[off + i] = static_cast<int32_t>(at(attr.get_stride(), i, 1));
    cp.dil[off + i] = static_cast<int32_t>(at(attr.get_dilation(), i, 1));
    cp.x_stride[1 + off + i] = gathered.strides[2 + i];
  }
  cp.C = static_cast<int32_t>(gathered.dims[1]);
  cp.M = out.dims[0];
  for (size_t i = 0; i < nsp; ++i) cp.M *= out.dims[2 + i];
}

}  // namespace dnngraph::cuda::conv
