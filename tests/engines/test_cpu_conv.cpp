// The CPU convolution engines against ref on seeded random shapes: NHWC, NCHW and other
// layouts, 1D/2D/3D, groups, stride, dilation, asymmetric padding, fp32/bf16/fp16 inputs,
// conv_dgrad (transposed convolution), fusion chains, NaN-poisoned outputs. Every plan index is
// checked to be the engine under test.
#include <gtest/gtest.h>

#include <random>

#include "cpu_conv_test_util.hpp"
#include "cpu_test_util.hpp"
#include "ref_test_util.hpp"

namespace {

namespace dg = dnngraph;
using ref_test::Dims;
using test_dims::channels_last;
using ref_test::HostTensor;

using cpu_conv_test::ConvCase;
using cpu_conv_test::fwd_size;
using cpu_conv_test::Kind;
using cpu_conv_test::random_case;
using cpu_conv_test::run_conv_case;

TEST(CpuConvImplicitGemm, RandomFpropMatchesRef) {
  std::mt19937 rng(31);
  for (int trial = 0; trial < 14; ++trial) {
    ConvCase cc = random_case(rng, Kind::GENERAL);
    cc.type = ref_test::random_float_type(rng);
    run_conv_case("cpu_conv_implicit_gemm", cc, false, rng, false, false, false, false, dg::DataType::FLOAT);
  }
}

TEST(CpuConvImplicitGemm, RandomDgradMatchesRef) {
  std::mt19937 rng(32);
  for (int trial = 0; trial < 12; ++trial) {
    ConvCase cc = random_case(rng, Kind::GENERAL);
    cc.type = trial % 3 == 0 ? dg::DataType::BFLOAT16 : dg::DataType::FLOAT;
    run_conv_case("cpu_conv_implicit_gemm", cc, true, rng, false, false, false, false, dg::DataType::FLOAT);
  }
}

TEST(CpuConvImplicitGemm, FusedEpiloguesMatchRef) {
  std::mt19937 rng(33);
  for (int trial = 0; trial < 6; ++trial) {
    ConvCase cc = random_case(rng, Kind::GENERAL);
    const bool dgrad = trial == 5;
    run_conv_case("cpu_conv_implicit_gemm", cc, dgrad, rng, true, true, trial % 2 == 0, trial % 3 == 0,
                  trial == 4 ? dg::DataType::BFLOAT16 : dg::DataType::FLOAT);
  }
}

// Bias, ReLU and a residual into a channels-last fp32 output: the chain is applied to each
// finished block of the GEMM in the output itself.
TEST(CpuConvImplicitGemm, ChainWrittenInPlaceMatchesRef) {
  std::mt19937 rng(36);
  for (int trial = 0; trial < 6; ++trial) {
    ConvCase cc = random_case(rng, Kind::GENERAL);
    cc.type = dg::DataType::FLOAT;
    if (trial >= 4) cc.k = cc.groups * (20 + rng() % 30);  // several B panels per task
    run_conv_case("cpu_conv_implicit_gemm", cc, false, rng, true, true, trial % 2 == 1, false, dg::DataType::FLOAT,
                  1e-5, true);
  }
}

// Bias and a ReLU clipped above (at 0.5, so both clips are taken), with and without a residual,
// into a channels-last fp32 output: the chain finishes each GEMM tile in place, and each
// depthwise output row.
TEST(CpuConvImplicitGemm, ClippedReluChainInPlaceMatchesRef) {
  std::mt19937 rng(39);
  for (int trial = 0; trial < 6; ++trial) {
    ConvCase cc = random_case(rng, trial < 4 ? Kind::GENERAL : Kind::DEPTHWISE);
    cc.type = dg::DataType::FLOAT;
    cc.relu_upper = 0.5;
    if (trial < 4) cc.k = cc.groups * (20 + rng() % 60);  // several B panels, partial tiles
    const char* engine = trial < 4 ? "cpu_conv_implicit_gemm" : "cpu_conv_depthwise_direct";
    if (trial >= 4) cc.nhwc_in = true;
    run_conv_case(engine, cc, false, rng, true, true, trial % 2 == 1, false, dg::DataType::FLOAT, 1e-5, true);
  }
}

// bf16 convs (AMX where the CPU has it) with a bf16 bias, ReLU and an fp16 residual into a
// channels-last bf16 or fp16 output: the chain converts its operands and its store, and takes the
// GEMM's blocks of rows in one call (EpilogueRun::chain_rows_into), also where an output row's
// pixels are fewer than a tile's.
TEST(CpuConvImplicitGemm, HalfWidthChainTakesBlocksOfRows) {
  std::mt19937 rng(44);
  for (int trial = 0; trial < 6; ++trial) {
    ConvCase cc = random_case(rng, Kind::GENERAL);
    cc.type = dg::DataType::BFLOAT16;
    cc.groups = 1;
    cc.c = 32 * (1 + trial % 3);  // whole 16-pair tile steps
    cc.k = 20 + static_cast<int64_t>(rng() % 50);
    cc.nhwc_in = cc.krsc_w = true;
    cc.bias_type = dg::DataType::BFLOAT16;
    cc.residual_type = dg::DataType::HALF;
    cc.fp32_intermediates = true;
    run_conv_case("cpu_conv_implicit_gemm", cc, false, rng, true, true, trial % 2 == 0, false,
                  trial % 3 == 2 ? dg::DataType::HALF : dg::DataType::BFLOAT16, 1e-5, true);
  }
}

TEST(CpuConvImplicitGemm, LargerChannelsThanOneBlock) {
  std::mt19937 rng(34);
  ConvCase cc;
  cc.nsp = 2; cc.n = 1; cc.c = 300; cc.k = 40; cc.groups = 1;
  cc.in = {5, 6}; cc.ker = {3, 3}; cc.stride = {1, 1}; cc.dil = {1, 1}; cc.pre = {1, 1}; cc.post = {1, 1};
  cc.out = {5, 6};
  run_conv_case("cpu_conv_implicit_gemm", cc, false, rng, true, true, false, false, dg::DataType::FLOAT);
}

// Many output channels: N tasks of several B panels over A rows read in place (fp32 with unit
// channel stride) or gathered (other types and layouts).
// An image whose tap-offset table would pass the engine's cap (350 x 350 x 9 offsets): the rows
// are then resolved tap by tap, channels-last and strided.
TEST(CpuConvImplicitGemm, LargeImageResolvesTapsPerRow) {
  std::mt19937 rng(37);
  for (int trial = 0; trial < 2; ++trial) {
    ConvCase cc;
    cc.nsp = 2; cc.n = 1; cc.c = 2 + trial; cc.k = 3; cc.groups = 1;
    cc.in = {350, 350}; cc.ker = {3, 3}; cc.stride = {1, 1}; cc.dil = {1, 1}; cc.pre = {1, 1}; cc.post = {1, 1};
    cc.out = {350, 350};
    cc.nhwc_in = trial == 0;
    run_conv_case("cpu_conv_implicit_gemm", cc, false, rng, true, true, false, false, dg::DataType::FLOAT);
  }
}

// Narrow channels (a stem's 3) in a channels-last input: a kernel row's taps are one run of the
// input row, read in place inside it and gathered with zeros where it cuts the padding. Kernel
// widths 1 to 7, strides 1 and 2, uneven padding up to 3, vertical dilation, a batch, with the
// fused bias + ReLU (+ residual, written in place) and without.
TEST(CpuConvImplicitGemm, NarrowChannelKernelRowsMatchRef) {
  std::mt19937 rng(39);
  for (int trial = 0; trial < 10; ++trial) {
    ConvCase cc;
    cc.nsp = 2;
    cc.n = 1 + trial % 2;
    cc.c = 1 + static_cast<int64_t>(rng() % 6);
    cc.k = 1 + static_cast<int64_t>(rng() % 40);
    const int64_t kw = 1 + static_cast<int64_t>(rng() % 7), kh = 1 + static_cast<int64_t>(rng() % 7);
    cc.ker = {kh, kw};
    cc.stride = {1 + static_cast<int64_t>(rng() % 2), 1 + static_cast<int64_t>(rng() % 2)};
    cc.dil = {1 + static_cast<int64_t>(rng() % 2), 1};
    cc.pre = {static_cast<int64_t>(rng() % 4), static_cast<int64_t>(rng() % 4)};
    cc.post = {static_cast<int64_t>(rng() % 4), static_cast<int64_t>(rng() % 4)};
    cc.in = {kh * cc.dil[0] + static_cast<int64_t>(rng() % 20), kw + static_cast<int64_t>(rng() % 30)};
    for (int d = 0; d < 2; ++d)
      cc.out.push_back(fwd_size(cc.in[static_cast<size_t>(d)], cc.ker[static_cast<size_t>(d)], cc.stride[static_cast<size_t>(d)],
                                cc.dil[static_cast<size_t>(d)], cc.pre[static_cast<size_t>(d)], cc.post[static_cast<size_t>(d)]));
    cc.nhwc_in = cc.krsc_w = true;
    const bool fused = trial % 3 != 0;
    run_conv_case("cpu_conv_implicit_gemm", cc, false, rng, fused, fused, fused && trial % 2 == 0, false,
                  dg::DataType::FLOAT, 1e-5, fused);
  }
}

// Deep channels on small images (ResNet-50's last stages), NHWC with KRSC weights: the shapes
// where the plan reads the weights in place as dot-product tiles (on AVX-512 the 7x7 ones with
// C 512; on AVX2 and the portable kernels the 14x14 ones too), with and without groups, batch,
// stride, dilation, a fused chain and a strided output (the strips). C 640 at 7x7: a kernel row of
// the tile's weights and inputs exceeds a 48 KB L1, so its K blocks are rows over channel chunks.
TEST(CpuConvImplicitGemm, DeepChannelsSmallImagesMatchRef) {
  std::mt19937 rng(38);
  struct Shape {
    int64_t n, c, k, groups, in, ker, stride, dil, pad;
  };
  const Shape shapes[] = {{1, 512, 40, 1, 7, 3, 1, 1, 1},  {1, 256, 36, 1, 14, 3, 1, 1, 1},
                          {2, 256, 38, 2, 7, 3, 1, 1, 1},  {1, 512, 24, 1, 14, 3, 2, 1, 1},
                          {1, 256, 20, 1, 9, 3, 1, 2, 2},  {1, 384, 33, 1, 7, 1, 1, 1, 0},
                          {1, 640, 24, 1, 7, 3, 1, 1, 1}};
  for (size_t i = 0; i < std::size(shapes); ++i) {
    const Shape& sh = shapes[i];
    ConvCase cc;
    cc.nsp = 2; cc.n = sh.n; cc.c = sh.c; cc.k = sh.k; cc.groups = sh.groups;
    cc.in = {sh.in, sh.in}; cc.ker = {sh.ker, sh.ker}; cc.stride = {sh.stride, sh.stride};
    cc.dil = {sh.dil, sh.dil}; cc.pre = {sh.pad, sh.pad}; cc.post = {sh.pad, sh.pad};
    const int64_t o = fwd_size(sh.in, sh.ker, sh.stride, sh.dil, sh.pad, sh.pad);
    cc.out = {o, o};
    cc.nhwc_in = cc.krsc_w = true;
    const bool chain = i % 2 == 0;
    run_conv_case("cpu_conv_implicit_gemm", cc, false, rng, chain, chain, i == 2, i == 4, dg::DataType::FLOAT, 1e-5,
                  i != 3);
  }
}

// Channels-last inputs whose pixels lie a multiple of 4 KiB apart (C1024 fp32, C2048 bf16, C512
// at stride 2), whose rows a tile would read in place from one L1 set: the plan copies them per
// block instead (CpuFeatures::rows_crowd_l1), on the in-place walk (1x1) and the tap table (3x3
// with padding), with chains, batches and either thread count.
TEST(CpuConvImplicitGemm, RowsInOneL1SetAreStagedMatchRef) {
  std::mt19937 rng(39);
  struct Shape {
    int64_t n, c, k, in, ker, stride, pad;
    dg::DataType type;
  };
  const Shape shapes[] = {{1, 1024, 40, 14, 1, 1, 0, dg::DataType::FLOAT},  {2, 512, 36, 14, 1, 2, 0, dg::DataType::FLOAT},
                          {1, 1024, 24, 7, 3, 1, 1, dg::DataType::FLOAT},   {1, 2048, 20, 5, 1, 1, 0, dg::DataType::BFLOAT16},
                          {1, 1024, 33, 9, 1, 1, 0, dg::DataType::BFLOAT16}};
  for (size_t i = 0; i < std::size(shapes); ++i) {
    const Shape& sh = shapes[i];
    ConvCase cc;
    cc.nsp = 2; cc.n = sh.n; cc.c = sh.c; cc.k = sh.k; cc.groups = 1;
    cc.in = {sh.in, sh.in}; cc.ker = {sh.ker, sh.ker}; cc.stride = {sh.stride, sh.stride};
    cc.dil = {1, 1}; cc.pre = {sh.pad, sh.pad}; cc.post = {sh.pad, sh.pad};
    const int64_t o = fwd_size(sh.in, sh.ker, sh.stride, 1, sh.pad, sh.pad);
    cc.out = {o, o};
    cc.nhwc_in = cc.krsc_w = true;
    cc.type = sh.type;
    const bool chain = i % 2 == 0;
    run_conv_case("cpu_conv_implicit_gemm", cc, false, rng, chain, chain, i == 2, false, dg::DataType::FLOAT, 1e-5,
                  true, i == 1 ? 1 : 0);
  }
}

TEST(CpuConvImplicitGemm, WideOutputMatchesRef) {
  std::mt19937 rng(35);
  for (int trial = 0; trial < 4; ++trial) {
    ConvCase cc = random_case(rng, Kind::GENERAL);
    cc.groups = 1;
    cc.c = 1 + rng() % 29;
    cc.k = 48 + rng() % 40;
    cc.type = trial == 3 ? dg::DataType::BFLOAT16 : dg::DataType::FLOAT;
    run_conv_case("cpu_conv_implicit_gemm", cc, trial == 2, rng, trial % 2 == 0, true, false, false,
                  dg::DataType::FLOAT);
  }
}

TEST(CpuConvWinogradF4x3, RandomMatchesRef) {
  std::mt19937 rng(41);
  for (int trial = 0; trial < 8; ++trial) {
    ConvCase cc = random_case(rng, Kind::WINOGRAD);
    if (trial < 2) {  // bigger than one tile block, and channels past the 512-wide C split
      cc.in = {13, 17};
      cc.c = trial == 0 ? 520 : 24;
      cc.k = trial == 0 ? 8 : 40;
      cc.out = {fwd_size(13, 3, 1, 1, cc.pre[0], cc.post[0]), fwd_size(17, 3, 1, 1, cc.pre[1], cc.post[1])};
    }
    cc.type = trial % 4 == 3 ? dg::DataType::HALF : dg::DataType::FLOAT;
    // F(4x4,3x3) loses about a decimal digit to its transforms.
    run_conv_case("cpu_conv_winograd_f4x3", cc, false, rng, trial % 2 == 0, trial % 2 == 0, trial == 3, trial == 5,
                  dg::DataType::FLOAT, 2e-4);
  }
}

// Channels-last fp32 in and out: inner tiles read the input in place and write their pixels into
// the output (plain, or finished there by the bias/ReLU/residual chain); edge tiles and a bf16
// input take the gathered path, an AMAX the strips.
TEST(CpuConvWinogradF4x3, ChannelsLastTilesWriteTheOutputInPlace) {
  std::mt19937 rng(42);
  for (int trial = 0; trial < 5; ++trial) {
    ConvCase cc = random_case(rng, Kind::WINOGRAD);
    cc.in = {14 + static_cast<int64_t>(rng() % 6), 18 + static_cast<int64_t>(rng() % 6)};
    cc.c = 1 + rng() % 24;
    cc.k = 1 + rng() % 40;
    cc.out = {fwd_size(cc.in[0], 3, 1, 1, cc.pre[0], cc.post[0]), fwd_size(cc.in[1], 3, 1, 1, cc.pre[1], cc.post[1])};
    cc.nhwc_in = true;
    cc.type = trial == 4 ? dg::DataType::BFLOAT16 : dg::DataType::FLOAT;
    const bool fused = trial % 2 == 1;
    run_conv_case("cpu_conv_winograd_f4x3", cc, false, rng, fused, fused, trial == 3, trial == 2, dg::DataType::FLOAT,
                  2e-4, true);
  }
}

// A 3x3 "same" conv of one h x w channels-last image, c_min + [0, c_span) -> k channels (the
// thread-split tests').
ConvCase padded_winograd_case(std::mt19937& rng, int64_t h, int64_t w, int64_t c_min, uint32_t c_span, int64_t k) {
  ConvCase cc = random_case(rng, Kind::WINOGRAD);
  cc.n = 1;
  cc.in = {h, w};
  cc.pre = {1, 1};
  cc.post = {1, 1};
  cc.c = c_min + rng() % c_span;
  cc.k = k;
  cc.out = {h, w};
  cc.nhwc_in = true;
  return cc;
}

// fp32 KRSC filters go to the weight transform 16 input channels at a time by 8 x 8 word
// transposes, for whole output-channel panels: 40 channels (two blocks and 8 left one by one) and
// 100 output channels (whole panels and a partial one that takes the element-wise gather), next to
// KCRS filters (channels not contiguous: element-wise).
TEST(CpuConvWinogradF4x3, FilterPanelsTransposedMatchRef) {
  std::mt19937 rng(44);
  for (const bool krsc : {true, false}) {
    ConvCase cc = padded_winograd_case(rng, 10, 12, 40, 1, 100);
    cc.krsc_w = krsc;
    cc.type = dg::DataType::FLOAT;
    SCOPED_TRACE(krsc ? "KRSC" : "KCRS");
    run_conv_case("cpu_conv_winograd_f4x3", cc, false, rng, true, false, false, false, dg::DataType::FLOAT, 2e-4, true,
                  2);
  }
}

// Few tiles (at most 4 x MR): one block whose output channels are split between the threads, in
// ranges of whole NR panels that need not be equal (K = 72 with NR 32: 32 + 40 on 2 threads, 32 +
// 32 + 8 on 3), through the in-place tiles, the edge tiles' strips and the fused chain; more tiles
// (30 x 34: 72) take blocks of tiles, each with every channel, and one panel is not split.
TEST(CpuConvWinogradF4x3, FewTilesSplitTheOutputChannelsBetweenThreads) {
  std::mt19937 rng(43);
  struct Shape {
    int64_t h, w, k;
    int threads;
  };
  for (const Shape sh : {Shape{14, 14, 72, 2}, Shape{14, 14, 72, 3}, Shape{7, 9, 40, 2}, Shape{14, 14, 256, 2},
                         Shape{30, 34, 40, 2}, Shape{6, 6, 24, 4}}) {
    ConvCase cc = padded_winograd_case(rng, sh.h, sh.w, 8, 24, sh.k);
    SCOPED_TRACE("threads " + std::to_string(sh.threads));
    run_conv_case("cpu_conv_winograd_f4x3", cc, false, rng, true, true, sh.k != 256, false, dg::DataType::FLOAT,
                  2e-4, sh.h != 7, sh.threads);
  }
}

// More tiles: each thread's share of whole MR-tile groups, cut into blocks of at most the
// scratch's tiles; shares that differ by a partial group (56x56: 196 tiles), tiles fewer than the
// threads' groups (6x6: 4 tiles on 3 threads, two shares empty), one output-channel panel (no
// channel split), 1 to 5 threads (one thread: its one share in several blocks).
TEST(CpuConvWinogradF4x3, TileSharesCoverEveryTileWhateverTheThreads) {
  std::mt19937 rng(44);
  struct Shape {
    int64_t h, w, k;
    int threads;
  };
  for (const Shape sh : {Shape{56, 56, 24, 2}, Shape{56, 56, 24, 3}, Shape{28, 28, 16, 5}, Shape{6, 6, 8, 3},
                         Shape{30, 17, 20, 4}, Shape{30, 17, 20, 1}, Shape{13, 13, 3, 1}}) {
    ConvCase cc = padded_winograd_case(rng, sh.h, sh.w, 4, 12, sh.k);
    SCOPED_TRACE("threads " + std::to_string(sh.threads));
    run_conv_case("cpu_conv_winograd_f4x3", cc, false, rng, true, true, false, false, dg::DataType::FLOAT, 2e-4,
                  true, sh.threads);
  }
}

TEST(CpuConvWinogradF4x3, RejectsWhatItCannotRun) {
  dg::Graph g;
  g.set_io_data_type(dg::DataType::FLOAT);
  auto x = g.tensor(dg::TensorAttr().set_name("X").set_dim({1, 4, 8, 8}).set_stride({256, 64, 8, 1}));
  auto w = g.tensor(dg::TensorAttr().set_name("W").set_dim({4, 4, 3, 3}).set_stride({36, 9, 3, 1}));
  g.conv_fprop(x, w, dg::ConvFpropAttr().set_padding({1, 1}).set_stride({2, 2}))->set_output(true);
  const std::string e = cpu_test::explain(g);
  EXPECT_NE(e.find("cpu_conv_winograd_f4x3: rejected: node 'conv_fprop_0': F(4x4,3x3) needs stride 1"), std::string::npos) << e;
  EXPECT_NE(e.find("cpu_conv_depthwise_direct: rejected: node 'conv_fprop_0': not depthwise"), std::string::npos) << e;
}

TEST(CpuConvDepthwiseDirect, RandomMatchesRef) {
  std::mt19937 rng(51);
  for (int trial = 0; trial < 12; ++trial) {
    ConvCase cc = random_case(rng, Kind::DEPTHWISE);
    cc.type = trial % 3 == 2 ? dg::DataType::BFLOAT16 : dg::DataType::FLOAT;
    run_conv_case("cpu_conv_depthwise_direct", cc, false, rng, trial % 2 == 1, trial % 2 == 1, trial % 4 == 1,
                  trial == 3, trial == 7 ? dg::DataType::HALF : dg::DataType::FLOAT);
  }
}

// Channels-last sources with enough channels for every block width of the per-pixel vector kernel
// (32, 8, and the scalar tail), 1D to 3D.
TEST(CpuConvDepthwiseDirect, ChannelsLastWideMatchesRef) {
  std::mt19937 rng(52);
  for (int trial = 0; trial < 9; ++trial) {
    ConvCase cc = random_case(rng, Kind::DEPTHWISE);
    cc.groups = cc.c = cc.k = 1 + rng() % 100;
    cc.nhwc_in = true;
    cc.type = trial % 3 == 2 ? dg::DataType::BFLOAT16 : dg::DataType::FLOAT;
    run_conv_case("cpu_conv_depthwise_direct", cc, false, rng, trial % 2 == 0, trial % 2 == 0, trial == 4, false,
                  dg::DataType::FLOAT, 1e-5, trial % 2 == 1);
  }
}

// Rows wide enough for the blocked kernels (the general one and the 3-tap one at stride 1 and 2)
// beside edge pixels, any stride and dilation along the row; outputs written in place (plain
// store or the bias/ReLU/residual chain into a channels-last output) or through scratch.
TEST(CpuConvDepthwiseDirect, WideRowsRunTheBlockedKernel) {
  std::mt19937 rng(53);
  for (int trial = 0; trial < 8; ++trial) {
    ConvCase cc = random_case(rng, Kind::DEPTHWISE);
    cc.groups = cc.c = cc.k = 1 + rng() % 40;
    const size_t row = static_cast<size_t>(cc.nsp - 1);
    cc.in[row] = 20 + rng() % 40;
    if (trial < 4) {  // the 3-tap kernel: 3 wide, dilation 1, stride 1 or 2
      cc.ker[row] = 3;
      cc.dil[row] = 1;
      cc.stride[row] = 1 + trial % 2;
    }
    cc.out[row] = fwd_size(cc.in[row], cc.ker[row], cc.stride[row], cc.dil[row], cc.pre[row], cc.post[row]);
    cc.nhwc_in = true;
    cc.type = trial == 5 ? dg::DataType::BFLOAT16 : dg::DataType::FLOAT;
    const bool fused = trial % 2 == 1;
    run_conv_case("cpu_conv_depthwise_direct", cc, false, rng, fused, fused, trial == 3, false, dg::DataType::FLOAT,
                  1e-5, trial != 7);
  }
}

// The 3-tap kernels take any 1..8 pixels a row has left inside it: every row width from 9 to 26 at
// stride 1 and 2, padding 1 on both sides, 27 channels (one AVX-512 block, one AVX2 block, a
// portable tail of 3 where the machine has them) and 56 (three AVX-512 blocks in one call, one AVX2
// block), plain and fused outputs.
TEST(CpuConvDepthwiseDirect, ThreeTapBlocksOfEveryWidthMatchRef) {
  std::mt19937 rng(54);
  for (const int64_t channels : {27, 56})
    for (int64_t width = 9; width <= 26; ++width)
      for (int64_t stride = 1; stride <= 2; ++stride) {
        ConvCase cc;
        cc.nsp = 2;
        cc.groups = cc.c = cc.k = channels;
        cc.in = {3, width};
        cc.ker = {3, 3};
        cc.stride = {1, stride};
        cc.dil = {1, 1};
        cc.pre = cc.post = {1, 1};
        cc.out = {3, fwd_size(width, 3, stride, 1, 1, 1)};
        cc.nhwc_in = true;
        const bool fused = width % 2 == 0;
        SCOPED_TRACE("channels " + std::to_string(channels) + " width " + std::to_string(width) + " stride " +
                     std::to_string(stride));
        run_conv_case("cpu_conv_depthwise_direct", cc, false, rng, fused, fused, false, false, dg::DataType::FLOAT,
                      1e-5, true);
      }
}

// A row's edge pixels (whose taps cut the padding) sum per pixel, on AVX-512 in 64- and 16-channel
// blocks and a masked tail: 7x7 images with 85 (64 + 16 + 5), 64 and 13 channels, strides 1 and 2.
TEST(CpuConvDepthwiseDirect, EdgePixelsOfEveryChannelBlockMatchRef) {
  std::mt19937 rng(55);
  for (const int64_t channels : {85, 64, 13})
    for (int64_t stride = 1; stride <= 2; ++stride) {
      ConvCase cc;
      cc.nsp = 2;
      cc.groups = cc.c = cc.k = channels;
      cc.in = {7, 7};
      cc.ker = {3, 3};
      cc.stride = {stride, stride};
      cc.dil = {1, 1};
      cc.pre = cc.post = {1, 1};
      cc.out = {fwd_size(7, 3, stride, 1, 1, 1), fwd_size(7, 3, stride, 1, 1, 1)};
      cc.nhwc_in = true;
      const bool fused = stride == 2;
      SCOPED_TRACE("channels " + std::to_string(channels) + " stride " + std::to_string(stride));
      run_conv_case("cpu_conv_depthwise_direct", cc, false, rng, fused, fused, false, false, dg::DataType::FLOAT, 1e-5,
                    true);
    }
}

// Whole 16-channel vectors (16, 48, 144 channels) on 3-tap rows: with AVX-512 the kernels apply
// the bias / ReLU / residual chain to their accumulators before the store, the edge pixels one
// TileChain::apply each; stride 1 and 2, a residual (one operand per pixel) or not, 1 and 2
// threads. Elsewhere the same cases take the chain as a pass over each row.
TEST(CpuConvDepthwiseDirect, ChainInTheKernelsRegistersMatchesRef) {
  std::mt19937 rng(56);
  int trial = 0;
  for (const int64_t channels : {16, 48, 144})
    for (int64_t stride = 1; stride <= 2; ++stride, ++trial) {
      ConvCase cc;
      cc.nsp = 2;
      cc.n = 1 + trial % 2;
      cc.groups = cc.c = cc.k = channels;
      cc.in = {5, 19 + trial};
      cc.ker = {3, 3};
      cc.stride = {stride, stride};
      cc.dil = {1, 1};
      cc.pre = cc.post = {1, 1};
      cc.out = {fwd_size(5, 3, stride, 1, 1, 1), fwd_size(19 + trial, 3, stride, 1, 1, 1)};
      cc.nhwc_in = true;
      SCOPED_TRACE("channels " + std::to_string(channels) + " stride " + std::to_string(stride));
      run_conv_case("cpu_conv_depthwise_direct", cc, false, rng, true, true, trial % 2 == 1, false, dg::DataType::FLOAT,
                    1e-5, true, 1 + trial % 2);
    }
}

// Groups of 2, 4 and 8 channels, 1D to 3D, rows wide enough for the 8-pixel blocks beside edge
// pixels, group counts that leave a partial vector of output channels, bf16 sources, fused
// epilogues, and outputs written in place or through the strips.
TEST(CpuConvGroupedDirect, RandomMatchesRef) {
  std::mt19937 rng(61);
  const int64_t sizes[] = {2, 4, 8};
  for (int trial = 0; trial < 12; ++trial) {
    ConvCase cc = random_case(rng, Kind::DEPTHWISE);  // the geometry; channels below
    const int64_t per_group = sizes[trial % 3];
    cc.groups = 2 + rng() % 5;
    cc.c = cc.k = cc.groups * per_group;
    const size_t row = static_cast<size_t>(cc.nsp - 1);
    cc.in[row] = 12 + rng() % 30;
    cc.out[row] = fwd_size(cc.in[row], cc.ker[row], cc.stride[row], cc.dil[row], cc.pre[row], cc.post[row]);
    cc.nhwc_in = true;
    cc.type = trial % 4 == 3 ? dg::DataType::BFLOAT16 : dg::DataType::FLOAT;
    const bool fused = trial % 2 == 1;
    run_conv_case("cpu_conv_grouped_direct", cc, false, rng, fused, fused, trial == 5, trial == 7, dg::DataType::FLOAT,
                  1e-5, trial % 3 != 0);
  }
}

TEST(CpuConvGroupedDirect, RejectsWhatItCannotRun) {
  auto explain = [](int64_t groups, bool nhwc) {
    dg::Handle handle(dg::Device::cpu());
    dg::Graph g;
    g.set_io_data_type(dg::DataType::FLOAT);
    const Dims xd{1, 16, 6, 6};
    auto x = g.tensor(dg::TensorAttr().set_name("X").set_dim(xd).set_stride(nhwc ? channels_last(xd) : Dims{576, 36, 6, 1}));
    auto w = g.tensor(dg::TensorAttr().set_name("W").set_dim({16, 16 / groups, 3, 3}).set_stride({144 / groups, 9, 3, 1}));
    g.conv_fprop(x, w, dg::ConvFpropAttr().set_padding({1, 1}))->set_output(true);
    EXPECT_TRUE(g.validate().ok() && g.build_operation_graph(handle).ok() && g.create_execution_plans({dg::HeurMode::A}).ok());
    return g.explain();
  };
  const std::string dense = explain(1, true), nchw = explain(4, false);
  EXPECT_NE(dense.find("cpu_conv_grouped_direct: rejected: node 'conv_fprop_0': needs groups of 2, 4 or 8 input and as many "
                       "output channels (groups=1, C/groups=16, K/groups=16)"), std::string::npos) << dense;
  EXPECT_NE(nchw.find("cpu_conv_grouped_direct: rejected: node 'conv_fprop_0': needs a channels-last source 'X' (channel "
                      "stride 36)"), std::string::npos) << nchw;
}

// Mode A puts Winograd first for a 3x3 stride-1 conv with enough channels, the depthwise engine
// first for a depthwise conv, the grouped engine for groups of up to 8 channels, and implicit GEMM
// first otherwise.
std::string first_plan(int64_t c, int64_t k, int64_t groups, int64_t r, int64_t stride) {
  dg::Handle handle(dg::Device::cpu());
  dg::Graph g;
  g.set_io_data_type(dg::DataType::FLOAT);
  auto x = g.tensor(dg::TensorAttr().set_name("X").set_dim({1, c, 28, 28}).set_stride({784 * c, 1, 28 * c, c}));
  auto w = g.tensor(dg::TensorAttr().set_name("W").set_dim({k, c / groups, r, r}).set_stride({r * r * c / groups, 1, r * c / groups, c / groups}));
  g.conv_fprop(x, w, dg::ConvFpropAttr().set_padding({r / 2, r / 2}).set_stride({stride, stride}))->set_output(true);
  if (!g.validate().ok() || !g.build_operation_graph(handle).ok() || !g.create_execution_plans({dg::HeurMode::A}).ok())
    return "error";
  std::string name;
  (void)g.get_plan_name_at_index(0, name);
  return name;
}

TEST(CpuConvHeuristics, ModeARanksTheCpuConvEngines) {
  EXPECT_EQ(first_plan(64, 64, 1, 3, 1).rfind("cpu_conv_winograd_f4x3", 0), 0u) << first_plan(64, 64, 1, 3, 1);
  EXPECT_EQ(first_plan(64, 64, 64, 3, 1).rfind("cpu_conv_depthwise_direct", 0), 0u) << first_plan(64, 64, 64, 3, 1);
  EXPECT_EQ(first_plan(64, 64, 1, 3, 2).rfind("cpu_conv_implicit_gemm", 0), 0u) << first_plan(64, 64, 1, 3, 2);
  EXPECT_EQ(first_plan(64, 64, 1, 1, 1).rfind("cpu_conv_implicit_gemm", 0), 0u) << first_plan(64, 64, 1, 1, 1);
  for (int64_t groups : {8, 16, 32})  // 8, 4 and 2 channels per group
    EXPECT_EQ(first_plan(64, 64, groups, 3, 1).rfind("cpu_conv_grouped_direct", 0), 0u) << first_plan(64, 64, groups, 3, 1);
  EXPECT_EQ(first_plan(64, 64, 4, 3, 1).rfind("cpu_conv_implicit_gemm", 0), 0u) << first_plan(64, 64, 4, 3, 1);
}

}  // namespace
