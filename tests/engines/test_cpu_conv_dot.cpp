// The dot-product tiles of cpu_conv_implicit_gemm's in-place weight form against a naive sum on
// every ISA this CPU runs (K blocks carried through the vector sums, taps outside the image,
// partial tiles), and the rules that pick the form: which convs it can run, and the cost model.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <random>
#include <vector>

#include "cpu_test_util.hpp"
#include "engines/cpu/conv/conv_dot_kernels.hpp"
#include "engines/cpu/conv/conv_implicit_dot.hpp"

namespace {

namespace dg = dnngraph;
namespace cd = dnngraph::cpu::conv_dot;

// One tile: np pixels x no channels over `taps` taps of cin channels, run as `blocks` K blocks
// (split by taps when there are several, else by channels), against a double sum.
void check_tile(const cd::DotKernelSet& ks, std::mt19937& rng, int64_t taps, int64_t cin, int blocks, int np, int no) {
  std::uniform_real_distribution<float> u(-1, 1);
  std::vector<float> x(static_cast<size_t>(ks.np * taps * cin + 64)), w(static_cast<size_t>(ks.no * taps * cin + 64));
  for (auto& v : x) v = u(rng);
  for (auto& v : w) v = u(rng);
  const std::vector<float> zeros(static_cast<size_t>(cin), 0.0f);
  std::vector<const float*> xs(static_cast<size_t>(ks.np * taps));
  for (int p = 0; p < ks.np; ++p)
    for (int64_t t = 0; t < taps; ++t) {
      // Tap 0 outside for the whole tile (skipped), tap 1 for pixel 0 only (read as zeros).
      const bool outside = (t == 0 && taps > 2) || (t == 1 && p == 0);
      xs[static_cast<size_t>(p * taps + t)] = outside ? zeros.data() : x.data() + (p * taps + t) * cin;
    }
  std::vector<const float*> wrow(static_cast<size_t>(ks.no));
  for (int o = 0; o < ks.no; ++o) wrow[static_cast<size_t>(o)] = w.data() + o * taps * cin;
  std::vector<int64_t> wtap(static_cast<size_t>(taps));
  for (int64_t t = 0; t < taps; ++t) wtap[static_cast<size_t>(t)] = t * cin;
  std::vector<float> out(static_cast<size_t>(ks.np * ks.no), std::nanf(""));
  std::vector<float*> rows(static_cast<size_t>(ks.np));
  for (int p = 0; p < ks.np; ++p) rows[static_cast<size_t>(p)] = out.data() + p * ks.no;
  std::vector<float> acc(static_cast<size_t>(ks.np * ks.no * ks.width));
  cd::DotArgs a{};
  a.x = xs.data(), a.zeros = zeros.data(), a.ntaps = taps, a.w = wrow.data(), a.wtap = wtap.data();
  a.acc = acc.data(), a.out = rows.data(), a.np = np, a.no = no;
  const bool by_taps = taps >= blocks;
  const int64_t vecs = cin / ks.width;
  for (int b = 0; b < blocks; ++b) {
    a.t0 = by_taps ? taps * b / blocks : 0;
    a.t1 = by_taps ? taps * (b + 1) / blocks : taps;
    a.c0 = by_taps ? 0 : vecs * b / blocks * ks.width;
    a.cn = by_taps ? cin : vecs * (b + 1) / blocks * ks.width - a.c0;
    a.first = b == 0;
    a.last = b + 1 == blocks;
    ks.kernel(a);
  }
  for (int p = 0; p < ks.np; ++p)
    for (int o = 0; o < ks.no; ++o) {
      const float got = out[static_cast<size_t>(p * ks.no + o)];
      if (p >= np || o >= no) {
        EXPECT_TRUE(std::isnan(got)) << "wrote outside the tile at " << p << "," << o;
        continue;
      }
      double want = 0;
      for (int64_t t = 0; t < taps; ++t)
        for (int64_t c = 0; c < cin; ++c)
          want += double(xs[static_cast<size_t>(p * taps + t)][c]) * wrow[static_cast<size_t>(o)][wtap[static_cast<size_t>(t)] + c];
      EXPECT_NEAR(got, want, 1e-5 * std::sqrt(double(taps * cin)) * (1 + std::fabs(want)))
          << "taps=" << taps << " cin=" << cin << " blocks=" << blocks << " at " << p << "," << o;
    }
}

TEST(CpuConvDotTiles, MatchNaiveOnEveryIsa) {
  std::mt19937 rng(41);
  cpu_test::for_each_isa([&](dg::cpu::Isa isa) {
    const cd::DotKernelSet& ks = cd::dot_kernels(isa);
    EXPECT_EQ(ks.isa, isa);
    for (int trial = 0; trial < 12; ++trial) {
      const int64_t taps = 1 + rng() % 9, cin = ks.width * (1 + rng() % 6);
      const int blocks = 1 + static_cast<int>(rng() % 3);
      const int np = trial < 4 ? ks.np : 1 + static_cast<int>(rng() % ks.np);
      const int no = trial < 4 ? ks.no : 1 + static_cast<int>(rng() % ks.no);
      check_tile(ks, rng, taps, cin, std::min<int>(blocks, static_cast<int>(std::max<int64_t>(taps, cin / ks.width))), np, no);
    }
  });
}

// A 3x3 pad-1 conv_fprop (or 1x1), NHWC source, KRSC weights, fp32, H x W images.
dg::cpu::ConvGeometry geometry(int64_t c, int64_t k, int64_t hw, int64_t r) {
  dg::cpu::ConvGeometry g;
  g.nsp = 2, g.src = 0, g.wei = 1, g.dst = 2, g.n = 1;
  g.src_c = g.src_cg = c;
  g.dst_c = g.dst_cg = k;
  g.src_sp = g.dst_sp = {1, hw, hw};
  g.ker = {1, r, r};
  g.pad = {0, r / 2, r / 2};
  g.src_st = {hw * hw * c, 1, hw * hw * c, hw * c, c};
  g.wei_st = {r * r * c, 1, r * r * c, r * c, c};
  g.dst_st = {hw * hw * k, 1, hw * hw * k, hw * k, k};
  return g;
}

TEST(CpuConvDotTiles, FormFollowsTheCostModel) {
  const cd::DotKernelSet* avx512 = cd::avx512_dot_kernels();
  const cd::DotKernelSet* avx2 = cd::avx2_dot_kernels();
  if (!avx512 || !avx2) GTEST_SKIP() << "no x86 kernels in this build";
  // Few pixels per weight, a long reduction: packing would cost more than the tiles lose.
  EXPECT_TRUE(dg::cpu::conv_dot_preferred(geometry(512, 512, 7, 3), *avx512, 12, 32, false));
  EXPECT_TRUE(dg::cpu::conv_dot_preferred(geometry(512, 512, 7, 3), *avx2, 6, 16, false));
  // 14x14 C256: on AVX-512 the load-bound tile loses to packing; with 256-bit loads it wins.
  EXPECT_FALSE(dg::cpu::conv_dot_preferred(geometry(256, 256, 14, 3), *avx512, 12, 32, false));
  EXPECT_TRUE(dg::cpu::conv_dot_preferred(geometry(256, 256, 14, 3), *avx2, 6, 16, false));
  // Many pixels, or a short reduction: packing is cheap, the lane sums are not.
  EXPECT_FALSE(dg::cpu::conv_dot_preferred(geometry(64, 64, 56, 3), *avx512, 12, 32, false));
  EXPECT_FALSE(dg::cpu::conv_dot_preferred(geometry(64, 64, 56, 3), *avx2, 6, 16, false));
  EXPECT_FALSE(dg::cpu::conv_dot_preferred(geometry(256, 64, 56, 1), *avx2, 6, 16, false));
  // Weights the plan keeps packed cost nothing per execute: 14x14 C256 goes packed on AVX2 too,
  // at 7x7 the 12-row tiles pad 49 pixels to 60 and the in-place tiles still win, while 7 x 48
  // tiles pad nothing but 512 channels to 528 and take it.
  EXPECT_FALSE(dg::cpu::conv_dot_preferred(geometry(256, 256, 14, 3), *avx2, 6, 16, true));
  EXPECT_TRUE(dg::cpu::conv_dot_preferred(geometry(512, 512, 7, 3), *avx512, 12, 32, true));
  EXPECT_FALSE(dg::cpu::conv_dot_preferred(geometry(512, 512, 7, 3), *avx512, 7, 48, true));
}

TEST(CpuConvDotTiles, UnfitConvsNameTheirRule) {
  const cd::DotKernelSet& ks = cd::portable_dot_kernels();
  auto unfit = [&](const dg::cpu::ConvGeometry& g) {
    return dg::cpu::conv_dot_unfit(g, dg::cpu::conv_phases(g, 1 << 18), ks);
  };
  EXPECT_EQ(unfit(geometry(64, 64, 7, 3)), "");
  auto g = geometry(64, 64, 7, 3);
  g.src_t = dg::DataType::BFLOAT16;
  EXPECT_EQ(unfit(g), "it needs fp32 source and weights");
  g = geometry(64, 64, 7, 3);
  g.wei_st = {64 * 9, 9, 64 * 9, 3, 1};  // KCRS
  EXPECT_EQ(unfit(g), "it needs unit-stride input channels in source and weights");
  EXPECT_EQ(unfit(geometry(66, 64, 7, 3)), "it needs input channels per group (66) a multiple of 4");
  EXPECT_EQ(dg::cpu::conv_dot_unfit(geometry(64, 64, 7, 3), dg::cpu::conv_phases(geometry(64, 64, 7, 3), 8), ks),
            "its tap offset table would be too large");
  // The geometry alone (what the engine's estimate asks before a plan builds the tables).
  EXPECT_EQ(dg::cpu::conv_dot_unfit_geometry(geometry(64, 64, 7, 3), ks), "");
  EXPECT_EQ(dg::cpu::conv_dot_unfit_geometry(geometry(66, 64, 7, 3), ks),
            "it needs input channels per group (66) a multiple of 4");
}

// Each ISA level's tile rate over the fastest level's, as measured on this machine: the fastest
// is 1, every level the machine runs has a rate, and a level it lacks reads as the one below it.
TEST(CpuConvDotTiles, RelativeRatesPutTheFastestLevelAtOne) {
  const dg::cpu::CpuFeatures& f = dg::cpu::cpu_features();
  double top = 0;
  for (dg::cpu::Isa isa : {dg::cpu::Isa::PORTABLE, dg::cpu::Isa::AVX2, dg::cpu::Isa::AVX512}) {
    const double r = cd::relative_rate(isa);
    EXPECT_LE(r, 1.0) << dg::cpu::isa_name(isa);
    if (f.supports(isa) && cd::dot_kernels(isa).isa == isa) {
      EXPECT_GT(r, 0.0) << dg::cpu::isa_name(isa);
    }
    if (cd::dot_kernels(isa).isa != isa) {
      EXPECT_EQ(r, cd::relative_rate(cd::dot_kernels(isa).isa));
    }
    top = std::max(top, r);
  }
  EXPECT_DOUBLE_EQ(top, 1.0);
}

}  // namespace
