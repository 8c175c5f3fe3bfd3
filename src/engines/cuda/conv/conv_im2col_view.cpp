#include "engines/cuda/conv/conv_im2col_view.hpp"

namespace dnngraph::cuda::conv {
namespace {

// Spatial dim i of the map (0: W, 1: H, 2: D) is ConvParams' dim 2 - i.
int pdim(int i) { return 2 - i; }

// The bounding box's upper corner along map dim i: the last window origin, (out - 1) * stride -
// pad, less the last input coordinate, so that the traversal visits exactly `out` origins.
int64_t upper_corner(const ConvParams& p, int i) {
  const int d = pdim(i);
  return int64_t{p.out[d] - 1} * p.stride[d] - p.pad[d] - (p.in[d] - 1);
}

}  // namespace

int im2col_rank(const ConvParams& p) { return p.in[0] == 1 && p.out[0] == 1 && p.filt[0] == 1 ? 4 : 5; }

int64_t im2col_ktiles(const ConvParams& p, int bk) {
  return int64_t{p.filt[0]} * p.filt[1] * p.filt[2] * ((p.C + bk - 1) / bk);
}

bool im2col_view(const ConvProblem& cp, std::string& why) {
  const ConvParams& p = cp.params;
  if (cp.dgrad || cp.wgrad) {
    why = "the im2col loads serve conv_fprop only";
    return false;
  }
  const int rank = im2col_rank(p), spatial = rank - 2;
  // The driver's ranges for the corners: [-128, 127] at rank 4, [-16, 15] at rank 5; the tap
  // offsets are kept within the same bound.
  const int64_t lo = rank == 4 ? -128 : -16, hi = rank == 4 ? 127 : 15;
  static const char* kDim[3] = {"W", "H", "D"};
  for (int i = 0; i < spatial; ++i) {
    const int d = pdim(i);
    const int64_t lower = -p.pad[d], upper = upper_corner(p, i), reach = int64_t{p.filt[d] - 1} * p.dil[d];
    const std::string dim = kDim[i];
    if (lower < lo || lower > hi || upper < lo || upper > hi) {
      why = "the im2col bounding box along " + dim + " (corners " + std::to_string(lower) + ", " +
            std::to_string(upper) + ") is outside [" + std::to_string(lo) + ", " + std::to_string(hi) + "]";
      return false;
    }
    if (reach > hi) {
      why = "the filter's reach along " + dim + " (" + std::to_string(reach) + ") exceeds the im2col offsets' " +
            std::to_string(hi);
      return false;
    }
    if (p.stride[d] > 8) {
      why = "the stride along " + dim + " (" + std::to_string(p.stride[d]) + ") exceeds the im2col traversal's 8";
      return false;
    }
  }
  return true;
}

void activation_layout(const ConvProblem& cp, int rank, uint64_t (&dims)[5], uint64_t (&strides_bytes)[4]) {
  const ConvParams& p = cp.params;
  const int64_t es = size_of(cp.dtype);
  const int spatial = rank - 2;
  const int64_t batch = p.M / (int64_t{p.out[0]} * p.out[1] * p.out[2]);
  // Dims innermost first with their strides; a dim of one element gets the packed stride (its
  // own may be anything, and TMA wants multiples of 16 bytes).
  int64_t sizes[5] = {p.C, 1, 1, 1, 1}, strides[5] = {1, 0, 0, 0, 0};
  for (int i = 0; i < spatial; ++i) {
    sizes[1 + i] = p.in[pdim(i)];
    strides[1 + i] = p.x_stride[1 + pdim(i)];
  }
  sizes[1 + spatial] = batch;
  strides[1 + spatial] = p.x_stride[0];
  for (int i = 0; i < rank; ++i) {
    if (i > 0 && sizes[i] == 1) strides[i] = i == 1 ? p.C : strides[i - 1] * sizes[i - 1];
    dims[i] = static_cast<uint64_t>(sizes[i]);
    if (i > 0) strides_bytes[i - 1] = static_cast<uint64_t>(strides[i] * es);
  }
}

Im2colMapSpec im2col_activation_map(const ConvProblem& cp, int bk, int pixels) {
  const ConvParams& p = cp.params;
  Im2colMapSpec s;
  s.dtype = cp.dtype;
  s.rank = im2col_rank(p);
  const int spatial = s.rank - 2;
  activation_layout(cp, s.rank, s.dims, s.strides_bytes);
  for (int i = 0; i < spatial; ++i) {
    s.lower[i] = -p.pad[pdim(i)];
    s.upper[i] = static_cast<int>(upper_corner(p, i));
    s.traversal[i] = static_cast<uint32_t>(p.stride[pdim(i)]);
  }
  s.channels = static_cast<uint32_t>(bk);
  s.pixels = static_cast<uint32_t>(pixels);
  return s;
}

TensorMapSpec im2col_filter_map(const ConvProblem& cp, int bk, int bn) {
  const ConvParams& p = cp.params;
  const int64_t es = size_of(cp.dtype);
  TensorMapSpec s;
  s.dtype = cp.dtype;
  s.rank = 3;
  s.dims[0] = static_cast<uint64_t>(p.C);
  s.dims[1] = static_cast<uint64_t>(int64_t{p.filt[0]} * p.filt[1] * p.filt[2]);
  s.dims[2] = static_cast<uint64_t>(p.N);
  s.strides_bytes[0] = static_cast<uint64_t>(p.C * es);  // KRSC: the taps' channel rows are packed
  // One output channel: its stride may be anything; the packed one keeps TMA's 16-byte rule.
  s.strides_bytes[1] = static_cast<uint64_t>((p.N > 1 ? p.w_stride_k : int64_t{p.C} * s.dims[1]) * es);
  s.box[0] = static_cast<uint32_t>(bk);
  s.box[1] = 1;
  s.box[2] = static_cast<uint32_t>(bn);
  return s;
}

}  // namespace dnngraph::cuda::conv
