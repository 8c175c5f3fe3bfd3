// Graph builders and cases shared by the CUDA convolution tests (implicit GEMM and depthwise).
#pragma once
#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <string>
#include <vector>

#include "engines/cuda/common/nvrtc_compile.hpp"
#include "common/dims.hpp"
#include "gemm_test_util.hpp"

namespace cuda_conv_test {

namespace dg = dnngraph;
using gemm_test::Dims;
using gemm_test::HostTensor;
using M = dg::PointwiseMode;
using gemm_test::Expect;

inline constexpr const char* kConvEngine = "cuda_conv_implicit_gemm";

// Channels-last strides for [N, C, spatial...] (and KRSC for filters [K, C, spatial...]).
using test_dims::channels_last;

inline HostTensor nhwc(const Dims& d, dg::DataType t) { return ref_test::make_tensor(d, channels_last(d), t); }

inline dg::TensorPtr declare(dg::Graph& g, const std::string& name, const Dims& d, dg::DataType t) {
  return g.tensor(dg::TensorAttr().set_name(name).set_dim(d).set_stride(channels_last(d)).set_data_type(t));
}

// fp32 intermediates and compute (the tests' graphs), with io type `t` where set_types is used.
inline void set_fp32_compute(dg::Graph& g) {
  g.set_intermediate_data_type(dg::DataType::FLOAT).set_compute_data_type(dg::DataType::FLOAT);
}
inline void set_types(dg::Graph& g, dg::DataType t) {
  g.set_io_data_type(t);
  set_fp32_compute(g);
}

// g's partitions that have an anchor (the ones the conv engines take), lowered on the CPU.
inline ::testing::AssertionResult anchored_partitions(dg::Graph& g, std::vector<dg::Partition>& anchored) {
  gemm_test::Lowered low;
  auto lowered = gemm_test::lower_graph(g, low);
  if (!lowered) return lowered;
  for (const auto& p : low.parts)
    if (dg::cuda::anchor_node(p) >= 0) anchored.push_back(p);
  return lowered;
}

// fn(p) for each partition of g that has an anchor; a fatal failure in fn ends the walk.
template <typename Fn>
void for_each_anchored_partition(dg::Graph& g, Fn fn) {
  std::vector<dg::Partition> parts;
  ASSERT_TRUE(anchored_partitions(g, parts));
  for (const auto& p : parts) {
    fn(p);
    if (::testing::Test::HasFatalFailure()) return;
  }
}

// DX = conv_dgrad(DY, W) with `attr`, DX of dims `dx` an output; all channels-last of type t.
inline void add_dgrad(dg::Graph& g, const Dims& dy, const Dims& w, const Dims& dx, dg::DataType t,
                      const dg::ConvDgradAttr& attr) {
  auto out = g.conv_dgrad(declare(g, "DY", dy, t), declare(g, "W", w, t), attr);
  out->set_dim(dx).set_stride(channels_last(dx)).set_output(true);
}

// DW = conv_wgrad(DY, X) with `attr`, DW of dims `dw` an output; all channels-last of type t.
inline void add_wgrad(dg::Graph& g, const Dims& dy, const Dims& x, const Dims& dw, dg::DataType t,
                      const dg::ConvWgradAttr& attr) {
  auto out = g.conv_wgrad(declare(g, "DY", dy, t), declare(g, "X", x, t), attr);
  out->set_dim(dw).set_stride(channels_last(dw)).set_output(true);
}

// bf16 X [2, 32, 14, 14] -> conv 3x3 (padding 1) with W [k, wc, 3, 3] -> + bias [k] -> ReLU, all
// channels-last: the graph of the fprop (wc 32) and depthwise (k 32, wc 1) compile tests.
inline void add_conv_bias_relu(dg::Graph& g, int64_t k, int64_t wc) {
  set_types(g, dg::DataType::BFLOAT16);
  auto x = declare(g, "X", {2, 32, 14, 14}, dg::DataType::BFLOAT16);
  auto w = declare(g, "W", {k, wc, 3, 3}, dg::DataType::BFLOAT16);
  auto b = declare(g, "B", {1, k, 1, 1}, dg::DataType::BFLOAT16);
  auto y = g.conv_fprop(x, w, dg::ConvFpropAttr().set_padding({1, 1}));
  y = g.pointwise(g.bias(y, b), dg::PointwiseAttr().set_mode(M::RELU_FWD));
  y->set_output(true).set_stride(channels_last({2, k, 14, 14}));
}

// Compiles `src` for `arch` through NVRTC, its wgmma not serialized by ptxas; a failure names `what`.
inline void expect_compiles(const std::string& src, const char* file, const char* arch, const std::string& what = "") {
  ASSERT_TRUE(gemm_test::compiles_unserialized(src, file, arch)) << what;
}

struct Case {
  Dims x;     // N, C, spatial...
  int64_t k;  // output channels
  Dims filt, pre, post, stride, dil;
};

inline Dims out_dims(const Case& c) {
  Dims y{c.x[0], c.k};
  for (size_t i = 0; i < c.filt.size(); ++i)
    y.push_back((c.x[2 + i] + c.pre[i] + c.post[i] - c.dil[i] * (c.filt[i] - 1) - 1) / c.stride[i] + 1);
  return y;
}

// The filter's dims [K, C, spatial...].
inline Dims filter_dims(const Case& c) {
  Dims wd{c.k, c.x[1]};
  for (int64_t f : c.filt) wd.push_back(f);
  return wd;
}

// A conv attribute (fprop, dgrad or wgrad) with the case's padding, stride and dilation.
template <typename Attr>
Attr geometry(const Case& c) {
  return Attr().set_pre_padding(c.pre).set_post_padding(c.post).set_stride(c.stride).set_dilation(c.dil);
}

// The wgmma core (fprop on sm_90a) reads fp32 as TF32 by dropping the low 13 mantissa bits (no
// rounding): a further ~1e-3 relative bias, as test_cuda_gemm.cpp's kTf32TruncTol allows.
inline constexpr double kTf32TruncTol = 3e-3;

// conv -> + bias -> ReLU (or conv alone; with `residual`: conv -> + bias -> + R -> ReLU, R an input
// of the output's shape), stored channels-last in `out`; FLOAT inputs as TF32. `x_strides`: X's
// strides where not channels-last.
inline void run_case(const Case& c, dg::DataType t, dg::DataType out, bool fused, std::mt19937& rng, int plans = 1,
                     bool residual = false, const Dims& x_strides = {}) {
  const Dims wd = filter_dims(c);
  Dims bd(c.x.size(), 1);
  bd[1] = c.k;
  const Dims yd = out_dims(c);
  HostTensor x = x_strides.empty() ? nhwc(c.x, t) : ref_test::make_tensor(c.x, x_strides, t);
  HostTensor w = nhwc(wd, t), b = nhwc(bd, dg::DataType::FLOAT), r = nhwc(yd, dg::DataType::FLOAT);
  gemm_test::fill_random(x, rng);
  gemm_test::fill_random(w, rng);
  gemm_test::fill_random(b, rng);
  if (fused && residual) gemm_test::fill_random(r, rng);
  int64_t taps = c.x[1];
  for (int64_t f : c.filt) taps *= f;
  std::vector<HostTensor> in{x, w};
  if (fused) in.push_back(b);
  if (fused && residual) in.push_back(r);
  const bool tf32 = t == dg::DataType::FLOAT;
  const double tol = out == dg::DataType::FLOAT ? (tf32 ? kTf32TruncTol : 2e-5) : 1.2e-2;
  gemm_test::run_vs_ref(kConvEngine, in, {nhwc(yd, out)},
                        [&](dg::Graph& g, const std::vector<dg::TensorPtr>& ts) {
                          set_fp32_compute(g);
                          g.set_allow_tf32(tf32);
                          auto y = g.conv_fprop(ts[0], ts[1], geometry<dg::ConvFpropAttr>(c));
                          if (fused) y = g.bias(y, ts[2]);
                          if (fused && residual) y = g.add(y, ts[3]);
                          if (fused) y = g.pointwise(y, dg::PointwiseAttr().set_mode(M::RELU_FWD));
                          return std::vector<dg::TensorPtr>{y};
                        },
                        {Expect{tol, std::sqrt(double(taps)) * (tf32 ? 1.0 : 0.1)}}, plans);
}

}  // namespace cuda_conv_test
