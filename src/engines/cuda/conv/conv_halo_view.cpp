#include "engines/cuda/conv/conv_halo_view.hpp"

#include "engines/cuda/codegen/params.hpp"
#include "engines/cuda/conv/conv_im2col_view.hpp"

namespace dnngraph::cuda::conv {
namespace {

constexpr int64_t kTileRows = 128, kChannelBlock = 64, kRowBytes = 128;

int64_t images(const ConvParams& p) { return p.M / (int64_t{p.out[0]} * p.out[1] * p.out[2]); }

}  // namespace

bool halo_view(const ConvProblem& cp, HaloTiles& t, std::string& why) {
  const ConvParams& p = cp.params;
  if (cp.dgrad || cp.wgrad) {
    why = "halo tiles serve conv_fprop only";
    return false;
  }
  if (cp.dtype != DataType::BFLOAT16 && cp.dtype != DataType::HALF) {
    why = "halo tiles hold 64 channels of 16-bit inputs per 128-byte row; the inputs are " + std::string(to_string(cp.dtype));
    return false;
  }
  static const char* kDim[3] = {"D", "H", "W"};
  for (int d = 0; d < 3; ++d)
    if (p.stride[d] != 1) {
      why = "halo tiles shift one box by whole pixels per tap: strides must be 1 (" + std::string(kDim[d]) + ": " +
            std::to_string(p.stride[d]) + ")";
      return false;
    }
  const int64_t wv = int64_t{p.out[2]} + int64_t{p.filt[2] - 1} * p.dil[2];
  // Rows one tile's 128 virtual pixels touch (from any column offset), plus the taps' reach.
  const int64_t spanned = (wv - 1 + kTileRows - 1 + int64_t{p.filt[2] - 1} * p.dil[2]) / wv + 1;
  const int64_t box_rows = spanned + int64_t{p.filt[1] - 1} * p.dil[1];
  if (wv > 256 || box_rows > 256) {
    why = "the halo box (" + std::to_string(wv) + " columns x " + std::to_string(box_rows) +
          " rows) exceeds TMA's 256 per box dimension";
    return false;
  }
  const int64_t box_bytes = kChannelBlock * 2 * wv * box_rows, stage = (box_bytes + 1023) / 1024 * 1024;
  if (stage > kHaloMaxStageBytes) {
    why = "the halo box's " + std::to_string(box_bytes) + " bytes exceed the " + std::to_string(kHaloMaxStageBytes) +
          " two of which fit beside the filter ring";
    return false;
  }
  const int64_t plane = int64_t{p.out[1]} * wv, per_plane = (plane + kTileRows - 1) / kTileRows;
  const int64_t real = int64_t{p.out[1]} * p.out[2];
  if (per_plane * kTileRows > 2 * real) {
    why = "the " + std::to_string(p.out[1]) + " x " + std::to_string(p.out[2]) +
          " output plane would leave more than half of its 128-pixel halo tiles' rows unused";
    return false;
  }
  const int64_t planes = images(p) * p.out[0];
  if (planes * per_plane * kTileRows > INT32_MAX) {
    why = "the virtual grid's " + std::to_string(planes * per_plane * kTileRows) + " rows exceed 2^31 - 1";
    return false;
  }
  t = {};
  t.wv = static_cast<int32_t>(wv);
  t.box_rows = static_cast<int32_t>(box_rows);
  t.tiles_per_plane = static_cast<int32_t>(per_plane);
  t.stage_bytes = static_cast<int32_t>(stage);
  t.box_bytes = static_cast<int32_t>(box_bytes);
  t.ho = p.out[1];
  t.wo = p.out[2];
  t.div_plane = codegen::fast_div_magic(static_cast<uint32_t>(per_plane * kTileRows));
  t.div_wv = codegen::fast_div_magic(static_cast<uint32_t>(wv));
  return true;
}

int64_t halo_tiles_m(const ConvParams& p, const HaloTiles& t) { return images(p) * p.out[0] * t.tiles_per_plane; }

TensorMapSpec halo_activation_map(const ConvProblem& cp, const HaloTiles& t) {
  const int64_t es = size_of(cp.dtype);
  TensorMapSpec s;
  s.dtype = cp.dtype;
  s.rank = 5;  // (C, W, H, D, N) whatever the convolution's rank: the kernel loads 5D boxes
  activation_layout(cp, s.rank, s.dims, s.strides_bytes);
  s.box[0] = static_cast<uint32_t>(kRowBytes / es);
  s.box[1] = static_cast<uint32_t>(t.wv);
  s.box[2] = static_cast<uint32_t>(t.box_rows);
  return s;
}

}  // namespace dnngraph::cuda::conv
