// cuda_conv_implicit_gemm's core 4: unit-stride convolutions over halo tiles (conv_halo_view.hpp,
// kernels/conv_halo_tma.cuh). The geometry of the virtual grid and its boxes, which convolutions
// qualify and why the others do not, the offer behind the GPU gate, NVRTC compiles (no GPU), and on
// a GPU every setting against ref with NaN-poisoned outputs: planes whose tiles end mid-row, several
// channel blocks, channels past C, output channels off the tile, asymmetric padding, dilation, 1D
// and 3D, padded pixel rows, the residual epilogue.
#include <gtest/gtest.h>

#include <set>
#include <string>
#include <vector>

#include "common/scoped_env.hpp"
#include "cuda_conv_tma_test_util.hpp"
#include "engines/cuda/conv/conv_halo_view.hpp"
#include "engines/cuda/conv/conv_knobs.hpp"
#include "planning/knobs.hpp"

namespace {

namespace cv = dnngraph::cuda::conv;
using namespace cuda_conv_test;

// halo_view's answer for the case: "ok wv/box_rows/tiles_per_plane/stage_bytes" or its reason.
std::string halo_of(const Case& c, dg::DataType t = BF) {
  const auto built = partition_of(c, t);
  cv::ConvProblem cp;
  std::string why;
  if (!cv::describe_conv(built->p(), cp, why)) return "describe: " + why;
  cv::HaloTiles h;
  if (!cv::halo_view(cp, h, why)) return why;
  return "ok " + std::to_string(h.wv) + "/" + std::to_string(h.box_rows) + "/" + std::to_string(h.tiles_per_plane) +
         "/" + std::to_string(h.stage_bytes);
}

Case three_by_three(Dims x, int64_t k) { return {std::move(x), k, {3, 3}, {1, 1}, {1, 1}, {1, 1}, {1, 1}}; }

// The virtual grid: Wo + 2 columns for 3x3 windows; a tile's 128 pixels touch at most
// (Wv - 1 + 127 + 2) / Wv + 1 rows, plus 2 for the taps; 64 channels x 128 bytes per box pixel.
TEST(CudaConvHalo, GeometryOfTheVirtualGrid) {
  // RN50 C64 56²: 58 columns, 6 rows (44544 bytes, 45056 in shared memory), 26 tiles per plane.
  EXPECT_EQ(halo_of(three_by_three({32, 64, 56, 56}, 64)), "ok 58/6/26/45056");
  // 32²: 34 columns, 7 rows, 9 tiles (1152 virtual pixels for 1024).
  EXPECT_EQ(halo_of(three_by_three({8, 64, 32, 32}, 64)), "ok 34/7/9/30720");
  // 5x5, dilation 2 along W: Wv = 20 + 4 x 2 = 28; 128 + 27 + 8 pixels span 6 rows, + 4.
  Case c{{2, 16, 20, 20}, 8, {5, 5}, {2, 4}, {2, 4}, {1, 1}, {1, 2}};
  EXPECT_EQ(halo_of(c), "ok 28/10/5/35840");
  // 3D: planes are (image, output depth); the box is one input depth (the depth taps' own loads).
  Case d{{1, 16, 5, 12, 14}, 24, {3, 3, 3}, {1, 1, 1}, {1, 1, 1}, {1, 1, 1}, {1, 1, 1}};
  EXPECT_EQ(halo_of(d), "ok 16/12/2/24576");
}

TEST(CudaConvHalo, ConvolutionsOutsideTheTilesAreRefusedWithTheRule) {
  Case c = three_by_three({2, 64, 28, 28}, 64);
  c.stride = {2, 2};
  EXPECT_EQ(halo_of(c), "halo tiles shift one box by whole pixels per tap: strides must be 1 (H: 2)");
  EXPECT_EQ(halo_of(three_by_three({2, 64, 28, 28}, 64), dg::DataType::FLOAT),
            "halo tiles hold 64 channels of 16-bit inputs per 128-byte row; the inputs are FLOAT");
  // RN50's 7² layers: 63 virtual pixels a plane, a 128-pixel tile half empty.
  EXPECT_EQ(halo_of(three_by_three({32, 512, 7, 7}, 512)),
            "the 7 x 7 output plane would leave more than half of its 128-pixel halo tiles' rows unused");
  EXPECT_EQ(halo_of(three_by_three({1, 16, 4, 300}, 16)),
            "the halo box (302 columns x 4 rows) exceeds TMA's 256 per box dimension");
  // 7x7 windows over 250 columns: a box of 256 columns x 8 rows.
  Case wide{{1, 16, 40, 250}, 16, {7, 7}, {3, 3}, {3, 3}, {1, 1}, {1, 1}};
  EXPECT_EQ(halo_of(wide), "the halo box's 262144 bytes exceed the 65536 two of which fit beside the filter ring");
}

// Offered on Hopper (ConvolutionsMatchRef passed on an H100 on 2026-12-06, so the GPU gate no
// longer holds them back): 64-wide tiles for 64 output channels, 128-wide (and 64) for more; none
// where the view refuses.
TEST(CudaConvHalo, OfferedWhereTheTilesFit) {
  gemm_test::FakeHopper hopper;
  const dg::Engine& e = dg::cuda::conv_implicit_gemm_engine();
  const auto halo = [&](const Case& c) {
    std::set<std::string> s;
    for (const auto& k : e.knob_space(partition_of(c)->p(), hopper.target))
      if (k.at("core") == 4) s.insert(std::to_string(k.at("tile_n")) + "/" + std::to_string(k.at("stages")));
    return s;
  };
  const Case c64 = three_by_three({32, 64, 56, 56}, 64), tutorial = three_by_three({32, 128, 56, 56}, 256);
  test_env::ScopedEnv gate("DNNGRAPH_UNCHECKED_ENGINES", nullptr);  // its GPU tests passed (2026-12-06)
  EXPECT_EQ(halo(c64), (std::set<std::string>{"64/8", "64/6"}));
  EXPECT_EQ(halo(tutorial), (std::set<std::string>{"128/4", "128/6", "64/8"}));
  EXPECT_TRUE(halo(three_by_three({32, 512, 7, 7}, 512)).empty());
  // 98 columns of 3x3 windows: 63 KB boxes; two beside 6 filter tiles of 16 KB exceed 227 KB.
  EXPECT_EQ(halo(three_by_three({1, 64, 20, 98}, 128)), (std::set<std::string>{"128/4", "64/8"}));
}

TEST(CudaConvHalo, KnobRulesNameTheCore) {
  cv::ConvKnobs k{.core = 4, .tile_m = 128, .tile_n = 64, .stages = 8};
  EXPECT_EQ(cv::conv_rules(k), "");
  k.pingpong = 1;
  EXPECT_EQ(cv::conv_rules(k), "core=4 (halo tiles) takes 128 x 64 or 128 x 128 tiles of one CTA (split_k 1, "
                               "pingpong 0, resident_b 0, cluster 1, cluster_n 1, tf32 0)");
  k.pingpong = 0;
  k.epilogue = 1;
  EXPECT_EQ(cv::conv_rules(k), "");
}

TEST(CudaConvHalo, KernelsCompileWithNvrtc) {
  if (!dg::cuda::nvrtc()) GTEST_SKIP() << "NVRTC not available: " << dg::cuda::nvrtc_error();
  const Case two{{2, 48, 19, 19}, 40, {3, 3}, {1, 1}, {1, 1}, {1, 1}, {1, 1}};
  const Case three{{1, 8, 5, 14, 15}, 16, {3, 3, 3}, {1, 0, 1}, {1, 1, 1}, {1, 1, 1}, {1, 1, 2}};
  for (const Case& c : {two, three})
    for (auto [bn, stages] : {std::pair{64, 8}, {128, 4}})
      for (int epilogue : {0, 1}) {
        std::string src, why;
        ASSERT_TRUE(cv::fprop_source_for_test(partition_of(c)->p(), 4, 128, bn, stages, src, why, 1, false, false, 1,
                                              epilogue))
            << why;
        EXPECT_TRUE(gemm_test::instantiates(src, "conv_fprop_halo",
                                            {{"kDataType", "dg::DT_BFLOAT16"}, {"kTileN", std::to_string(bn)},
                                             {"kStages", std::to_string(stages)}, {"kHaloStages", "2"}}));
        EXPECT_EQ(src.find("kEpilogue") != std::string::npos, epilogue == 1);
        ASSERT_NO_FATAL_FAILURE(expect_compiles(src, "test_conv_halo.cu", "sm_90a",
                                                "core=4 tile_n " + std::to_string(bn) + " epilogue " +
                                                    std::to_string(epilogue) + ": "));
      }
}

// The register epilogue computes the virtual grid's padding pixels too: not beside an AMAX, which
// the staged epilogue (its row map skips them) serves.
TEST(CudaConvHalo, RegisterEpilogueRefusesFullReductions) {
  if (!dg::cuda::nvrtc()) GTEST_SKIP() << "NVRTC not available: " << dg::cuda::nvrtc_error();
  const Case c = three_by_three({2, 64, 20, 20}, 64);
  Built b;
  set_types(b.g, BF);
  auto y = b.g.conv_fprop(declare(b.g, "X", c.x, BF), declare(b.g, "W", filter_dims(c), BF),
                          geometry<dg::ConvFpropAttr>(c).set_name("conv"));
  y = b.g.relu(y);
  y->set_output(true).set_stride(channels_last(out_dims(c)));
  b.g.reduction(y, dg::ReductionAttr().set_mode(dg::ReductionMode::AMAX))->set_output(true).set_data_type(dg::DataType::FLOAT);
  ASSERT_TRUE(anchored_partitions(b.g, b.parts));
  std::string src, why;
  EXPECT_FALSE(cv::fprop_source_for_test(b.p(), 4, 128, 64, 8, src, why, 1, false, false, 1, 1));
  EXPECT_EQ(why, "core=4's epilogue=1 computes the virtual grid's padding pixels beside the output's; full "
                 "reductions (AMAX) would see them (epilogue=0 serves them)");
  EXPECT_TRUE(cv::fprop_source_for_test(b.p(), 4, 128, 64, 8, src, why)) << why;
  ASSERT_NO_FATAL_FAILURE(expect_compiles(src, "test_conv_halo.cu", "sm_90a", "core=4 with AMAX, staged: "));
}

dg::Knobs halo_knobs(int64_t bn, int64_t stages, int64_t epilogue = 0) {
  dg::Knobs k{{"core", 4}, {"tile_m", 128}, {"tile_n", bn}, {"stages", stages}};
  if (epilogue) k["epilogue"] = 1;
  return k;
}

// Every core=4 setting against ref (plans built from the knobs, gate or not), outputs NaN-poisoned.
TEST(CudaConvHalo, ConvolutionsMatchRef) {
  DG_REQUIRE_CUDA(gpu);
  if (impl_of(*gpu).info.sm_version != 90) GTEST_SKIP() << "core=4 needs sm_90a";
  std::mt19937 rng(151);
  const std::vector<dg::Knobs> all{halo_knobs(64, 8), halo_knobs(64, 6), halo_knobs(128, 4), halo_knobs(128, 6)};
  // The register epilogue (16-byte stores of the real rows): bf16 outputs, per-channel inputs.
  std::vector<dg::Knobs> both = all;
  for (const dg::Knobs& k : all) both.push_back(halo_knobs(k.at("tile_n"), k.at("stages"), 1));
  // RN50's C64 block at 2 images of 56²: 26 tiles a plane, the last one mostly past the plane.
  Case c = three_by_three({2, 64, 56, 56}, 64);
  run_knobs_vs_ref(*gpu, c, BF, BF, false, channels_last(c.x), both, rng);
  // C=40 (one channel block, 24 zero-filled), K=24 (a 16-byte chunk and a partial one), 2 images
  // of 15 x 13: tiles end mid-row.
  c = three_by_three({2, 40, 15, 13}, 24);
  run_knobs_vs_ref(*gpu, c, BF, BF, false, channels_last(c.x), both, rng);
  // K=200 with the register epilogue: a second 64-column box, a partial last 16-byte chunk.
  c = three_by_three({1, 64, 20, 21}, 200);
  run_knobs_vs_ref(*gpu, c, BF, BF, false, channels_last(c.x), {both[4], both[6]}, rng);
  // C=136 (3 blocks), K=200 (tiles off N), asymmetric padding, dilation 2 along W, + residual.
  c = {{2, 136, 17, 19}, 200, {3, 3}, {1, 0}, {0, 2}, {1, 1}, {1, 2}};
  run_knobs_vs_ref(*gpu, c, BF, BF, true, channels_last(c.x), all, rng);
  // N=3 at 32², fp16 in, fp32 out, pixel rows padded (72 elements a pixel for C=64).
  c = three_by_three({3, 64, 32, 32}, 64);
  run_knobs_vs_ref(*gpu, c, dg::DataType::HALF, dg::DataType::FLOAT, true, {32 * (32 * 72 + 8), 1, 32 * 72 + 8, 72},
                   all, rng);
  // 5x5 windows with no padding ("valid"), 1D (5 taps), 3D (3x3x3, padding 1 and 0).
  c = {{2, 16, 20, 20}, 8, {5, 5}, {0, 0}, {0, 0}, {1, 1}, {1, 1}};
  run_knobs_vs_ref(*gpu, c, BF, BF, false, channels_last(c.x), {all[0], all[2], both[4], both[6]}, rng);
  c = {{2, 16, 200}, 20, {5}, {2}, {2}, {1}, {1}};
  run_knobs_vs_ref(*gpu, c, BF, dg::DataType::FLOAT, false, channels_last(c.x), {all[0], all[2]}, rng);
  c = {{2, 16, 5, 12, 14}, 24, {3, 3, 3}, {1, 1, 1}, {1, 0, 1}, {1, 1, 1}, {1, 1, 1}};
  run_knobs_vs_ref(*gpu, c, BF, BF, true, channels_last(c.x), {all[0], all[2]}, rng);
}

}  // namespace
