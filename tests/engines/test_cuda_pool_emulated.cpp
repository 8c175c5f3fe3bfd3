// kernels/pool_direct.cuh compiled for the host and run thread by thread (each CUDA thread of a
// small grid in turn; the kernel's threads share nothing), on the arguments cuda_pool_direct
// builds for a partition (pool_direct_params), against the ref engine: the window walk, the
// padding, the walk order over Y's strides, the grid-stride loop, both index types and every
// input/output type pair are checked here, where no GPU is. The NVRTC build and the launch are the
// GPU tests' (test_cuda_pool.cpp).
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <random>

#include "core/dtype.hpp"
#include "engines/cuda/pool/pool_direct.hpp"
#include "engines/ref_test_util.hpp"
#include "fusion/partition.hpp"
#include "graph/graph_impl.hpp"
#include "pool_test_util.hpp"

namespace pool_host {

struct Dim3 {
  unsigned x = 0;
};
Dim3 threadIdx, blockIdx, blockDim, gridDim;

#include "host_cuda_shims.inl"
#include "engines/cuda/kernels/pool_direct.cuh"
#undef __device__
#undef __forceinline__

}  // namespace pool_host

namespace dnngraph {
namespace {

namespace k = pool_host::dg;
using ref_test::Dims;
using ref_test::HostTensor;
using RM = ResampleMode;
using T = DataType;
using pool_test::Layout;
using pool_test::pooled;
using pool_test::strides_of;
using ref_test::random_float_type;
static_assert(sizeof(k::PoolParams) == sizeof(cuda::PoolDirectParams), "the host mirror must match the kernel's");

// Every thread of a grid of `blocks` x 256 runs `kernel` in turn.
template <class Kernel>
void run_grid(unsigned blocks, Kernel kernel) {
  pool_host::gridDim.x = blocks;
  pool_host::blockDim.x = 256;
  for (unsigned b = 0; b < blocks; ++b)
    for (unsigned t = 0; t < 256; ++t) {
      pool_host::blockIdx.x = b;
      pool_host::threadIdx.x = t;
      kernel();
    }
}

// f.template operator()<DX, DY>() with the kernel's type enums of X's and Y's types.
template <class F>
void with_types(T xt, T yt, F&& f) {
  auto by_y = [&]<int DX>() {
    if (yt == T::FLOAT) f.template operator()<DX, k::DT_FLOAT>();
    else if (yt == T::HALF) f.template operator()<DX, k::DT_HALF>();
    else f.template operator()<DX, k::DT_BFLOAT16>();
  };
  if (xt == T::FLOAT) by_y.template operator()<k::DT_FLOAT>();
  else if (xt == T::HALF) by_y.template operator()<k::DT_HALF>();
  else by_y.template operator()<k::DT_BFLOAT16>();
}

// The generic walk (32- or 64-bit index), or the channels-vector 2-D kernel (pool2d_channels).
void run_kernel(const k::PoolParams& P, T xt, T yt, bool index64, unsigned blocks) {
  with_types(xt, yt, [&]<int DX, int DY>() {
    run_grid(blocks, [&] {
      if (index64) k::pool_direct<DX, DY, unsigned long long>(P);
      else k::pool_direct<DX, DY, unsigned>(P);
    });
  });
}
void run_channels_kernel(const k::PoolParams& P, T xt, T yt, unsigned blocks) {
  with_types(xt, yt, [&]<int DX, int DY>() { run_grid(blocks, [&] { k::pool2d_channels<DX, DY>(P); }); });
}

// The engine's kernel argument for resample(X) -> Y, from the graph's one partition.
cuda::PoolDirectParams params_for(const HostTensor& x, const HostTensor& y, const ResampleAttr& attr) {
  Graph g;
  y.describe(g.resample(x.declare(g, "X"), attr));
  Handle cpu(Device::cpu());
  EXPECT_TRUE(g.validate().ok());
  EXPECT_TRUE(g.build_operation_graph(cpu).ok());
  std::vector<Partition> parts;
  EXPECT_TRUE(partition_graph(*impl_of(g).ir, parts).ok());
  cuda::PoolDirectParams P;
  EXPECT_EQ(parts.size(), 1u);
  const Status s = cuda::pool_direct_params(parts.at(0), P);
  EXPECT_TRUE(s.ok()) << s.to_string();
  return P;
}

// The emulated kernel's Y against ref's, over a grid of `blocks` blocks: the generic walk with both
// index types, or (by_channels) the channels-vector 2-D kernel.
void expect_kernel_matches_ref(HostTensor x, const HostTensor& y_like, const ResampleAttr& attr, unsigned blocks = 2,
                               bool by_channels = false) {
  HostTensor want = y_like;
  ASSERT_TRUE(ref_test::run_one_op_on_ref(x, want, [&](Graph& g, const TensorPtr& X) { return g.resample(X, attr); }).ok());
  const cuda::PoolDirectParams host = params_for(x, y_like, attr);
  for (int walk = 0; walk < (by_channels ? 1 : 2); ++walk) {
    HostTensor got = y_like;  // NaN everywhere
    k::PoolParams P;
    std::memcpy(&P, &host, sizeof(P));
    P.x = static_cast<const char*>(x.data());
    P.y = static_cast<char*>(got.data());
    if (by_channels) run_channels_kernel(P, x.dtype, got.dtype, blocks);
    else run_kernel(P, x.dtype, got.dtype, walk == 1, blocks);
    SCOPED_TRACE(by_channels ? "channels-vector kernel" : walk == 1 ? "64-bit walk" : "32-bit walk");
    ref_test::expect_near(got, [&](const Dims& i) { return want.get(i); }, -1.0, 1.0);
  }
}

HostTensor tensor(const Dims& dims, Layout l, T t, std::mt19937& rng, bool fill) {
  HostTensor h = ref_test::make_tensor(dims, strides_of(dims, l, rng), t);
  if (fill) h.randomize(rng, -2, 2);
  return h;
}

TEST(CudaPoolEmulated, RandomPoolingMatchesRef) {
  std::mt19937 rng(502);
  const RM modes[] = {RM::MAXPOOL, RM::AVGPOOL_INCLUDE_PADDING, RM::AVGPOOL_EXCLUDE_PADDING};
  for (int trial = 0; trial < 36; ++trial) {
    const size_t spatial = 1 + rng() % 3;
    Dims x = {int64_t(1 + rng() % 3), int64_t(1 + rng() % 12)}, w, s, pre, post;
    for (size_t i = 0; i < spatial; ++i) {
      w.push_back(1 + rng() % 3);
      s.push_back(1 + rng() % 3);
      pre.push_back(rng() % w.back());
      post.push_back(rng() % w.back());
      x.push_back(std::max<int64_t>(w.back(), 1 + rng() % (spatial == 3 ? 6 : 11)));
    }
    const RM mode = modes[trial % 3];
    SCOPED_TRACE("trial " + std::to_string(trial) + " " + std::string(to_string(mode)));
    const T tx = random_float_type(rng), ty = random_float_type(rng);
    expect_kernel_matches_ref(tensor(x, static_cast<Layout>(trial % 3), tx, rng, true),
                              tensor(pooled(x, w, s, pre, post), static_cast<Layout>((trial / 3) % 3), ty, rng, false),
                              ResampleAttr().set_resampling_mode(mode).set_window(w).set_stride(s).set_pre_padding(pre).set_post_padding(post));
  }
}

TEST(CudaPoolEmulated, RandomResizingMatchesRef) {
  std::mt19937 rng(503);
  for (int trial = 0; trial < 24; ++trial) {
    const size_t spatial = 1 + rng() % 3;
    Dims x = {int64_t(1 + rng() % 3), int64_t(1 + rng() % 10)};
    for (size_t i = 0; i < spatial; ++i) x.push_back(1 + rng() % 9);
    Dims y = x;
    for (size_t i = 0; i < spatial; ++i) y[i + 2] = 1 + rng() % 13;
    const RM mode = trial % 2 ? RM::NEAREST : RM::BILINEAR;
    SCOPED_TRACE("trial " + std::to_string(trial) + " " + std::string(to_string(mode)));
    const T tx = random_float_type(rng), ty = random_float_type(rng);
    expect_kernel_matches_ref(tensor(x, static_cast<Layout>(trial % 3), tx, rng, true),
                              tensor(y, static_cast<Layout>((trial / 2) % 3), ty, rng, false),
                              ResampleAttr().set_resampling_mode(mode));
  }
}

// NaN through max pooling, windows cut by padding on every side, and one thread walking many
// elements (a single block).
TEST(CudaPoolEmulated, NaNPaddingAndLongWalks) {
  std::mt19937 rng(504);
  for (RM mode : {RM::MAXPOOL, RM::AVGPOOL_EXCLUDE_PADDING, RM::AVGPOOL_INCLUDE_PADDING}) {
    SCOPED_TRACE(std::string(to_string(mode)));
    expect_kernel_matches_ref(tensor({1, 3, 3, 2}, Layout::NCHW, T::FLOAT, rng, true),
                              tensor(pooled({1, 3, 3, 2}, {3, 3}, {2, 1}, {2, 2}, {2, 2}), Layout::NCHW, T::FLOAT, rng, false),
                              ResampleAttr().set_resampling_mode(mode).set_window({3, 3}).set_stride({2, 1}).set_padding({2, 2}));
  }
  HostTensor x = tensor({1, 3, 6, 6}, Layout::NHWC, T::FLOAT, rng, true);
  x.set({0, 1, 2, 3}, std::nan(""));
  expect_kernel_matches_ref(x, tensor({1, 3, 3, 3}, Layout::NHWC, T::FLOAT, rng, false),
                            ResampleAttr().set_resampling_mode(RM::MAXPOOL).set_window({2, 2}).set_stride({2, 2}));
  const auto stem = ResampleAttr().set_resampling_mode(RM::MAXPOOL).set_window({3, 3}).set_stride({2, 2}).set_padding({1, 1});
  expect_kernel_matches_ref(tensor({2, 16, 30, 30}, Layout::NHWC, T::BFLOAT16, rng, true),
                            tensor({2, 16, 15, 15}, Layout::NHWC, T::BFLOAT16, rng, false), stem, 1);
}

// The channels-vector 2-D kernel (pool2d_channels): channels-last X and Y whose channels are whole
// 16-byte vectors of X (8 of 16-bit types, 4 of fp32), every mode and type pair, windows cut by
// padding on every side, a NaN, one block walking many vectors.
TEST(CudaPoolEmulated, ChannelsLastPoolingByVectorsMatchesRef) {
  std::mt19937 rng(506);
  const RM modes[] = {RM::MAXPOOL, RM::AVGPOOL_INCLUDE_PADDING, RM::AVGPOOL_EXCLUDE_PADDING};
  for (int trial = 0; trial < 18; ++trial) {
    const T tx = random_float_type(rng), ty = random_float_type(rng);
    const int64_t vec = 16 / static_cast<int64_t>(size_of(tx));
    Dims x = {int64_t(1 + rng() % 2), vec * int64_t(1 + rng() % 3)}, w, s, pre, post;
    for (int i = 0; i < 2; ++i) {
      w.push_back(1 + rng() % 3);
      s.push_back(1 + rng() % 3);
      pre.push_back(rng() % w.back());
      post.push_back(rng() % w.back());
      x.push_back(std::max<int64_t>(w.back(), 1 + rng() % 9));
    }
    const RM mode = modes[trial % 3];
    SCOPED_TRACE("trial " + std::to_string(trial) + " " + std::string(to_string(mode)));
    HostTensor xin = tensor(x, Layout::NHWC, tx, rng, true);
    if (trial == 0) xin.set({0, 1, 0, 0}, std::nan(""));
    expect_kernel_matches_ref(xin, tensor(pooled(x, w, s, pre, post), Layout::NHWC, ty, rng, false),
                              ResampleAttr().set_resampling_mode(mode).set_window(w).set_stride(s).set_pre_padding(pre).set_post_padding(post),
                              trial % 2 ? 1 : 2, /*by_channels=*/true);
  }
}

// The channels-vector kernel's 2-D resizing: nearest and bilinear, up and down, by whole and odd
// factors (a source edge clamps the upper corner), every type pair, one block walking many vectors.
TEST(CudaPoolEmulated, ChannelsLastResizingByVectorsMatchesRef) {
  std::mt19937 rng(507);
  for (int trial = 0; trial < 16; ++trial) {
    const T tx = random_float_type(rng), ty = random_float_type(rng);
    const int64_t vec = 16 / static_cast<int64_t>(size_of(tx));
    const Dims x = {int64_t(1 + rng() % 2), vec * int64_t(1 + rng() % 3), int64_t(1 + rng() % 9), int64_t(1 + rng() % 9)};
    Dims y = x;
    y[2] = trial % 4 == 0 ? 2 * x[2] : 1 + rng() % 13;
    y[3] = trial % 4 == 0 ? 2 * x[3] : 1 + rng() % 13;
    const RM mode = trial % 2 ? RM::NEAREST : RM::BILINEAR;
    SCOPED_TRACE("trial " + std::to_string(trial) + " " + std::string(to_string(mode)));
    expect_kernel_matches_ref(tensor(x, Layout::NHWC, tx, rng, true), tensor(y, Layout::NHWC, ty, rng, false),
                              ResampleAttr().set_resampling_mode(mode), trial % 2 ? 1 : 2, /*by_channels=*/true);
  }
}

// The walk follows Y's strides: NHWC's innermost is C, NCHW's W, a random layout's smallest stride.
TEST(CudaPoolEmulated, WalkOrderFollowsYsStrides) {
  std::mt19937 rng(505);
  const auto pool = ResampleAttr().set_resampling_mode(RM::MAXPOOL).set_window({2, 2}).set_stride({2, 2});
  const Dims x = {2, 8, 6, 4}, y = {2, 8, 3, 2};
  const auto nhwc = params_for(tensor(x, Layout::NCHW, T::FLOAT, rng, false), tensor(y, Layout::NHWC, T::FLOAT, rng, false), pool);
  EXPECT_EQ(std::vector<int32_t>(nhwc.order, nhwc.order + 4), (std::vector<int32_t>{0, 2, 3, 1}));
  const auto nchw = params_for(tensor(x, Layout::NHWC, T::FLOAT, rng, false), tensor(y, Layout::NCHW, T::FLOAT, rng, false), pool);
  EXPECT_EQ(std::vector<int32_t>(nchw.order, nchw.order + 4), (std::vector<int32_t>{0, 1, 2, 3}));
  EXPECT_EQ(nchw.count, 2 * 8 * 3 * 2);
  EXPECT_EQ(nchw.mode, 0);
  EXPECT_FLOAT_EQ(nchw.inv_volume, 0.25f);
}

// What cuda_pool_direct refuses, by node, tensor and rule (it says so on any handle: the CUDA
// handle and GPU gate checks come first in the engine, and are the GPU tests').
TEST(CudaPoolEmulated, ParamsRejectWithReasons) {
  auto reason = [](Graph& g) {
    Handle cpu(Device::cpu());
    EXPECT_TRUE(g.validate().ok());
    EXPECT_TRUE(g.build_operation_graph(cpu).ok());
    std::vector<Partition> parts;
    EXPECT_TRUE(partition_graph(*impl_of(g).ir, parts).ok());
    cuda::PoolDirectParams P;
    return cuda::pool_direct_params(parts.at(0), P).message();
  };
  auto maxpool = [](size_t spatial) {
    return ResampleAttr().set_name("pool").set_resampling_mode(RM::MAXPOOL).set_window(Dims(spatial, 1)).set_stride(Dims(spatial, 1));
  };
  auto input = [](Graph& g, const Dims& d, T t) {
    std::mt19937 r(1);
    return HostTensor(t, d, ref_test::random_strides(d, r)).declare(g, "X");
  };
  {
    Graph g;
    g.resample(input(g, {1, 2, 4, 4}, T::DOUBLE), maxpool(2))->set_output(true);
    EXPECT_EQ(reason(g), "node 'pool', tensor 'X': data type DOUBLE is not supported (FLOAT, HALF and BFLOAT16 are)");
  }
  {
    Graph g;
    g.resample(input(g, Dims(9, 2), T::FLOAT), maxpool(7))->set_output(true);
    EXPECT_EQ(reason(g), "node 'pool', tensor 'X': rank 9 is outside 3 .. 8 (N, C and 1 to 6 spatial dims)");
  }
  {
    Graph g;
    g.pointwise(input(g, {2, 2}, T::FLOAT), PointwiseAttr().set_name("relu").set_mode(PointwiseMode::RELU_FWD))->set_output(true);
    EXPECT_EQ(reason(g), "takes a partition of one resample node; this one has 1 node(s), the first node 'relu' (pointwise)");
  }
}

}  // namespace
}  // namespace dnngraph
