// Graphs the cudnn engine's tests build (on the CPU and on a GPU): fused conv + bias + ReLU and
// matmul + epilogue, channels-last.
#pragma once
#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <string>
#include <vector>

#include "common/dims.hpp"
#include "engines/cudnn/cudnn_engine.hpp"
#include "engines/test_cuda_util.hpp"
#include "planning/plan_set.hpp"

namespace dnngraph::cudnn::test_graphs {

namespace ct = dnngraph::cuda::testing;
namespace dg = dnngraph;
using T = DataType;

using test_dims::channels_last;

inline dg::TensorPtr nhwc(dg::Graph& g, const std::string& name, const std::vector<int64_t>& d, T t) {
  return g.tensor(dg::TensorAttr().set_name(name).set_dim(d).set_stride(channels_last(d)).set_data_type(t));
}

// Y = relu(conv(X, W) + B), channels-last; spatial rank from x_dims.
inline ct::Builder conv_bias_relu(std::vector<int64_t> x_dims, int64_t k, std::vector<int64_t> pad,
                                  std::vector<int64_t> stride, std::vector<int64_t> dilation, T io) {
  return [=](dg::Graph& g) {
    g.set_io_data_type(io).set_intermediate_data_type(T::FLOAT).set_compute_data_type(T::FLOAT);
    std::vector<int64_t> w_dims{k, x_dims[1]}, b_dims(x_dims.size(), 1);
    for (size_t i = 2; i < x_dims.size(); ++i) w_dims.push_back(3);
    b_dims[1] = k;
    auto x = nhwc(g, "X", x_dims, io);
    auto w = nhwc(g, "W", w_dims, io);
    auto b = nhwc(g, "B", b_dims, io);
    auto y = g.conv_fprop(x, w, dg::ConvFpropAttr().set_pre_padding(pad).set_post_padding(pad).set_stride(stride)
                                    .set_dilation(dilation));
    auto r = g.relu(g.bias(y, b));
    r->set_output(true).set_data_type(io);
  };
}

// DX = conv_dgrad(DY, W): the transposed convolution of a decoder, R x R filters, stride 2, pad
// (R - 2) / 2, channels-last; dy_dims [n, k, h, w] gives dx [n, c, 2h, 2w].
inline ct::Builder conv_dgrad_stride2(std::vector<int64_t> dy_dims, int64_t c, int64_t r, T io) {
  return [=](dg::Graph& g) {
    g.set_io_data_type(io).set_intermediate_data_type(T::FLOAT).set_compute_data_type(T::FLOAT);
    const int64_t pad = (r - 2) / 2;
    const std::vector<int64_t> dx_dims{dy_dims[0], c, 2 * dy_dims[2], 2 * dy_dims[3]};
    auto dy = nhwc(g, "DY", dy_dims, io);
    auto w = nhwc(g, "W", {dy_dims[1], c, r, r}, io);
    auto dx = g.conv_dgrad(dy, w, dg::ConvDgradAttr().set_padding({pad, pad}).set_stride({2, 2}).set_dilation({1, 1}));
    dx->set_output(true).set_dim(dx_dims).set_stride(channels_last(dx_dims)).set_data_type(io);
  };
}

// DW = conv_wgrad(DY, X) of a 3x3 pad-1 stride-1 convolution, channels-last, DW in FLOAT.
inline ct::Builder conv_wgrad_3x3(std::vector<int64_t> x_dims, int64_t k, T io) {
  return [=](dg::Graph& g) {
    g.set_io_data_type(io).set_intermediate_data_type(T::FLOAT).set_compute_data_type(T::FLOAT);
    const std::vector<int64_t> dy_dims{x_dims[0], k, x_dims[2], x_dims[3]}, dw_dims{k, x_dims[1], 3, 3};
    auto dy = nhwc(g, "DY", dy_dims, io);
    auto x = nhwc(g, "X", x_dims, io);
    auto dw = g.conv_wgrad(dy, x, dg::ConvWgradAttr().set_padding({1, 1}).set_stride({1, 1}).set_dilation({1, 1}));
    dw->set_output(true).set_dim(dw_dims).set_stride(channels_last(dw_dims)).set_data_type(T::FLOAT);
  };
}

// C = gelu(alpha * A x B + bias) with A [batch, M, K], B [batch, K, N], row-major.
inline ct::Builder matmul_epilogue(int64_t batch, int64_t m, int64_t n, int64_t k, T io) {
  return [=](dg::Graph& g) {
    g.set_io_data_type(io).set_intermediate_data_type(T::FLOAT).set_compute_data_type(T::FLOAT);
    auto a = ct::input(g, "A", {batch, m, k}, io);
    auto b = ct::input(g, "B", {batch, k, n}, io);
    auto bias = ct::input(g, "bias", {1, 1, n}, io);
    auto alpha = g.tensor(0.25);
    auto c = g.gelu(g.bias(g.scale(g.matmul(a, b, dg::MatmulAttr()), alpha), bias));
    c->set_output(true).set_data_type(io);
  };
}

// fn(index, name, workspace bytes) on each of the first max_plans plans of g that build (the others
// are skipped), then a log line of how that plan launches. Wrap the call in ASSERT_NO_FATAL_FAILURE:
// a fatal failure inside fn ends the walk.
template <class F>
void for_each_built_plan(dg::Graph& g, dg::Handle& h, int64_t max_plans, F fn) {
  const int64_t n = std::min<int64_t>(g.get_execution_plan_count(), max_plans);
  for (int64_t i = 0; i < n; ++i) {
    std::string name;
    ASSERT_TRUE(g.get_plan_name_at_index(i, name).ok());
    if (!g.build_plan_at_index(h, i).ok()) continue;
    int64_t ws = 0;
    ASSERT_TRUE(g.get_workspace_size_plan_at_index(i, ws).ok());
    fn(i, name, ws);
    if (::testing::Test::HasFatalFailure()) return;
    const auto& pp = impl_of(g).plans->parts.at(0);
    std::printf("[ INFO ] %s launches by %s\n", name.c_str(), launch_path(*pp.built.at(pp.index_for(i))).c_str());
  }
}

}  // namespace dnngraph::cudnn::test_graphs
