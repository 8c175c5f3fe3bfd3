// cpu_conv_wgrad_gemm against ref: random conv_wgrad problems (1D to 3D, groups, strides,
// dilations, uneven padding, fp32 / bf16 / fp16 inputs, channels-last or strided tensors, 1-4
// threads), fp32 / bf16 / fp16 DW, channels-last or strided; problems of several pixel chunks;
// 1x1 problems read in place; and the engine's refusals.
#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <string>
#include <vector>

#include "cpu_test_util.hpp"
#include "ref_test_util.hpp"

namespace {

namespace dg = dnngraph;
using ref_test::Dims;
using ref_test::HostTensor;

// Strides of a dense channels-last tensor of `dims` (N, C, spatial...).
Dims channels_last(const Dims& dims) {
  Dims st(dims.size());
  int64_t s = dims[1];
  st[1] = 1;
  for (size_t d = dims.size(); d-- > 2;) {
    st[d] = s;
    s *= dims[d];
  }
  st[0] = s;
  return st;
}

struct WgradCase {
  int nsp = 2;
  int64_t n = 1, c = 1, k = 1, groups = 1;
  Dims in, ker, out, stride, dil, pre, post;
  dg::DataType type = dg::DataType::FLOAT;
  bool channels_last = false;
  Dims x_dims() const { return cat({n, c}, in); }
  Dims dy_dims() const { return cat({n, k}, out); }
  Dims dw_dims() const { return cat({k, c / groups}, ker); }
  static Dims cat(Dims a, const Dims& b) {
    a.insert(a.end(), b.begin(), b.end());
    return a;
  }
  std::string describe() const {
    std::string s = "n=" + std::to_string(n) + " c=" + std::to_string(c) + " k=" + std::to_string(k) + " g=" +
                    std::to_string(groups) + " " + std::string(dg::to_string(type));
    for (int d = 0; d < nsp; ++d)
      s += " [in " + std::to_string(in[d]) + " k " + std::to_string(ker[d]) + " s " + std::to_string(stride[d]) +
           " d " + std::to_string(dil[d]) + " p " + std::to_string(pre[d]) + "/" + std::to_string(post[d]) + "]";
    return s;
  }
};

// A random problem of about `pixels` output pixels at most, `kmax` output channels per group.
WgradCase random_case(std::mt19937& rng, int64_t side, int64_t kmax) {
  WgradCase w;
  for (;;) {
    w.nsp = 1 + static_cast<int>(rng() % 3);
    w.n = 1 + rng() % 2;
    w.groups = rng() % 3 == 0 ? 1 + rng() % 3 : 1;
    w.c = w.groups * (1 + rng() % 20);
    w.k = w.groups * (1 + rng() % kmax);
    w.in.clear(), w.ker.clear(), w.out.clear(), w.stride.clear(), w.dil.clear(), w.pre.clear(), w.post.clear();
    bool ok = true;
    for (int d = 0; d < w.nsp; ++d) {
      w.in.push_back(1 + rng() % (w.nsp == 3 ? side / 2 : side));
      w.ker.push_back(1 + rng() % 3);
      w.stride.push_back(1 + rng() % 2);
      w.dil.push_back(1 + rng() % 2);
      w.pre.push_back(rng() % 2);
      w.post.push_back(rng() % 2);
      const int64_t span = w.in.back() + w.pre.back() + w.post.back() - w.dil.back() * (w.ker.back() - 1) - 1;
      ok &= span >= 0;
      w.out.push_back(span < 0 ? 0 : span / w.stride.back() + 1);
    }
    if (ok) return w;
  }
}

// DW (of type `dw_type`, channels-last unless `strided_dw`) on the engine against ref.
void run_case(const WgradCase& w, std::mt19937& rng, int threads, dg::DataType dw_type = dg::DataType::FLOAT,
              bool strided_dw = false) {
  SCOPED_TRACE(w.describe() + ", " + std::to_string(threads) + " threads");
  auto tensor = [&](const Dims& d) {
    const Dims st = w.channels_last ? channels_last(d) : ref_test::random_strides(d, rng);
    HostTensor t = ref_test::make_tensor(d, st, w.type);
    t.randomize(rng, -1, 1);
    return t;
  };
  std::vector<HostTensor> in{tensor(w.dy_dims()), tensor(w.x_dims())};
  const Dims dwd = w.dw_dims();
  std::vector<HostTensor> outs{
      ref_test::make_tensor(dwd, strided_dw ? ref_test::random_strides(dwd, rng) : channels_last(dwd), dw_type)};
  int64_t pixels = w.n;
  for (int64_t o : w.out) pixels *= o;
  cpu_test::check_engine_vs_ref(
      "cpu_conv_wgrad_gemm", in, outs,
      [&](dg::Graph& g, const std::vector<dg::TensorPtr>& t) {
        auto dw = g.conv_wgrad(t[0], t[1], dg::ConvWgradAttr().set_pre_padding(w.pre).set_post_padding(w.post)
                                               .set_stride(w.stride).set_dilation(w.dil));
        dw->set_dim(dwd);
        return std::vector<dg::TensorPtr>{dw};
      },
      1e-5, std::sqrt(static_cast<double>(std::max<int64_t>(pixels, 1))), threads);
}

TEST(CpuConvWgrad, RandomProblemsMatchRef) {
  std::mt19937 rng(81);
  const dg::DataType types[] = {dg::DataType::FLOAT, dg::DataType::BFLOAT16, dg::DataType::HALF};
  for (int trial = 0; trial < 24; ++trial) {
    WgradCase w = random_case(rng, 14, 40);
    w.type = types[trial % 3];
    w.channels_last = trial % 2 == 0;
    run_case(w, rng, 1 + static_cast<int>(rng() % 4), trial % 5 == 4 ? dg::DataType::BFLOAT16 : dg::DataType::FLOAT,
             trial % 7 == 6);
  }
}

// A wide im2col (256-296 input channels x 9 taps: chunks of 256 pixels) over 300-340 pixels: two
// chunks whose sums add up, the second one short; into DW itself (fp32 KRSC) and, for the bf16
// DW, through the accumulator.
TEST(CpuConvWgrad, SeveralPixelChunksAddUp) {
  std::mt19937 rng(82);
  for (int trial = 0; trial < 3; ++trial) {
    WgradCase w;
    w.nsp = 2;
    w.n = 1 + trial % 2;
    w.c = 256 + 20 * trial;
    w.k = 5 + trial;
    w.in = {15 + trial, 20};
    w.ker = {3, 3};
    w.stride = {1, 1 + trial % 2};
    w.dil = {1, 1};
    w.pre = w.post = {1, 1};
    for (int d = 0; d < 2; ++d)
      w.out.push_back((w.in[d] + w.pre[d] + w.post[d] - w.ker[d]) / w.stride[d] + 1);
    w.channels_last = true;
    run_case(w, rng, 2, trial == 2 ? dg::DataType::BFLOAT16 : dg::DataType::FLOAT);
  }
}

// 1x1 stride-1 unpadded fp32 channels-last problems whose channels per group divide a tile (16,
// 32, 48 or 64): DY and X read in place (PointwiseInPlace), pixels from under one thread's share
// to several threads' (partial sums added), into DW itself and, for a bf16 DW, through the
// accumulator; 1-3 spatial dims and two images at one pixel stride.
TEST(CpuConvWgrad, PointwiseInPlaceMatchesRef) {
  std::mt19937 rng(84);
  for (int trial = 0; trial < 12; ++trial) {
    WgradCase w;
    w.nsp = 1 + trial % 3;
    w.n = 1 + rng() % 2;
    w.groups = trial % 4 == 3 ? 2 : 1;
    w.c = w.groups * 16 * (1 + static_cast<int64_t>(rng() % 4));
    w.k = w.groups * 16 * (1 + static_cast<int64_t>(rng() % 4));
    const int64_t side = trial < 4 ? 6 : w.nsp == 1 ? 1500 : w.nsp == 2 ? 40 : 12;
    for (int d = 0; d < w.nsp; ++d) {
      w.in.push_back(1 + static_cast<int64_t>(rng() % side));
      w.ker.push_back(1);
      w.stride.push_back(1);
      w.dil.push_back(1 + static_cast<int64_t>(rng() % 2));  // no effect on a 1x1 filter
      w.pre.push_back(0);
      w.post.push_back(0);
      w.out.push_back(w.in.back());
    }
    w.channels_last = true;
    run_case(w, rng, 1 + static_cast<int>(rng() % 4), trial % 5 == 4 ? dg::DataType::BFLOAT16 : dg::DataType::FLOAT);
  }
}

// fp32 channels-last problems of any filter, stride, dilation and padding whose channels per group
// divide a tile: each output line's run of pixels whose tap lies inside X read in place per tap,
// lines split between 1-4 threads (partials added) or, with few pixels, DW's blocks; a line block
// of several lines or of one.
TEST(CpuConvWgrad, InPlaceRunsMatchRef) {
  std::mt19937 rng(85);
  for (int trial = 0; trial < 16; ++trial) {
    WgradCase w = random_case(rng, trial % 2 ? 30 : 9, 4);
    // Output lines of 1-40 pixels: few pixels in all (each thread a range of DW's blocks) or many
    // (each a range of lines), blocks of one line or of many.
    const size_t last = static_cast<size_t>(w.nsp - 1);
    w.in[last] = w.dil[last] * (w.ker[last] - 1) + w.stride[last] * (1 + static_cast<int64_t>(rng() % 40));
    w.out[last] = (w.in[last] + w.pre[last] + w.post[last] - w.dil[last] * (w.ker[last] - 1) - 1) / w.stride[last] + 1;
    w.c = w.groups * 16 * (1 + static_cast<int64_t>(rng() % 3));
    w.k = w.groups * 16 * (1 + static_cast<int64_t>(rng() % 3));
    w.channels_last = true;
    run_case(w, rng, 1 + static_cast<int>(rng() % 4), trial % 5 == 4 ? dg::DataType::BFLOAT16 : dg::DataType::FLOAT);
  }
}

// What the engine refuses names the node, the tensor and the rule: a conv_fprop partition, and a
// conv_wgrad into a bf16 DW of 2^24 x 2^23 channels (2^48 bytes, the most a tensor may span),
// whose fp32 accumulator would take 2^49.
TEST(CpuConvWgrad, RefusalsNameTheRule) {
  auto explain = [](bool wgrad) {
    const int64_t c = wgrad ? int64_t{1} << 23 : 4, k = wgrad ? int64_t{1} << 24 : 8;
    dg::Graph g;
    auto x = g.tensor(dg::TensorAttr().set_name("X").set_dim({1, c, 1, 1}).set_stride({c, 1, c, c})
                          .set_data_type(dg::DataType::FLOAT));
    dg::TensorPtr y;
    if (wgrad) {
      auto dy = g.tensor(dg::TensorAttr().set_name("DY").set_dim({1, k, 1, 1}).set_stride({k, 1, k, k})
                             .set_data_type(dg::DataType::FLOAT));
      y = g.conv_wgrad(dy, x, dg::ConvWgradAttr().set_pre_padding({0, 0}).set_post_padding({0, 0}).set_stride({1, 1})
                                  .set_dilation({1, 1}));
      y->set_dim({k, c, 1, 1}).set_stride({c, 1, c, c});
    } else {
      auto w = g.tensor(dg::TensorAttr().set_name("W").set_dim({k, c, 1, 1}).set_stride({c, 1, c, c})
                            .set_data_type(dg::DataType::FLOAT));
      y = g.conv_fprop(x, w, dg::ConvFpropAttr().set_pre_padding({0, 0}).set_post_padding({0, 0}).set_stride({1, 1})
                                 .set_dilation({1, 1}));
    }
    y->set_output(true).set_name("OUT").set_data_type(wgrad ? dg::DataType::BFLOAT16 : dg::DataType::FLOAT);
    g.select_engines({"cpu_conv_wgrad_gemm"});
    dg::Handle handle(dg::Device::cpu());
    auto s = g.validate();
    EXPECT_TRUE(s.ok()) << s.to_string();
    EXPECT_TRUE(g.build_operation_graph(handle).ok());
    EXPECT_TRUE(g.create_execution_plans({dg::HeurMode::A, dg::HeurMode::FALLBACK}).ok());
    EXPECT_FALSE(g.check_support(handle).ok());
    return g.explain();
  };
  const std::string fprop = explain(false), wgrad = explain(true);
  EXPECT_NE(fprop.find("cpu_conv_wgrad_gemm: rejected: the partition is not anchored on conv_wgrad"), std::string::npos)
      << fprop;
  EXPECT_NE(wgrad.find("cpu_conv_wgrad_gemm: rejected: node 'conv_wgrad_0', tensor 'OUT': its fp32 accumulator needs "
                       "more than 2^48 bytes of workspace"),
            std::string::npos)
      << wgrad;
}

}  // namespace
