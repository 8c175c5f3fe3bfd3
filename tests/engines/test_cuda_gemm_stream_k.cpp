// cuda_gemm_wgmma_tma's stream-K tail (knob stream_k, kernels/work_units.cuh): the full waves but
// the last as whole tiles, the rest's k steps in equal shares per CTA, the tiles two shares cut
// summed by the split-K fix-up. The GPU test below passed on an H100 on 2026-12-08, which released the
// gate `gemm_stream_k`. Without a GPU: the walk on the host (every k step of every tile once, the
// parts of a cut tile numbered alike by both shares), the knob space, rules and estimate, NVRTC
// compiles with no wgmma serialized.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <random>
#include <string>
#include <vector>

#include "common/scoped_env.hpp"
#include "core/dtype.hpp"
#include "engines/cuda/common/nvrtc_compile.hpp"
#include "engines/cuda/gemm/gemm_wgmma_tma.hpp"
#include "engines/cuda/gemm/matmul_plan.hpp"
#include "gemm_test_util.hpp"
#include "test_cuda_util.hpp"

namespace host_walk {
#include "host_cuda_shims.inl"
#include "engines/cuda/kernels/work_units.cuh"
#undef __device__
#undef __forceinline__
}  // namespace host_walk

namespace {

namespace dg = dnngraph;
namespace gm = dnngraph::cuda::gemm;
using gemm_test::Dims;
using gemm_test::Expect;
using gemm_test::HostTensor;
using host_walk::dg::UnitWalk;
using host_walk::dg::WorkUnit;
using test_env::ScopedEnv;

// Every CTA's units in the kernels' order: u = cta, cta + ctas, ... below count(ctas).
std::vector<std::vector<WorkUnit>> walk_all(const UnitWalk& w, int64_t ctas) {
  std::vector<std::vector<WorkUnit>> per_cta(static_cast<size_t>(ctas));
  for (int64_t c = 0; c < ctas; ++c)
    for (int64_t u = c; u < w.count(ctas); u += ctas) per_cta[static_cast<size_t>(c)].push_back(w.at(u, ctas));
  return per_cta;
}

// Each k step of each tile in exactly one unit; a tile's units agree on parts, number their parts
// 0 .. parts-1 and (parts > 1) name one slot below split_tiles; with at least a wave of tiles, the
// stream-K shares hold at least one tile's steps each and differ by at most one step.
void check_walk(const UnitWalk& w, int64_t ctas) {
  SCOPED_TRACE("tiles " + std::to_string(w.tiles) + " ktiles " + std::to_string(w.ktiles) + " splits " +
               std::to_string(w.splits) + " stream_k " + std::to_string(w.stream_k) + " ctas " + std::to_string(ctas));
  std::vector<int> covered(static_cast<size_t>(w.tiles * w.ktiles), 0);
  std::map<int64_t, std::vector<WorkUnit>> by_tile;
  std::vector<int64_t> tail_steps(static_cast<size_t>(ctas), 0);
  const auto per_cta = walk_all(w, ctas);
  for (int64_t c = 0; c < ctas; ++c)
    for (const WorkUnit& u : per_cta[static_cast<size_t>(c)]) {
      if (u.tile < 0) continue;
      ASSERT_LT(u.tile, w.tiles);
      ASSERT_LE(0, u.kb);
      ASSERT_LE(u.kb, u.ke);
      ASSERT_LE(u.ke, w.ktiles);
      for (int k = u.kb; k < u.ke; ++k) ++covered[static_cast<size_t>(u.tile * w.ktiles + k)];
      by_tile[u.tile].push_back(u);
      if (u.slot >= 0 && w.stream_k) tail_steps[static_cast<size_t>(c)] += u.ke - u.kb;
    }
  for (size_t i = 0; i < covered.size(); ++i) ASSERT_EQ(covered[i], 1) << "tile " << i / w.ktiles << " step " << i % w.ktiles;
  for (const auto& [tile, units] : by_tile) {
    const int parts = units[0].parts;
    ASSERT_EQ(static_cast<int>(units.size()), parts) << "tile " << tile;
    ASSERT_LE(parts, w.slot_parts() > 1 ? w.slot_parts() : 1) << "tile " << tile;
    std::vector<int> seen(static_cast<size_t>(parts), 0);
    for (const WorkUnit& u : units) {
      ASSERT_EQ(u.parts, parts) << "tile " << tile;
      ASSERT_LT(u.part, parts);
      ++seen[static_cast<size_t>(u.part)];
      if (parts > 1) {
        ASSERT_GE(u.slot, 0);
        ASSERT_LT(u.slot, w.split_tiles(ctas));
        ASSERT_EQ(u.slot, units[0].slot);
      }
    }
    for (int s : seen) ASSERT_EQ(s, 1) << "tile " << tile;
  }
  if (w.stream_k && w.tiles >= ctas) {
    const auto [lo, hi] = std::minmax_element(tail_steps.begin(), tail_steps.end());
    EXPECT_LE(*hi - *lo, 1);
    EXPECT_GE(*lo, w.ktiles);
  }
}

TEST(CudaGemmStreamK, WalkCoversEveryStepOnce) {
  std::mt19937 rng(131);
  for (int trial = 0; trial < 300; ++trial) {
    const int64_t ctas = 1 + rng() % 140;
    const int64_t tiles = trial % 3 == 0 ? ctas + rng() % (3 * ctas) : 1 + rng() % 700;
    const int ktiles = static_cast<int>(trial % 7 == 0 ? rng() % 3 : 1 + rng() % 150);
    ASSERT_NO_FATAL_FAILURE(check_walk(UnitWalk{tiles, ktiles, 1, 1}, ctas));
    ASSERT_NO_FATAL_FAILURE(check_walk(UnitWalk{tiles, ktiles, 1 + static_cast<int>(rng() % 8), 0}, ctas));
  }
  // 8192^3 in 128 x 256 tiles on 132 CTAs: 14 waves whole, 200 tiles' steps in shares of 193-194.
  const UnitWalk big{2048, 128, 1, 1};
  EXPECT_EQ(big.whole_tiles(132), 14 * 132);
  EXPECT_EQ(big.split_tiles(132), 200);
  ASSERT_NO_FATAL_FAILURE(check_walk(big, 132));
  // The host's workspace sizing reads the same split.
  for (int64_t tiles : {1, 131, 132, 133, 263, 264, 2048}) {
    const UnitWalk w{tiles, 8, 1, 1};
    EXPECT_EQ(gm::stream_k_split_tiles(tiles, 132), w.split_tiles(132)) << tiles;
  }
  EXPECT_EQ(gm::kStreamKParts, host_walk::dg::kStreamKParts);
}

// A bf16 [m, k] x [k, n] matmul (B stored [n, k]) lowered for the knob space.
using Bf16Matmul = gemm_test::LoweredMatmul;
void bf16_matmul(Bf16Matmul& f, int64_t m, int64_t n, int64_t k) {
  f.g.set_io_data_type(dg::DataType::BFLOAT16).set_compute_data_type(dg::DataType::FLOAT);
  auto a = f.g.tensor(dg::TensorAttr().set_name("A").set_dim({m, k}).set_stride({k, 1}));
  auto b = f.g.tensor(dg::TensorAttr().set_name("B").set_dim({k, n}).set_stride({1, k}));
  f.g.matmul(a, b, dg::MatmulAttr().set_name("mm"))->set_output(true);
  ASSERT_TRUE(gemm_test::lower_matmul(f));
}

// On a (fake) sm_90 target with 132 multiprocessors: stream_k twins of the cooperative whole-tile
// settings where the tiles fill a wave and the last one less than 90% (8192^3: 15.5 waves of 128 x
// 256 tiles), none where the waves come out even (4096 x 8448: 132 tiles) or the tiles are under a
// wave. At 8192^3 a twin is estimated slower than its whole tiles, as measured (matmul_build.cpp).
TEST(CudaGemmStreamK, OfferedWhereTheLastWaveIsPartial) {
  gemm_test::FakeHopper hopper;
  const dg::Target& t = hopper.target;
  const dg::Engine& e = dg::cuda::gemm_wgmma_tma_engine();
  struct Shape {
    int64_t m, n;
    bool offered;
  };
  for (const Shape sh : {Shape{8192, 8192, true}, Shape{4096, 8448, false}, Shape{1024, 1024, false}}) {
    SCOPED_TRACE(std::to_string(sh.m) + "x" + std::to_string(sh.n));
    Bf16Matmul f;
    ASSERT_NO_FATAL_FAILURE(bf16_matmul(f, sh.m, sh.n, 1024));
    ScopedEnv env("DNNGRAPH_UNCHECKED_ENGINES", nullptr);
    EXPECT_TRUE(e.check_knobs({{"tile_n", 256}, {"stream_k", 1}}).ok());
    int offered = 0;
    for (const auto& kn : e.knob_space(*f.p, t)) {
      if (!kn.count("stream_k")) continue;
      ++offered;
      EXPECT_EQ(kn.count("pingpong") + kn.count("split_k") + kn.count("cluster"), 0u) << dg::knobs_to_string(kn);
      dg::Knobs whole = kn;
      whole.erase("stream_k");
      EXPECT_GT(e.estimate_seconds(*f.p, t, kn), e.estimate_seconds(*f.p, t, whole)) << dg::knobs_to_string(kn);
    }
    EXPECT_EQ(offered > 0, sh.offered);
    for (const dg::Knobs& k : {dg::Knobs{{"tile_n", 128}, {"pingpong", 1}, {"stream_k", 1}},
                               dg::Knobs{{"tile_n", 128}, {"split_k", 2}, {"stream_k", 1}},
                               dg::Knobs{{"tile_n", 256}, {"cluster", 2}, {"stream_k", 1}}}) {
      const dg::Status s = e.check_knobs(k);
      EXPECT_NE(s.message().find("stream_k=1 goes only with cooperative tiles of one CTA"), std::string::npos)
          << s.message();
    }
  }
}

gm::MatmulConfig stream_k_config(int bn, bool register_epilogue) {
  gm::MatmulConfig c;
  c.core = gm::Core::WGMMA;
  c.bm = 128, c.bn = bn, c.bk = 64, c.stages = bn == 256 ? 4 : 5, c.threads = 384;
  c.stream_k = true;
  c.register_epilogue = register_epilogue;
  return c;
}

TEST(CudaGemmStreamK, KernelsCompileWithNvrtc) {
  if (!dg::cuda::nvrtc()) GTEST_SKIP() << "NVRTC not available: " << dg::cuda::nvrtc_error();
  Bf16Matmul f;
  ASSERT_NO_FATAL_FAILURE(bf16_matmul(f, 96, 40, 72));
  gm::MatmulPieces pieces;
  std::string why;
  ASSERT_TRUE(gm::describe_matmul_graph(*f.p, pieces.mp, why)) << why;
  ASSERT_TRUE(dg::cuda::plan_epilogue(*f.p, pieces.mp.axes, true, pieces.epi, why)) << why;
  for (const gm::MatmulConfig& c : {stream_k_config(256, true), stream_k_config(256, false), stream_k_config(128, false)}) {
    const std::string src = gm::matmul_source(pieces.mp, c, pieces.epi, *f.low.ir);
    EXPECT_TRUE(gemm_test::instantiates(src, "gemm_wgmma", {{"kSplitK", "true"}, {"kCluster", "1"}})) << c.describe();
    std::vector<uint8_t> cubin;
    ASSERT_TRUE(gemm_test::compiles_unserialized(src, "test_gemm_stream_k.cu", "sm_90a", &cubin)) << c.describe();
    EXPECT_GT(cubin.size(), 1000u);
  }
}

// Every stream_k plan the engine offers against ref, outputs NaN-poisoned: shapes of at least one
// wave of tiles on this GPU with a partial last wave, a batch, k from one 64-wide step to deep,
// bf16 and FLOAT outputs.
TEST(CudaGemmStreamK, RandomShapesMatchRef) {
  DG_REQUIRE_CUDA(gpu);
  if (impl_of(*gpu).info.sm_version != 90) GTEST_SKIP() << "the wgmma core runs on sm_90a";
  const int64_t sms = impl_of(*gpu).info.multiprocessors;
  std::mt19937 rng(133);
  int runs = 0;
  for (int trial = 0; trial < 4; ++trial) {
    const Dims batch = trial == 1 ? Dims{2} : Dims{};
    const int64_t nb = trial == 1 ? 2 : 1;
    // 128 x 256 tiles: between 1.1 and 1.9 waves' worth (and more of 128 x 128).
    const int64_t tiles_n = 4 + rng() % 5, want = sms + sms / 10 + rng() % (sms * 7 / 10);
    const int64_t m = (want / (tiles_n * nb) + 1) * 128 - rng() % 100, n = tiles_n * 256 - rng() % 200;
    const int64_t k = trial == 2 ? 40 : trial == 3 ? 1500 + rng() % 200 : 100 + rng() % 900;
    const dg::DataType out = trial % 2 ? dg::DataType::BFLOAT16 : dg::DataType::FLOAT;
    Dims cd = batch;
    cd.insert(cd.end(), {m, n});
    HostTensor a = gemm_test::operand(batch, m, k, false, dg::DataType::BFLOAT16, rng);
    HostTensor b = gemm_test::operand(batch, k, n, trial % 2 == 0, dg::DataType::BFLOAT16, rng);
    SCOPED_TRACE("trial " + std::to_string(trial) + ": m=" + std::to_string(m) + " n=" + std::to_string(n) +
                 " k=" + std::to_string(k));
    std::vector<std::string> names;
    gemm_test::run_vs_ref("cuda_gemm_wgmma_tma", {a, b}, {gemm_test::packed(cd, out)},
                          [](dg::Graph& g, const std::vector<dg::TensorPtr>& in) {
                            g.set_compute_data_type(dg::DataType::FLOAT);
                            return std::vector<dg::TensorPtr>{g.matmul(in[0], in[1], dg::MatmulAttr())};
                          },
                          {Expect{-1, std::sqrt(double(k))}}, 64, &names, "stream_k=1");
    EXPECT_FALSE(names.empty()) << "no stream_k plan offered";
    runs += static_cast<int>(names.size());
  }
  std::printf("[ INFO ] %d stream_k plans matched ref\n", runs);
}

}  // namespace
