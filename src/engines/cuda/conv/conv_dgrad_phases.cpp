#include "engines/cuda/conv/conv_dgrad_phases.hpp"

#include <algorithm>

#include "engines/cuda/codegen/params.hpp"
#include "engines/cuda/conv/conv_im2col_view.hpp"

namespace dnngraph::cuda::conv {
namespace {

const char* kDim[3] = {"D", "H", "W"};

// One dim of one phase: the sub-grid's size, the phase's taps, their first filter coordinate and
// the forward convolution's padding.
struct PhaseDim {
  int32_t out = 0, taps = 0, tap0 = 0, pad = 0;
};

PhaseDim phase_dim(const ConvParams& p, int d, int first) {
  const int32_t s = p.stride[d];
  PhaseDim r;
  r.out = (p.out[d] - first + s - 1) / s;  // DX coordinates first, first + s, ... below out[d]
  r.tap0 = (first + p.pad[d]) % s;
  r.taps = (p.filt[d] - r.tap0 + s - 1) / s;
  // dx[s i + first] = sum_t dy[i + e - t] w[tap0 + s t], e = (first + pad - tap0) / s: with u = taps
  // - 1 - t that is the correlation dy[i - pad' + u] w'[u], pad' = taps - 1 - e.
  r.pad = r.taps - 1 - (first + p.pad[d] - r.tap0) / s;
  return r;
}

}  // namespace

bool dgrad_phases(const ConvProblem& cp, std::vector<DgradPhase>& out, std::string& why) {
  out.clear();
  const ConvParams& p = cp.params;
  if (!cp.dgrad) {
    why = "phases split conv_dgrad only";
    return false;
  }
  for (int d = 0; d < 3; ++d) {
    if (p.dil[d] != 1) {
      why = std::string("a dilated conv_dgrad (dilation ") + std::to_string(p.dil[d]) + " along " + kDim[d] +
            ") is not split into phases";
      return false;
    }
    if (p.filt[d] < p.stride[d]) {
      why = std::string("the filter along ") + kDim[d] + " (" + std::to_string(p.filt[d]) +
            " taps) is narrower than the stride (" + std::to_string(p.stride[d]) + "): some phases take no tap";
      return false;
    }
  }
  int64_t spatial = int64_t{p.out[0]} * p.out[1] * p.out[2];
  const int64_t batch = spatial > 0 ? p.M / spatial : 0;
  for (int f0 = 0; f0 < p.stride[0]; ++f0)
    for (int f1 = 0; f1 < p.stride[1]; ++f1)
      for (int f2 = 0; f2 < p.stride[2]; ++f2) {
        DgradPhase ph;
        ph.fprop = cp;
        ph.fprop.dgrad = false;
        ConvParams& q = ph.fprop.params;
        const int first[3] = {f0, f1, f2};
        int64_t pixels = batch, taps = 1;
        for (int d = 0; d < 3; ++d) {
          const PhaseDim pd = phase_dim(p, d, first[d]);
          ph.first[d] = first[d];
          ph.tap0[d] = pd.tap0;
          q.out[d] = pd.out;
          q.filt[d] = pd.taps;
          q.pad[d] = pd.pad;
          q.stride[d] = 1;
          pixels *= pd.out;
          taps *= pd.taps;
        }
        if (pixels == 0) continue;  // DX is smaller than the stride along some dim
        q.M = pixels;
        q.K = taps * q.C;
        if (!im2col_view(ph.fprop, why)) {
          why = "phase (" + std::to_string(f0) + ", " + std::to_string(f1) + ", " + std::to_string(f2) + "): " + why;
          return false;
        }
        out.push_back(ph);
      }
  return true;
}

const DgradPhase& deepest_phase(const std::vector<DgradPhase>& phases) {
  return *std::max_element(phases.begin(), phases.end(), [](const DgradPhase& a, const DgradPhase& b) {
    return a.fprop.params.K < b.fprop.params.K;
  });
}

int64_t dgrad_filter_offset(const ConvProblem& cp, const DgradPhase& ph) {
  const ConvParams& p = cp.params;
  return ((int64_t{ph.tap0[0]} * p.filt[1] + ph.tap0[1]) * p.filt[2] + ph.tap0[2]) * p.N;
}

TensorMapSpec dgrad_filter_map(const ConvProblem& cp, const DgradPhase& ph, int bk) {
  const ConvParams& p = cp.params;
  const ConvParams& q = ph.fprop.params;
  const auto es = static_cast<uint64_t>(size_of(cp.dtype));
  // Elements between neighbouring filter coordinates per dim of KRSC: S is C apart, R is S x C, T is R x S x C.
  const int64_t tap_stride[3] = {int64_t{p.filt[1]} * p.filt[2] * p.N, int64_t{p.filt[2]} * p.N, p.N};
  TensorMapSpec s;
  s.dtype = cp.dtype;
  s.rank = 5;
  s.dims[0] = static_cast<uint64_t>(p.N);
  for (int i = 0; i < 3; ++i) {  // map dims 1..3: S, R, T (ConvParams' dims 2, 1, 0)
    const int d = 2 - i;
    s.dims[1 + i] = static_cast<uint64_t>(q.filt[d]);
    s.strides_bytes[i] = static_cast<uint64_t>(tap_stride[d] * p.stride[d]) * es;
  }
  s.dims[4] = static_cast<uint64_t>(p.C);
  // One DY channel's filters: its stride may be anything; the packed one keeps TMA's 16-byte rule.
  s.strides_bytes[3] = static_cast<uint64_t>(p.C > 1 ? p.w_stride_k : tap_stride[0] * p.filt[0]) * es;
  s.box[0] = 64;
  s.box[4] = static_cast<uint32_t>(bk);
  return s;
}

bool dgrad_store_map(const ConvProblem& cp, const DgradPhase& ph, const TensorMapSpec& rows_map, TensorMapSpec& out,
                     int64_t& offset, std::string& why) {
  const ConvParams& p = cp.params;
  const ConvParams& q = ph.fprop.params;
  const int64_t images = p.M / (int64_t{p.out[0]} * p.out[1] * p.out[2]);
  if (rows_map.dims[2] != 1 || p.out[0] != 1) {
    why = rows_map.dims[2] != 1 ? "the output's pixels are not one evenly strided run of rows"
                                : "a 3D conv_dgrad's phases are not stored by TMA boxes";
    return false;
  }
  if (q.out[2] % 64 != 0) {
    why = "a phase's width (" + std::to_string(q.out[2]) + ") is not a multiple of the store's 64-row boxes";
    return false;
  }
  if (images > 1 && p.out[1] != p.stride[1] * q.out[1]) {
    why = "DX's height (" + std::to_string(p.out[1]) + ") is not the stride times a phase's (" + std::to_string(q.out[1]) +
          "): the phase's rows are not evenly strided across images";
    return false;
  }
  const auto pixel = static_cast<int64_t>(rows_map.strides_bytes[0]);  // bytes between DX's pixels
  out = rows_map;
  out.dims[1] = static_cast<uint64_t>(q.out[2]);
  out.dims[2] = static_cast<uint64_t>(images * q.out[1]);
  out.strides_bytes[0] = static_cast<uint64_t>(pixel * p.stride[2]);
  out.strides_bytes[1] = static_cast<uint64_t>(pixel * p.out[2] * p.stride[1]);
  offset = (int64_t{ph.first[1]} * p.out[2] + ph.first[2]) * (pixel / 2);  // 16-bit elements
  return true;
}

ConvParams dgrad_phase_params(const ConvProblem& cp, const DgradPhase& ph) {
  ConvParams q = ph.fprop.params;
  for (int d = 0; d < 3; ++d) {
    q.sub_out[d] = q.out[d];
    q.sub_full[d] = cp.params.out[d];
    q.sub_step[d] = cp.params.stride[d];
    q.sub_first[d] = ph.first[d];
    q.sub_div_out[d] = codegen::fast_div_magic(static_cast<uint32_t>(q.out[d]));
  }
  return q;
}

}  // namespace dnngraph::cuda::conv
