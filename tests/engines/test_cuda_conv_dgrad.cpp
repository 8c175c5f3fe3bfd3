// cuda_conv_implicit_gemm's conv_dgrad on core 3 (transposed convolutions): the phases a strided
// dgrad splits into (conv_dgrad_phases.hpp), checked on the host by running exactly the loads the
// kernel issues (the im2col map's windows, the filter map's strides and backward taps, the
// epilogue's strided rows) against the direct definition; the knobs and refusals on Hopper; NVRTC
// compiles (no GPU); and on a GPU every plan against ref with NaN-poisoned outputs.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <random>
#include <string>
#include <vector>

#include "cuda_conv_test_util.hpp"
#include "engines/cuda/conv/conv_dgrad_phases.hpp"
#include "engines/cuda/conv/conv_im2col_view.hpp"
#include "engines/cuda/conv/conv_knobs.hpp"
#include "engines/cuda/conv/conv_implicit_gemm.hpp"
#include "test_cuda_util.hpp"

namespace {

namespace cv = dnngraph::cuda::conv;
using namespace cuda_conv_test;
constexpr dg::DataType BF = dg::DataType::BFLOAT16;

// The case's conv_dgrad (DX = the case's x) as the engine describes it.
::testing::AssertionResult describe(const Case& c, cv::ConvProblem& cp) {
  dg::Graph g;
  set_types(g, BF);
  add_dgrad(g, out_dims(c), filter_dims(c), c.x, BF, geometry<dg::ConvDgradAttr>(c));
  std::vector<dg::Partition> parts;
  if (auto a = anchored_partitions(g, parts); !a) return a;
  if (parts.size() != 1) return ::testing::AssertionFailure() << parts.size() << " partitions";
  std::string why;
  if (!cv::describe_conv(parts[0], cp, why)) return ::testing::AssertionFailure() << why;
  return ::testing::AssertionSuccess();
}

// Element (n, c, spatial d, h, w) offsets: NHWC (NDHWC) activations, KRSC filters.
struct Geometry {
  int64_t n, c, d, h, w;  // sizes, spatial padded to three dims
};
Geometry padded(const Dims& x) {
  Dims s(x.begin() + 2, x.end());
  while (s.size() < 3) s.insert(s.begin(), 1);
  return {x[0], x[1], s[0], s[1], s[2]};
}
int64_t nhwc_at(const Geometry& g, int64_t n, int64_t c, int64_t d, int64_t h, int64_t w) {
  return (((n * g.d + d) * g.h + h) * g.w + w) * g.c + c;
}

// DX by the definition: every (DY pixel, tap) pair whose window lands on a DX pixel.
std::vector<double> direct_dgrad(const Case& c, const std::vector<double>& dy, const std::vector<double>& w) {
  const Geometry gx = padded(c.x), gy = padded(out_dims(c)), gf = padded(filter_dims(c));
  const size_t pad_dims = 3 - c.filt.size();
  auto at = [&](const Dims& v, int i, int64_t fallback) { return i >= int(pad_dims) ? v[i - pad_dims] : fallback; };
  std::vector<double> dx(static_cast<size_t>(gx.n * gx.c * gx.d * gx.h * gx.w), 0.0);
  int64_t st[3], pd[3], dl[3];
  for (int i = 0; i < 3; ++i) st[i] = at(c.stride, i, 1), pd[i] = at(c.pre, i, 0), dl[i] = at(c.dil, i, 1);
  for (int64_t n = 0; n < gy.n; ++n)
    for (int64_t od = 0; od < gy.d; ++od)
      for (int64_t oh = 0; oh < gy.h; ++oh)
        for (int64_t ow = 0; ow < gy.w; ++ow)
          for (int64_t t = 0; t < gf.d; ++t)
            for (int64_t r = 0; r < gf.h; ++r)
              for (int64_t s = 0; s < gf.w; ++s) {
                const int64_t d = od * st[0] - pd[0] + t * dl[0], h = oh * st[1] - pd[1] + r * dl[1],
                              x = ow * st[2] - pd[2] + s * dl[2];
                if (d < 0 || d >= gx.d || h < 0 || h >= gx.h || x < 0 || x >= gx.w) continue;
                for (int64_t k = 0; k < gy.c; ++k)
                  for (int64_t ch = 0; ch < gx.c; ++ch)
                    dx[nhwc_at(gx, n, ch, d, h, x)] +=
                        dy[nhwc_at(gy, n, k, od, oh, ow)] * w[(((k * gf.d + t) * gf.h + r) * gf.w + s) * gx.c + ch];
              }
  return dx;
}

// DX as core 3 computes it: per phase, per GEMM row m (a pixel of the phase's grid) and k step
// (tap u, DY channel), the element the im2col map loads (window origin lower + coordinate, tap
// offset u, zero outside DY) times the one the filter map loads (its strides from the phase's
// base, taps T - 1 - u), summed into DX's row subgrid_row(m). Also checks that the im2col bounding
// box walks exactly the phase's grid, and that every DX pixel is written once.
std::vector<double> phased_dgrad(const Case& c, const cv::ConvProblem& cp, const std::vector<double>& dy,
                                 const std::vector<double>& w) {
  std::vector<cv::DgradPhase> phases;
  std::string why;
  EXPECT_TRUE(cv::dgrad_phases(cp, phases, why)) << why;
  const Geometry gx = padded(c.x);
  std::vector<double> dx(static_cast<size_t>(gx.n * gx.c * gx.d * gx.h * gx.w), 0.0);
  std::vector<int> written(dx.size() / gx.c, 0);
  for (const cv::DgradPhase& ph : phases) {
    const cv::ConvParams q = cv::dgrad_phase_params(cp, ph);
    const dnngraph::cuda::Im2colMapSpec a = cv::im2col_activation_map(ph.fprop, 64);
    const dnngraph::cuda::TensorMapSpec f = cv::dgrad_filter_map(cp, ph, 64);
    const int64_t es = 2, base = cv::dgrad_filter_offset(cp, ph), spatial = a.rank - 2;
    for (int i = 0; i < spatial; ++i) {  // origins the box holds along map dim i (W, H, D)
      const int64_t span = int64_t(a.dims[1 + i]) - 1 + a.upper[i] - a.lower[i];
      EXPECT_EQ(span / a.traversal[i] + 1, q.out[2 - i]) << "map dim " << i;
    }
    EXPECT_EQ(q.M % (int64_t{q.out[0]} * q.out[1] * q.out[2]), 0);
    for (int64_t m = 0; m < q.M; ++m) {
      const int64_t qw = m % q.out[2], qh = m / q.out[2] % q.out[1], od = m / q.out[2] / q.out[1] % q.out[0];
      const int64_t n = m / q.out[2] / q.out[1] / q.out[0];
      // The epilogue's row: the pixel of DX this GEMM row stores.
      const int64_t dd = od * q.sub_step[0] + q.sub_first[0], dh = qh * q.sub_step[1] + q.sub_first[1],
                    dw = qw * q.sub_step[2] + q.sub_first[2];
      const int64_t row = ((n * q.sub_full[0] + dd) * q.sub_full[1] + dh) * q.sub_full[2] + dw;
      ++written[static_cast<size_t>(row)];
      // The kernel splits m by multiplies (gemm_common.cuh's subgrid_row): the same quotients.
      const auto fast_div = [](uint32_t x, uint64_t magic) {
        const auto t = static_cast<uint32_t>((uint64_t{x} * static_cast<uint32_t>(magic)) >> 32);
        return static_cast<uint32_t>((uint64_t{t} + x) >> (magic >> 32));
      };
      const uint32_t wq = fast_div(static_cast<uint32_t>(m), q.sub_div_out[2]), np = fast_div(wq, q.sub_div_out[1]);
      EXPECT_EQ(int64_t{wq}, m / q.out[2]);
      EXPECT_EQ(int64_t{np}, m / q.out[2] / q.out[1]);
      EXPECT_EQ(int64_t{fast_div(np, q.sub_div_out[0])}, n);
      for (int64_t ft = 0; ft < q.filt[0]; ++ft)
        for (int64_t fr = 0; fr < q.filt[1]; ++fr)
          for (int64_t fs = 0; fs < q.filt[2]; ++fs) {
            const int64_t y[3] = {od - q.pad[0] + ft, qh - q.pad[1] + fr, qw - q.pad[2] + fs};
            if (y[0] < 0 || y[0] >= q.in[0] || y[1] < 0 || y[1] >= q.in[1] || y[2] < 0 || y[2] >= q.in[2]) continue;
            const int64_t tap = (int64_t(f.strides_bytes[0]) * (q.filt[2] - 1 - fs) +
                                 int64_t(f.strides_bytes[1]) * (q.filt[1] - 1 - fr) +
                                 int64_t(f.strides_bytes[2]) * (q.filt[0] - 1 - ft)) / es;
            for (int64_t k = 0; k < q.C; ++k) {
              const int64_t x_off = n * q.x_stride[0] + y[0] * q.x_stride[1] + y[1] * q.x_stride[2] + y[2] * q.x_stride[3] + k;
              for (int64_t ch = 0; ch < q.N; ++ch)
                dx[static_cast<size_t>(row * gx.c + ch)] +=
                    dy[static_cast<size_t>(x_off)] * w[static_cast<size_t>(base + tap + k * int64_t(f.strides_bytes[3]) / es + ch)];
            }
          }
    }
  }
  for (size_t i = 0; i < written.size(); ++i) EXPECT_EQ(written[i], 1) << "DX pixel " << i;
  return dx;
}

// Seeded random strided dgrads (1D, 2D, 3D; strides 1-3, filters at least as wide, any padding
// below the filter, DX sizes that leave a remainder): the phases' loads give the definition's DX.
TEST(CudaConvDgradPhases, PhasesComputeTheDefinition) {
  std::mt19937 rng(211);
  for (int trial = 0; trial < 24; ++trial) {
    const int spatial = 1 + trial % 3;
    Case c;
    c.x = {1 + int64_t(rng() % 2), 8 * (1 + int64_t(rng() % 3))};
    c.k = 8 * (1 + int64_t(rng() % 3));
    for (int i = 0; i < spatial; ++i) {
      const int64_t s = 1 + int64_t(rng() % 3), r = s + int64_t(rng() % 3);
      c.stride.push_back(s);
      c.filt.push_back(r);
      c.pre.push_back(int64_t(rng() % r));
      c.post.push_back(int64_t(rng() % r));
      c.dil.push_back(1);
      c.x.push_back(r + int64_t(rng() % (spatial == 3 ? 5 : 9)));
    }
    SCOPED_TRACE("trial " + std::to_string(trial));
    cv::ConvProblem cp;
    ASSERT_TRUE(describe(c, cp));
    const auto count = [](const Dims& d) {
      int64_t v = 1;
      for (int64_t x : d) v *= x;
      return static_cast<size_t>(v);
    };
    std::vector<double> dy(count(out_dims(c))), w(count(filter_dims(c)));
    std::uniform_real_distribution<double> u(-1.0, 1.0);
    for (double& v : dy) v = u(rng);
    for (double& v : w) v = u(rng);
    const std::vector<double> want = direct_dgrad(c, dy, w), got = phased_dgrad(c, cp, dy, w);
    ASSERT_EQ(want.size(), got.size());
    for (size_t i = 0; i < want.size(); ++i) ASSERT_NEAR(got[i], want[i], 1e-9) << "DX element " << i;
  }
}

// The register epilogue's store maps: where each phase's sub-grid is (channels, width, rows) with
// even strides, every GEMM row's map address is its DX pixel's; where not, the rule.
TEST(CudaConvDgradPhases, StoreMapsAddressTheSubgrid) {
  struct Shape {
    Case c;
    std::string why;  // "" where the maps exist
  };
  const std::vector<Shape> shapes{
      {{{2, 16, 8, 128}, 24, {4, 4}, {1, 1}, {1, 1}, {2, 2}, {1, 1}}, ""},
      {{{1, 8, 7, 256}, 16, {3, 3}, {1, 1}, {1, 1}, {2, 2}, {1, 1}}, ""},  // one image: any height
      {{{2, 8, 64}, 16, {3}, {1}, {1}, {1}, {1}}, ""},                     // 1D, stride 1
      {{{2, 16, 18, 18}, 24, {4, 4}, {1, 1}, {1, 1}, {2, 2}, {1, 1}}, "a phase's width (9) is not a multiple"},
      {{{2, 8, 7, 256}, 16, {3, 3}, {1, 1}, {1, 1}, {2, 2}, {1, 1}}, "DX's height (7) is not the stride times a phase's"},
      {{{1, 8, 4, 6, 128}, 16, {3, 3, 3}, {1, 1, 1}, {1, 1, 1}, {2, 2, 2}, {1, 1, 1}}, "a 3D conv_dgrad's phases"},
  };
  for (const Shape& sh : shapes) {
    SCOPED_TRACE(sh.why);
    cv::ConvProblem cp;
    ASSERT_TRUE(describe(sh.c, cp));
    std::vector<cv::DgradPhase> phases;
    std::string why;
    ASSERT_TRUE(cv::dgrad_phases(cp, phases, why)) << why;
    // DX packed NHWC as the register epilogue sees it: (channels, pixels, 1), 16-bit.
    dnngraph::cuda::TensorMapSpec rows;
    rows.dims[0] = static_cast<uint64_t>(cp.params.N);
    rows.dims[1] = static_cast<uint64_t>(cp.params.M);
    rows.strides_bytes[0] = static_cast<uint64_t>(cp.params.N * 2);
    rows.strides_bytes[1] = rows.strides_bytes[0] * rows.dims[1];
    rows.box[0] = rows.box[1] = 64;
    bool all = true;
    for (const cv::DgradPhase& ph : phases) {
      dnngraph::cuda::TensorMapSpec map;
      int64_t offset = 0;
      if (!cv::dgrad_store_map(cp, ph, rows, map, offset, why)) {
        all = false;
        break;
      }
      const cv::ConvParams q = cv::dgrad_phase_params(cp, ph);
      EXPECT_EQ(map.dims[1] * map.dims[2], static_cast<uint64_t>(q.M));
      for (int64_t m = 0; m < q.M; ++m) {
        const int64_t w = q.out[2], qw = m % w, qh = m / w % q.out[1], n = m / w / q.out[1];
        const int64_t row = (n * q.sub_full[1] + qh * q.sub_step[1] + q.sub_first[1]) * q.sub_full[2] + qw * q.sub_step[2] +
                            q.sub_first[2];
        const int64_t at = offset * 2 + (m % w) * int64_t(map.strides_bytes[0]) + (m / w) * int64_t(map.strides_bytes[1]);
        ASSERT_EQ(at, row * cp.params.N * 2) << "row " << m;
      }
    }
    if (sh.why.empty()) EXPECT_TRUE(all) << why;
    else EXPECT_EQ(why.rfind(sh.why, 0), 0u) << why;
  }
}

// What dgrad_phases refuses, with the rule.
TEST(CudaConvDgradPhases, RefusesWithTheRule) {
  cv::ConvProblem cp;
  std::vector<cv::DgradPhase> phases;
  std::string why;
  ASSERT_TRUE(describe({{2, 16, 9, 9}, 24, {3, 3}, {1, 1}, {1, 1}, {1, 1}, {1, 2}}, cp));
  EXPECT_FALSE(cv::dgrad_phases(cp, phases, why));
  EXPECT_EQ(why, "a dilated conv_dgrad (dilation 2 along W) is not split into phases");
  ASSERT_TRUE(describe({{2, 16, 9, 9}, 24, {1, 3}, {0, 1}, {0, 1}, {2, 2}, {1, 1}}, cp));
  EXPECT_FALSE(cv::dgrad_phases(cp, phases, why));
  EXPECT_EQ(why, "the filter along H (1 taps) is narrower than the stride (2): some phases take no tap");
  // The transposed convolution of issue #15 (4x4, stride 2, padding 1: 64² -> 128²): four phases
  // of 2 x 2 taps, each 64 x 64 pixels, padding 1 or 0.
  ASSERT_TRUE(describe({{8, 64, 128, 128}, 128, {4, 4}, {1, 1}, {1, 1}, {2, 2}, {1, 1}}, cp));
  ASSERT_TRUE(cv::dgrad_phases(cp, phases, why)) << why;
  ASSERT_EQ(phases.size(), 4u);
  for (const cv::DgradPhase& ph : phases) {
    const cv::ConvParams& q = ph.fprop.params;
    EXPECT_EQ(q.out[1], 64);
    EXPECT_EQ(q.out[2], 64);
    EXPECT_EQ(q.filt[1], 2);
    EXPECT_EQ(q.filt[2], 2);
    EXPECT_EQ(q.pad[1], ph.first[1] == 0 ? 1 : 0);
    EXPECT_EQ(q.K, 4 * 128);
    EXPECT_EQ(q.M, 8 * 64 * 64);
  }
}

// The transposed convolution's graph (DY [2, 48, 9, 9] -> DX [2, 32, 18, 18], 4x4 stride 2) and
// its knob space on an H100-like target.
// (Dilated 2: DX [2, 32, 21, 21].)
void add_transposed(dg::Graph& g, dg::DataType t, const Dims& dil = {1, 1}) {
  set_types(g, t);
  const int64_t side = dil[0] == 2 ? 21 : 18;
  add_dgrad(g, {2, 48, 9, 9}, {48, 32, 4, 4}, {2, 32, side, side}, t,
            dg::ConvDgradAttr().set_padding({1, 1}).set_stride({2, 2}).set_dilation(dil));
}

std::vector<dg::Knobs> core3_space(dg::Graph& g) {
  gemm_test::FakeHopper hopper;
  std::vector<dg::Partition> parts;
  EXPECT_TRUE(anchored_partitions(g, parts));
  std::vector<dg::Knobs> core3;
  if (parts.size() != 1) return core3;
  for (const auto& k : dnngraph::cuda::conv_implicit_gemm_engine().knob_space(parts[0], hopper.target))
    if (k.at("core") == 3) core3.push_back(k);
  return core3;
}

TEST(CudaConvDgradPhases, OfferedOnHopperForSixteenBitInputs) {
  dg::Graph g;
  add_transposed(g, BF);
  const auto space = core3_space(g);
  // 32 DX channels: 64-wide tiles, 6/4/8 stages, 8-stage ping-pong, and the phase's filters (2 x 2
  // taps of 48 DY channels: 4 tiles of 8 KB) resident beside 4 stages.
  EXPECT_EQ(space.size(), 5u);
  int resident = 0;
  for (const auto& k : space) {
    EXPECT_EQ(k.at("tile_n"), 64) << dg::knobs_to_string(k);
    EXPECT_EQ(k.count("split_k") + k.count("cluster") + k.count("epilogue"), 0u) << dg::knobs_to_string(k);
    resident += static_cast<int>(k.count("resident_b"));
  }
  EXPECT_EQ(resident, 1);
  // A phase width of 64 (DX 128 wide): each setting but the resident one again with the register
  // epilogue storing the phases by TMA boxes.
  dg::Graph wide;
  set_types(wide, BF);
  add_dgrad(wide, {2, 48, 4, 64}, {48, 32, 4, 4}, {2, 32, 8, 128}, BF,
            dg::ConvDgradAttr().set_padding({1, 1}).set_stride({2, 2}));
  const auto wide_space = core3_space(wide);
  EXPECT_EQ(wide_space.size(), 9u);
  EXPECT_EQ(std::count_if(wide_space.begin(), wide_space.end(), [](const dg::Knobs& k) { return k.count("epilogue"); }), 4);
  dg::Graph dilated;
  add_transposed(dilated, BF, {2, 2});
  EXPECT_TRUE(core3_space(dilated).empty());
  dg::Graph fp32;
  add_transposed(fp32, dg::DataType::FLOAT);
  fp32.set_allow_tf32(true);
  EXPECT_TRUE(core3_space(fp32).empty());
}

// Knobs core 3 cannot run a dgrad's phases with: the rule, and (on a GPU) build's refusal, which
// names the node and the tensor.
TEST(CudaConvDgradPhases, RuleNamesTheKnobs) {
  const std::string rule = "core=3 runs a conv_dgrad's phases on 16-bit inputs in whole tiles of one CTA";
  cv::ConvConfig c{3, 128, 64, 6};
  EXPECT_EQ(cv::dgrad_phase_rule(c, BF), "");
  c.resident_b = true;  // resident filters: the phase's own taps
  EXPECT_EQ(cv::dgrad_phase_rule(c, BF), "");
  c.resident_b = false;
  c.epilogue = 1;  // the register epilogue: where the phases' store maps exist (dgrad_store_map)
  EXPECT_EQ(cv::dgrad_phase_rule(c, BF), "");
  c.epilogue = 0;
  EXPECT_EQ(cv::dgrad_phase_rule(c, dg::DataType::FLOAT).rfind(rule, 0), 0u);
  for (auto set : {+[](cv::ConvConfig& x) { x.splits = 2; }, +[](cv::ConvConfig& x) { x.cluster = 2; },
                   +[](cv::ConvConfig& x) { x.cluster_n = 2; }}) {
    cv::ConvConfig k = c;
    set(k);
    EXPECT_EQ(cv::dgrad_phase_rule(k, BF).rfind(rule, 0), 0u);
  }
}

TEST(CudaConvDgradPhases, BuildRefusesOtherKnobs) {
  DG_REQUIRE_CUDA(gpu);
  if (impl_of(*gpu).info.sm_version != 90) GTEST_SKIP() << "core=3 needs sm_90a";
  dg::Target target;
  target.handle = &impl_of(*gpu);
  dg::Graph g;
  add_transposed(g, BF);
  std::vector<dg::Partition> parts;
  ASSERT_TRUE(anchored_partitions(g, parts));
  ASSERT_EQ(parts.size(), 1u);
  const dg::Engine& e = dnngraph::cuda::conv_implicit_gemm_engine();
  const std::vector<std::pair<dg::Knobs, std::string>> refused{
      {{{"core", 3}, {"tile_m", 128}, {"tile_n", 128}, {"stages", 5}, {"split_k", 2}},
       "node 'conv_dgrad_0', tensor 'DY': core=3 runs a conv_dgrad's phases on 16-bit inputs"},
      // DX 18 wide: 9-wide phases, which the store's 64-row boxes do not tile.
      {{{"core", 3}, {"tile_m", 128}, {"tile_n", 64}, {"stages", 6}, {"epilogue", 1}},
       "node 'conv_dgrad_0', tensor 'DY': epilogue=1 stores the phases by TMA boxes, but a phase's width (9)"}};
  for (const auto& [k, what] : refused) {
    std::unique_ptr<dg::Plan> plan;
    const dg::Status s = e.build(parts[0], target, k, plan);
    EXPECT_FALSE(s.ok()) << dg::knobs_to_string(k);
    EXPECT_NE(s.message().find(what), std::string::npos) << s.to_string();
  }
  std::unique_ptr<dg::Plan> plan;
  const dg::Status s = e.build(parts[0], target, {{"core", 1}, {"tile_m", 128}, {"tile_n", 64}, {"stages", 4}}, plan);
  EXPECT_NE(s.message().find("conv_dgrad runs on core=0 and core=3, conv_wgrad on core=0 only"), std::string::npos)
      << s.to_string();
}

// The phase kernel (2D and 3D, 64- and 128-wide tiles, ping-pong, resident filters) compiles for
// sm_90a with its MN-major filter loads and the strided epilogue.
TEST(CudaConvDgradPhases, KernelsCompileWithNvrtc) {
  if (!dnngraph::cuda::nvrtc()) GTEST_SKIP() << "NVRTC not available: " << dnngraph::cuda::nvrtc_error();
  struct Setting {
    Dims dy, w, dx;
    int bn;
    bool pingpong, resident;
    int epilogue = 0;
  };
  for (const Setting& s : {Setting{{2, 48, 9, 9}, {48, 32, 4, 4}, {2, 32, 18, 18}, 64, false, false},
                           Setting{{2, 48, 9, 9}, {48, 32, 4, 4}, {2, 32, 18, 18}, 64, false, true},
                           Setting{{2, 48, 9, 9}, {48, 136, 3, 3}, {2, 136, 17, 17}, 128, true, false},
                           Setting{{2, 48, 4, 64}, {48, 136, 4, 4}, {2, 136, 8, 128}, 128, false, false, 1},
                           Setting{{2, 48, 4, 64}, {48, 32, 4, 4}, {2, 32, 8, 128}, 64, true, false, 1},
                           Setting{{1, 32, 4, 5, 6}, {32, 24, 3, 3, 3}, {1, 24, 6, 8, 10}, 64, false, false}}) {
    dg::Graph g;
    set_types(g, BF);
    const bool three_d = s.dx.size() == 5, four = s.w[2] == 4;
    add_dgrad(g, s.dy, s.w, s.dx, BF,
              three_d ? dg::ConvDgradAttr().set_padding({1, 1, 1}).set_stride({2, 2, 2}).set_post_padding({2, 2, 2})
              : four  ? dg::ConvDgradAttr().set_padding({1, 1}).set_stride({2, 2})
                      : dg::ConvDgradAttr().set_padding({1, 1}).set_stride({2, 2}).set_post_padding({1, 1}));
    ASSERT_NO_FATAL_FAILURE(for_each_anchored_partition(g, [&](const dg::Partition& p) {
      std::string src, why;
      ASSERT_TRUE(cv::fprop_source_for_test(p, 3, 128, s.bn, s.resident ? 4 : 6, src, why, 1, s.pingpong, s.resident, 1,
                                            s.epilogue))
          << why;
      EXPECT_NE(src.find("kDgradPhases"), std::string::npos);
      EXPECT_NE(src.find(three_d ? "kRank = 5" : "kRank = 4"), std::string::npos) << src;
      ASSERT_NO_FATAL_FAILURE(expect_compiles(src, "test_conv_dgrad_phases.cu", "sm_90a"));
    }));
  }
}

// On a GPU: every plan of the engine (core 3's phases first, then core 0's) against ref, DX
// poisoned with NaN before each: transposed 4x4 and 3x3 (stride 2, DX sizes with a remainder),
// 2x2 stride 2 without padding, a stride-1 3x3 (one phase), 1D and 3D, channel counts off the
// 64-wide blocks, a ReLU epilogue on some; last, a bf16 DX whose phases are 64 wide, so that the
// register epilogue's TMA stores of the sub-grids run too.
TEST(CudaConvDgradPhases, EveryPlanMatchesRef) {
  DG_REQUIRE_CUDA(gpu);
  if (impl_of(*gpu).info.sm_version != 90) GTEST_SKIP() << "core=3 needs sm_90a";
  std::mt19937 rng(223);
  const std::vector<Case> cases{
      {{2, 32, 18, 18}, 48, {4, 4}, {1, 1}, {1, 1}, {2, 2}, {1, 1}},
      {{2, 136, 17, 15}, 72, {3, 3}, {1, 1}, {1, 0}, {2, 2}, {1, 1}},
      {{1, 24, 16, 20}, 200, {2, 2}, {0, 0}, {0, 0}, {2, 2}, {1, 1}},
      {{3, 40, 11, 13}, 56, {3, 3}, {1, 1}, {1, 1}, {1, 1}, {1, 1}},
      {{2, 64, 37}, 32, {5}, {2}, {2}, {3}, {1}},
      {{1, 16, 8, 10, 12}, 24, {3, 3, 3}, {1, 1, 1}, {2, 2, 2}, {2, 2, 2}, {1, 1, 1}},
      {{2, 40, 8, 128}, 48, {4, 4}, {1, 1}, {1, 1}, {2, 2}, {1, 1}},
  };
  for (size_t i = 0; i < cases.size(); ++i) {
    const Case& c = cases[i];
    SCOPED_TRACE("case " + std::to_string(i));
    const dg::DataType t = i % 2 ? dg::DataType::HALF : BF;
    HostTensor dy = nhwc(out_dims(c), t), w = nhwc(filter_dims(c), t);
    gemm_test::fill_random(dy, rng);
    gemm_test::fill_random(w, rng);
    int64_t taps = c.k;
    for (int64_t f : c.filt) taps *= f;
    std::vector<std::string> names;
    const bool sixteen = i + 1 == cases.size();  // the register epilogue's case
    gemm_test::run_vs_ref(kConvEngine, {dy, w}, {nhwc(c.x, sixteen ? t : dg::DataType::FLOAT)},
                          [&](dg::Graph& g, const std::vector<dg::TensorPtr>& ts) {
                            set_fp32_compute(g);
                            auto dx = g.conv_dgrad(ts[0], ts[1], geometry<dg::ConvDgradAttr>(c));
                            dx->set_dim(c.x);
                            if (i % 3 == 0) dx = g.pointwise(dx, dg::PointwiseAttr().set_mode(M::RELU_FWD));
                            return std::vector<dg::TensorPtr>{dx};
                          },
                          {Expect{sixteen ? 1.2e-2 : 2e-5, std::sqrt(double(taps)) * 0.1}}, 64, &names);
    const auto ran = [&](const char* knob) {
      return std::any_of(names.begin(), names.end(), [&](const std::string& n) { return n.find(knob) != std::string::npos; });
    };
    EXPECT_TRUE(ran("core=3")) << "no core=3 plan ran";
    if (sixteen) {
      EXPECT_TRUE(ran("epilogue=1")) << "no epilogue=1 plan ran";
    }
  }
}

}  // namespace
