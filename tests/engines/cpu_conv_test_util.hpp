// What the CPU convolution tests share: a random convolution problem (ConvCase, random_case) and
// its run on one engine against ref through the public pipeline, with an optional fused chain
// (run_conv_case).
#pragma once
#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <string>
#include <vector>

#include "cpu_test_util.hpp"
#include "ref_test_util.hpp"

namespace cpu_conv_test {

namespace dg = dnngraph;
using ref_test::Dims;
using test_dims::channels_last;
using ref_test::HostTensor;

// ---- graph level

using ref_test::Build;
using cpu_test::check_engine_vs_ref;

// A random convolution problem; `depthwise` forces groups == C == K.
struct ConvCase {
  int nsp = 2;
  int64_t n = 1, c = 1, k = 1, groups = 1;
  Dims in, ker, out, stride, dil, pre, post;
  dg::DataType type = dg::DataType::FLOAT;
  bool nhwc_in = false;  // channels-last source (else random strides)
  bool krsc_w = false;   // channels-last (KRSC) weights (else random strides)
  double relu_upper = 0;  // > 0: the ReLU also clips above at this value (ONNX's Clip, ReLU6)
  dg::DataType bias_type = dg::DataType::FLOAT, residual_type = dg::DataType::FLOAT;
  bool fp32_intermediates = false;  // the values between the ops typed FLOAT (else as the graph infers)
};

inline int64_t fwd_size(int64_t in, int64_t k, int64_t s, int64_t d, int64_t pre, int64_t post) {
  const int64_t span = in + pre + post - d * (k - 1) - 1;
  return span < 0 ? 0 : span / s + 1;
}

enum class Kind { GENERAL, DEPTHWISE, WINOGRAD };

inline ConvCase random_case(std::mt19937& rng, Kind kind) {
  const bool depthwise = kind == Kind::DEPTHWISE, unit_stride_3x3 = kind == Kind::WINOGRAD;
  ConvCase cc;
  do {
    cc.nsp = unit_stride_3x3 ? 2 : 1 + static_cast<int>(rng() % 3);
    cc.n = 1 + rng() % 2;
    cc.groups = depthwise ? 1 + rng() % 12 : (!unit_stride_3x3 && rng() % 3 == 0 ? 1 + rng() % 3 : 1);
    cc.c = depthwise ? cc.groups : cc.groups * (1 + rng() % 9);
    cc.k = depthwise ? cc.groups : cc.groups * (1 + rng() % 9);
    cc.in.clear(); cc.ker.clear(); cc.out.clear(); cc.stride.clear(); cc.dil.clear(); cc.pre.clear(); cc.post.clear();
    bool ok = true;
    for (int d = 0; d < cc.nsp; ++d) {
      const int64_t lim = cc.nsp == 3 ? 6 : 11;
      cc.in.push_back(1 + rng() % lim);
      cc.ker.push_back(unit_stride_3x3 ? 3 : 1 + rng() % 3);
      cc.stride.push_back(unit_stride_3x3 ? 1 : 1 + rng() % 2);
      cc.dil.push_back(unit_stride_3x3 ? 1 : 1 + rng() % 2);
      cc.pre.push_back(rng() % 2);
      cc.post.push_back(rng() % 3 == 0 ? 0 : rng() % 2);
      const int64_t o = fwd_size(cc.in.back(), cc.ker.back(), cc.stride.back(), cc.dil.back(), cc.pre.back(), cc.post.back());
      ok &= o >= 1;
      cc.out.push_back(o);
    }
    if (ok) break;
  } while (true);
  return cc;
}

inline Dims cat(Dims a, const Dims& b) {
  a.insert(a.end(), b.begin(), b.end());
  return a;
}

// Conv (fprop or dgrad) -> [+ bias] -> [ReLU] -> [+ residual], [AMAX], in `out_type`.

// `nhwc_out`: the output (and residual) dense channels-last, the layout in which the engines
// write a fused chain's output straight from the GEMM tiles.
inline void run_conv_case(const std::string& engine, const ConvCase& cc, bool dgrad, std::mt19937& rng, bool bias,
                   bool relu, bool residual, bool amax, dg::DataType out_type, double tol = 1e-5,
                   bool nhwc_out = false, int threads = 0) {
  const Dims xd = cat({cc.n, cc.c}, cc.in), wd = cat({cc.k, cc.c / cc.groups}, cc.ker), yd = cat({cc.n, cc.k}, cc.out);
  const Dims& src_d = dgrad ? yd : xd;
  const Dims& dst_d = dgrad ? xd : yd;
  std::vector<HostTensor> in{cc.nhwc_in ? ref_test::make_tensor(src_d, channels_last(src_d), cc.type)
                                        : ref_test::random_tensor(src_d, cc.type, rng, -1, 1),
                             cc.krsc_w ? ref_test::make_tensor(wd, channels_last(wd), cc.type)
                                       : ref_test::random_tensor(wd, cc.type, rng, -1, 1)};
  if (cc.nhwc_in) in[0].randomize(rng, -1, 1);
  if (cc.krsc_w) in[1].randomize(rng, -1, 1);
  Dims bd(dst_d.size(), 1);
  bd[1] = dst_d[1];
  if (bias) in.push_back(ref_test::random_tensor(bd, cc.bias_type, rng, -1, 1));
  if (residual) {
    in.push_back(ref_test::make_tensor(dst_d, nhwc_out ? channels_last(dst_d) : ref_test::random_strides(dst_d, rng),
                                       cc.residual_type));
    in.back().randomize(rng, -1, 1);
  }
  std::vector<HostTensor> outs{ref_test::make_tensor(
      dst_d, nhwc_out ? channels_last(dst_d) : ref_test::random_strides(dst_d, rng), out_type)};
  if (amax) outs.push_back(ref_test::make_tensor(Dims(dst_d.size(), 1), Dims(dst_d.size(), 1), dg::DataType::FLOAT));
  const int64_t kdim = (dgrad ? cc.k / cc.groups : cc.c / cc.groups) * ref_test::volume(cc.ker);
  std::string what = engine + (dgrad ? " dgrad" : " fprop") + " nsp=" + std::to_string(cc.nsp) + " n=" +
                     std::to_string(cc.n) + " c=" + std::to_string(cc.c) + " k=" + std::to_string(cc.k) + " g=" +
                     std::to_string(cc.groups) + " " + std::string(dg::to_string(cc.type));
  for (int d = 0; d < cc.nsp; ++d)
    what += " [in " + std::to_string(cc.in[d]) + " k " + std::to_string(cc.ker[d]) + " s " + std::to_string(cc.stride[d]) +
            " d " + std::to_string(cc.dil[d]) + " p " + std::to_string(cc.pre[d]) + "/" + std::to_string(cc.post[d]) + "]";
  SCOPED_TRACE(what);
  check_engine_vs_ref(engine, in, outs,
                      [&](dg::Graph& g, const std::vector<dg::TensorPtr>& t) {
                        dg::TensorPtr y;
                        if (dgrad) {
                          y = g.conv_dgrad(t[0], t[1], dg::ConvDgradAttr().set_pre_padding(cc.pre).set_post_padding(cc.post)
                                                           .set_stride(cc.stride).set_dilation(cc.dil));
                          y->set_dim(dst_d);  // DX's dims pick the groups (W alone cannot)
                        } else {
                          y = g.conv_fprop(t[0], t[1], dg::ConvFpropAttr().set_pre_padding(cc.pre).set_post_padding(cc.post)
                                                           .set_stride(cc.stride).set_dilation(cc.dil));
                        }
                        size_t next = 2;
                        auto between = [&](dg::TensorPtr v) {
                          if (cc.fp32_intermediates) v->set_data_type(dg::DataType::FLOAT);
                          return v;
                        };
                        if (bias) y = g.bias(between(y), t[next++]);
                        if (relu && cc.relu_upper > 0)
                          y = g.pointwise(between(y), dg::PointwiseAttr().set_mode(dg::PointwiseMode::RELU_FWD)
                                                          .set_relu_upper_clip(cc.relu_upper));
                        else if (relu)
                          y = g.relu(between(y));
                        if (residual) y = g.add(between(y), t[next++]);
                        std::vector<dg::TensorPtr> r{y};
                        if (amax) r.push_back(g.reduction(y, dg::ReductionAttr().set_mode(dg::ReductionMode::AMAX)));
                        return r;
                      }, tol, std::sqrt(double(std::max<int64_t>(kdim, 1))), threads);
}

}  // namespace cpu_conv_test
