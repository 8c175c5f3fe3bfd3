#include "engines/cuda/conv/conv_knobs.hpp"

#include <algorithm>

#include "engines/cuda/conv/conv_halo_view.hpp"
#include "engines/cuda/conv/conv_im2col_view.hpp"

namespace dnngraph::cuda::conv {

ConvConfig config_of(const ConvKnobs& k) {
  ConvConfig c{static_cast<int>(k.core),   static_cast<int>(k.tile_m),  static_cast<int>(k.tile_n),
               static_cast<int>(k.stages), static_cast<int>(k.split_k), k.tf32 == 1, k.pingpong == 1, k.resident_b == 1};
  c.cluster = static_cast<int>(k.cluster);
  c.cluster_n = static_cast<int>(k.cluster_n);
  c.epilogue = static_cast<int>(k.epilogue);
  c.split_cluster = k.split_cluster == 1;
  c.tf32x3 = k.tf32x3 == 1;
  return c;
}

std::string conv_rules(const ConvKnobs& k) {
  if (k.core == 4 && (k.tile_m != 128 || k.tile_n == 256 || k.split_k > 1 || k.pingpong || k.resident_b ||
                      k.cluster > 1 || k.cluster_n > 1 || k.tf32 || k.split_cluster))
    return "core=4 (halo tiles) takes 128 x 64 or 128 x 128 tiles of one CTA (split_k 1, pingpong 0, resident_b 0, "
           "cluster 1, cluster_n 1, tf32 0)";
  if (k.split_k > 1 && k.core == 0) return "split_k above 1 runs on the wgmma cores (core=1..3) only";
  if (k.core == 0 && k.tile_n == 256) return "the mma.sync core (core=0) takes tile_n 64 or 128";
  if (k.core > 0 && k.tile_m != 128) return "the wgmma cores (core=1..4) take tile_m 128";
  if (k.pingpong && (k.core < 2 || k.tile_n == 256 || k.split_k > 1))
    return "pingpong=1 goes only with core=2 or 3, tile_n 64 or 128 and split_k 1";
  if (k.core >= 2 && k.split_k > 1 && k.tile_n != 128 && !(k.core == 3 && k.split_cluster && k.tile_n == 64))
    return "split_k above 1 on core=2 or 3 takes tile_n 128 (or 64 in core=3's split clusters)";
  if (k.resident_b && (k.core != 3 || k.pingpong)) return "resident_b=1 goes only with core=3 and pingpong 0";
  if (k.cluster == 2 && (k.core != 3 || k.split_k > 1 || k.tf32 || k.resident_b))
    return "cluster=2 goes only with core=3 and whole tiles of 16-bit inputs (split_k 1, tf32 0, resident_b 0)";
  if (k.cluster_n > 1 && (k.core != 3 || k.split_k > 1 || k.tf32 || k.resident_b || k.cluster > 1))
    return "cluster_n above 1 goes only with core=3, cluster 1 and whole tiles of 16-bit inputs (split_k 1, tf32 0, "
           "resident_b 0)";
  if (k.split_cluster && (k.core != 3 || k.split_k < 2 || k.split_k > 4 || k.resident_b || k.cluster > 1 || k.cluster_n > 1))
    return "split_cluster=1 goes only with core=3, split_k 2 to 4 and streamed tiles of one CTA (resident_b 0, cluster 1, "
           "cluster_n 1)";
  if (k.tf32x3 && (k.tf32 || k.core != 3 || k.tile_n == 256 || (k.pingpong && k.tile_n != 64) || k.resident_b ||
                   k.cluster > 1 || k.cluster_n > 1 || k.split_cluster))
    return "tf32x3=1 (3xTF32) goes only with core=3, tf32 0, tile_n 64 or 128 (ping-pong: 64) and streamed tiles of "
           "one CTA (resident_b 0, cluster 1, cluster_n 1, split_cluster 0)";
  if (k.epilogue && (k.core < 2 || k.resident_b))
    return "epilogue=1 (registers + TMA store) goes only with core=2 to 4 and streamed filter tiles (resident_b 0)";
  if (k.core > 0 && !k.resident_b && config_of(k).smem_bytes() > 227 * 1024)
    return "the wgmma core's " + std::to_string(config_of(k).smem_bytes()) +
           " bytes of shared memory for these stages exceed 227 KB";
  return "";
}

namespace {

const KnobSchema<ConvKnobs> kSchema{kImplicitGemmEngineName,
                                    {{"core", &ConvKnobs::core, 0, 4},
                                     {"tile_m", &ConvKnobs::tile_m, 64, 128, {64, 128}},
                                     {"tile_n", &ConvKnobs::tile_n, 64, 256, {64, 128, 256}},
                                     {"stages", &ConvKnobs::stages, 2, 8},
                                     {"split_k", &ConvKnobs::split_k, 1, 16, {}, false},
                                     {"tf32", &ConvKnobs::tf32, 0, 1, {}, false},
                                     {"pingpong", &ConvKnobs::pingpong, 0, 1, {}, false},
                                     {"resident_b", &ConvKnobs::resident_b, 0, 1, {}, false},
                                     {"cluster", &ConvKnobs::cluster, 1, 2, {}, false},
                                     {"cluster_n", &ConvKnobs::cluster_n, 1, 8, {1, 2, 4, 8}, false},
                                     {"epilogue", &ConvKnobs::epilogue, 0, 1, {}, false},
                                     {"split_cluster", &ConvKnobs::split_cluster, 0, 1, {}, false},
                                     {"tf32x3", &ConvKnobs::tf32x3, 0, 1, {}, false}},
                                    conv_rules};

}  // namespace

const KnobSchema<ConvKnobs>& knob_schema() { return kSchema; }

bool resident_fits(const ConvProblem& cp, ConvConfig& c, std::string& why) {
  // Capped where the count alone already overflows 227 KB, so that smem_bytes() stays in int.
  c.resident_kt = static_cast<int>(std::min<int64_t>(im2col_ktiles(cp.params, c.bk()), 4096));
  if (cp.params.N > c.bn) {
    why = std::to_string(cp.params.N) + " output channels do not fit one tile column of " + std::to_string(c.bn);
    return false;
  }
  if (c.smem_bytes() > 227 * 1024) {
    why = "the " + std::to_string(c.resident_kt) + " filter tiles and " + std::to_string(c.stages) + " stages need " +
          std::to_string(c.smem_bytes()) + " bytes of shared memory, above 227 KB";
    return false;
  }
  return true;
}

bool halo_fits(const ConvProblem& cp, ConvConfig& c, HaloTiles& t, std::string& why) {
  if (!halo_view(cp, t, why)) return false;
  c.halo_stage_bytes = t.stage_bytes;
  if (c.smem_bytes() > 227 * 1024) {
    why = "two halo boxes of " + std::to_string(t.stage_bytes) + " bytes and " + std::to_string(c.stages) +
          " filter tiles need " + std::to_string(c.smem_bytes()) + " bytes of shared memory, above 227 KB";
    return false;
  }
  return true;
}

void add_halo_candidates(const ConvProblem& cp, std::vector<ConvKnobs>& out) {
  std::vector<ConvKnobs> all;
  if (cp.params.N <= 64) {
    for (int st : {8, 6}) all.push_back({.core = 4, .tile_m = 128, .tile_n = 64, .stages = st});
  } else {
    for (int st : {4, 6}) all.push_back({.core = 4, .tile_m = 128, .tile_n = 128, .stages = st});
    all.push_back({.core = 4, .tile_m = 128, .tile_n = 64, .stages = 8});
  }
  for (const ConvKnobs& k : all) {  // those whose boxes and filter ring fit 227 KB
    ConvConfig c = config_of(k);
    HaloTiles t;
    if (std::string why; halo_fits(cp, c, t, why)) out.push_back(k);
  }
}

// Core 2 (1x1 convolutions as GEMMs): 64-wide tiles for 64 output channels or fewer, else
// 256-wide ones and 128-wide ping-pong; split-K where the 128 x 128 tiles under-fill the
// multiprocessors and each split keeps at least 8 k steps (as cuda_gemm_wgmma_tma's).
void add_gemm_view_candidates(const ConvProblem& cp, int multiprocessors, int64_t bk, std::vector<ConvKnobs>& out) {
  if (cp.params.N <= 64) {
    for (int st : {6, 4, 8}) out.push_back({.core = 2, .tile_m = 128, .tile_n = 64, .stages = st});
    out.push_back({.core = 2, .tile_m = 128, .tile_n = 64, .stages = 8, .pingpong = 1});
  } else {
    out.push_back({.core = 2, .tile_m = 128, .tile_n = 256, .stages = 4});
    out.push_back({.core = 2, .tile_m = 128, .tile_n = 128, .stages = 6, .pingpong = 1});
  }
  const int64_t tiles = ((cp.params.M + 127) / 128) * ((cp.params.N + 127) / 128), kt = (cp.params.K + bk - 1) / bk;
  if (tiles < multiprocessors)
    for (int sk : {2, 4, 8})
      if (kt >= 8 * sk) out.push_back({.core = 2, .tile_m = 128, .tile_n = 128, .stages = 5, .split_k = sk});
}

// Core 3 (im2col TMA): the same tile shapes as core 2; split-K where the 128 x 128 tiles
// under-fill the multiprocessors and each split keeps at least 4 k steps (as core 1's).
void add_im2col_candidates(const ConvProblem& cp, int multiprocessors, int bk, std::vector<ConvKnobs>& out) {
  if (cp.params.N <= 64) {
    for (int st : {6, 4, 8}) out.push_back({.core = 3, .tile_m = 128, .tile_n = 64, .stages = st});
    out.push_back({.core = 3, .tile_m = 128, .tile_n = 64, .stages = 8, .pingpong = 1});
    // Filters resident where they fit beside 4 stages (3x3 x 64 channels: 9 tiles of 8 KB).
    const ConvKnobs resident{.core = 3, .tile_m = 128, .tile_n = 64, .stages = 4, .tf32 = bk == 32, .resident_b = 1};
    ConvConfig r = config_of(resident);
    if (std::string why; resident_fits(cp, r, why)) out.push_back(resident);
    // (Pairs of 64-wide CTAs along M sharing each filter tile, as cuDNN's clusters of 4-8 for 64
    // output channels: correct, but 7-16% slower at RN50 C64 56² and the 3D conv on an H100,
    // 2026-12-06; not offered.)
  } else {
    for (int st : {3, 4}) out.push_back({.core = 3, .tile_m = 128, .tile_n = 256, .stages = st});
    // Clusters of 2 sharing the filter tile where the pairs still fill the multiprocessors: 256-wide
    // cooperative tiles (for the autotuner: slower than without on the tutorial layer, see
    // tma_core_efficiency) and 128-wide ping-pong ones.
    const int64_t pairs = ((cp.params.M + 255) / 256) * ((cp.params.N + 255) / 256);
    const bool clusters = bk == 64 && pairs >= multiprocessors;
    if (clusters)
      for (int st : {3, 4}) out.push_back({.core = 3, .tile_m = 128, .tile_n = 256, .stages = st, .cluster = 2});
    out.push_back({.core = 3, .tile_m = 128, .tile_n = 128, .stages = 5});
    for (int st : {6, 5}) {
      out.push_back({.core = 3, .tile_m = 128, .tile_n = 128, .stages = st, .pingpong = 1});
      if (clusters && ((cp.params.M + 127) / 128) * ((cp.params.N + 127) / 128) >= 2 * multiprocessors)
        out.push_back({.core = 3, .tile_m = 128, .tile_n = 128, .stages = st, .pingpong = 1, .cluster = 2});
    }
  }
  const int64_t tiles = ((cp.params.M + 127) / 128) * ((cp.params.N + 127) / 128);
  const int64_t kt = im2col_ktiles(cp.params, bk);
  if (tiles < multiprocessors) {
    for (int sk : {2, 3, 4, 6, 8})
      if (kt >= 4 * sk) out.push_back({.core = 3, .tile_m = 128, .tile_n = 128, .stages = 5, .split_k = sk});
    // The same splits as clusters adding their sums in distributed shared memory, where a tile's
    // CTAs fit one wave (each CTA takes one unit); 16-bit inputs (the ones checked on a GPU). RN50
    // C512 7² on an H100 (2026-12-06): split_k 2 0.0217-0.0218 ms against 0.0245 through global
    // memory, tied with the whole 128 x 64 tile (0.0219). (Split clusters of 64-wide tiles build on
    // explicit knobs but are not offered: at RN50's 3x3 C64 32² they ran 0.0070-0.0076 ms at N1 and
    // 0.0074 at N8 against the whole 128 x 64 tile's 0.0058; H100, 2026-12-06.)
    for (int sk : {2, 3, 4})
      if (bk == 64 && tiles * sk <= multiprocessors && kt >= 4 * sk)
        out.push_back({.core = 3, .tile_m = 128, .tile_n = 128, .stages = 5, .split_k = sk, .split_cluster = 1});
    // Few pixels, many channels (RN50's 7x7 layers: 52 tiles of 128 x 128 on 132 SMs): twice as
    // many 64-wide tiles, whole, with no partial sums to add up.
    if (cp.params.N > 64) {
      out.push_back({.core = 3, .tile_m = 128, .tile_n = 64, .stages = 8});
      out.push_back({.core = 3, .tile_m = 128, .tile_n = 64, .stages = 8, .pingpong = 1});
    }
    // Clusters of 2 along N sharing each activation tile by multicast: 128-wide tiles, and 64-wide
    // ping-pong ones; within 1-3% of the best of the cluster-less tiles at RN50 C256 14² and C512 7²
    // on an H100 (2026-12-06: ahead in one run, behind in the next), so offered for the autotuner and
    // ranked just below their cluster-less twins. 64-wide cooperative tiles in pairs and clusters of
    // 4 ran 5-15% slower and are not offered.
    if (bk == 64) {
      if ((cp.params.N + 127) / 128 >= 2)
        out.push_back({.core = 3, .tile_m = 128, .tile_n = 128, .stages = 5, .cluster_n = 2});
      if (cp.params.N > 64)
        out.push_back({.core = 3, .tile_m = 128, .tile_n = 64, .stages = 8, .pingpong = 1, .cluster_n = 2});
      // cuDNN's fastest plan at RN50 C512 7² (H100): 128 x 64 tiles in clusters of 8 along N, each
      // CTA loading 16 of the 128 pixels for all 8 (the activation read from L2 once per cluster).
      if (cp.params.N >= 8 * 64) out.push_back({.core = 3, .tile_m = 128, .tile_n = 64, .stages = 8, .cluster_n = 8});
    }
  }
}

void add_tf32x3_candidates(const ConvProblem& cp, int multiprocessors, std::vector<ConvKnobs>& out) {
  std::vector<ConvKnobs> all;
  add_im2col_candidates(cp, multiprocessors, 32, all);
  for (ConvKnobs k : all) {
    if (k.tile_n == 256 || (k.pingpong && k.tile_n != 64) || k.resident_b || k.cluster > 1 || k.cluster_n > 1 ||
        k.split_cluster)
      continue;
    k.tf32 = 0;
    k.tf32x3 = 1;
    while (k.stages > 2 && config_of(k).smem_bytes() > 227 * 1024) --k.stages;
    const bool seen = std::any_of(out.begin(), out.end(), [&](const ConvKnobs& o) {
      return o.tile_n == k.tile_n && o.stages == k.stages && o.split_k == k.split_k && o.pingpong == k.pingpong &&
             o.tf32x3 == 1;
    });
    if (!seen && conv_rules(k).empty()) out.push_back(k);
  }
}

void add_dgrad_phase_candidates(const ConvProblem& phase, int multiprocessors, std::vector<ConvKnobs>& out) {
  std::vector<ConvKnobs> all;
  add_im2col_candidates(phase, multiprocessors, 64, all);
  for (const ConvKnobs& k : all)
    if (k.split_k == 1 && k.cluster == 1 && k.cluster_n == 1) out.push_back(k);
}

std::string dgrad_phase_rule(const ConvConfig& c, DataType dtype) {
  if (dtype == DataType::FLOAT || c.splits > 1 || c.cluster_ctas() > 1)
    return "core=3 runs a conv_dgrad's phases on 16-bit inputs in whole tiles of one CTA (split_k 1, cluster 1, "
           "cluster_n 1)";
  return "";
}

// Cores 2 and 3 have no gathering threads: the matmul's TMA core (cuda_gemm_wgmma_tma's 0.68-0.75),
// ordered as measured on an H200 (docs/perf.md, 2026-12-02): 64-wide tiles ran fastest with 6
// stages (8 stages, 128 x 64 ping-pong and resident filters 2-9% slower); on core 3 the
// cooperative 128-wide tiles led ping-pong ones (0.0182 against 0.0226 ms at C256 14x14).
// With the register epilogue (H100, 2026-12-05): 64-wide tiles ran fastest with 8 stages, ping-pong
// 8 within 0-4% (ahead on RN50 C64 56², behind at N8), then 6 and 4 stages; 128-wide cooperative
// tiles led ping-pong ones at C256 14² and C512 7², tied at C128 28², and clusters of 2 slowed
// ping-pong 4% on the tutorial layer.
namespace {

double tile_efficiency(const ConvConfig& c) {
  if (c.bn == 64 && c.epilogue && !c.resident_b)
    return c.pingpong ? 0.744 : c.stages == 8 ? 0.745 : c.stages == 6 ? 0.74 : 0.735;
  if (c.bn == 64)
    return c.resident_b ? 0.71 : c.pingpong ? 0.72 : c.stages == 6 ? 0.74 : c.stages == 4 ? 0.735 : 0.73;
  if (c.bn == 128)
    return (c.core == 3 ? (c.pingpong ? 0.69 : 0.70) : (c.pingpong ? 0.75 : 0.68)) * (c.cluster > 1 ? 0.96 : 1.0);
  if (c.core != 3) return c.stages >= 4 ? 0.75 : 0.745;
  // Core 3, 128 x 256 on the tutorial layer (H200, 2026-12-02, staged epilogue): 3 stages 0.1132 ms,
  // 4 stages 0.1213, clusters of 2 0.1213 (3) and 0.1270 (4): the shared filter tile did not pay
  // there. With the register epilogue's 16 KB ring, 4 stages fit beside it.
  if (c.epilogue) return (c.stages == 4 ? 0.76 : 0.75) * (c.cluster > 1 ? 0.99 : 1.0);
  return (c.stages == 3 ? 0.75 : 0.70) * (c.cluster > 1 ? 0.93 : 1.0);
}

}  // namespace

double tma_core_efficiency(const ConvConfig& c) { return tile_efficiency(c) * (c.cluster_n > 1 ? 0.99 : 1.0); }

int64_t tile_ksteps(const ConvConfig& c, const ConvParams& p) {
  return c.core >= 3 ? im2col_ktiles(p, c.bk()) : (p.K + c.bk() - 1) / c.bk();
}

// Fit to the measured times of issue #15's 2D rows on an H100 (docs/perf.md, "Why mode A takes
// cuDNN's plan at RN50 3x3 C256 14²"): on the gathering cores a 128 x 64 tile's k step took what a
// 128 x 128 one's did (0.234 against 0.229 us), and every tile paid some 16 k steps of its own for
// its pipeline's fill and its epilogue (1.6-6.9 us), which is what made C128 28² (two waves of 18
// k steps) 1.33x slower than C256 14² (one wave of 36). Core 2, a plain GEMM, fit one step.
// Core 4 (halo tiles) loads a fraction of core 3's bytes per k step: fit to RN50 C64 56², N8 32²
// and the 3D conv (64-wide) and C128 28² / C256 14² (128-wide) on an H100 (2026-12-06): ~1.05
// steps per k step at either width (core 3's 64-wide step costs 2), and some 25 steps of fill and
// epilogue a tile (core 3's 16): it wins where tiles have many k steps (the 3D conv's 27).
// 3xTF32 (tf32x3=1): a k step is three TF32 ones, so the same fill and epilogue count a third as
// many of its steps.
double unit_steps(const ConvConfig& c, int64_t ksteps) {
  constexpr double kTileSteps = 16.0;
  const double fixed_share = c.tf32x3 ? 1.0 / 3.0 : 1.0;
  if (c.core == 2) return static_cast<double>(ksteps) + 1.0;
  if (c.core == 4) return static_cast<double>(ksteps) * 1.05 + 25.0;
  const double step = c.bn == 64 ? 2.0 : 1.0;
  return static_cast<double>(ksteps) * step + kTileSteps * fixed_share;
}

}  // namespace dnngraph::cuda::conv
