// cuda_gemm_wgmma_tma: the Hopper matmul (sm_90a): TMA loads, warp-specialized wgmma, a
// persistent grid (kernels/gemm_wgmma.cuh), split-K, a stream-K tail, clusters of 2 sharing B by
// TMA multicast,
// TF32 with a transpose pass for MN-major FLOAT operands, FLOAT that the graph keeps exact as
// 3xTF32 (tf32x3=1, kernels/tf32x3_split.cuh), FP8 pairs (e4m3 and e5m2, mixed or not, K-major;
// held back as `gemm_fp8` until its GPU test passes);
// the partition's epilogue fused, staged through shared memory or (epilogue=1) applied in
// registers and stored by TMA.
#include "engines/cuda/gemm/gemm_wgmma_tma.hpp"

#include <algorithm>

#include "core/log.hpp"
#include "engines/cuda/common/compiled_engine.hpp"
#include "engines/cuda/common/register_epilogue.hpp"
#include "engines/cuda/gemm/matmul_build.hpp"
#include "runtime/cuda/driver_api.hpp"
#include "planning/engine_instance.hpp"

namespace dnngraph::cuda {
namespace {

using gemm::Core;
using gemm::MatmulConfig;
using gemm::MatmulPieces;
using gemm::MatmulProblem;
using gemm::ceil_div;

// The engine's knobs. Only tile_n and stages are printed at their defaults (as knob_space lists
// them); knob_space always sets stages, whose 0 stands for "by tile_n" only in parsed settings.
struct WgmmaKnobs {
  int64_t tile_n = 256;
  int64_t stages = 0;  // 0: 4 with tile_n 256, else 5
  int64_t pingpong = 0, split_k = 1, cluster = 1;
  int64_t tf32 = 0, transpose = 0;
  int64_t epilogue = 0;  // 1: the register epilogue (common/register_epilogue.hpp)
  int64_t tf32x3 = 0;    // 1: FLOAT the graph keeps exact, as 3xTF32 (stages of twice the bytes)
  int64_t stream_k = 0;  // 1: the last waves' k steps in equal shares per CTA (kernels/work_units.cuh)
};


int64_t stages_of(const WgmmaKnobs& k) { return k.stages ? k.stages : k.tile_n == 256 ? 4 : 5; }

// 1 KB of alignment slack, the stages, the epilogue's buffer (staged: 2 x 64 x 36 floats;
// registers: per consumer warpgroup a ring of 8 KB output boxes, two, or one for 64-wide tiles),
// the barriers.
int64_t smem_bytes(const WgmmaKnobs& k) {
  const int64_t epilogue = k.epilogue ? 2 * std::min<int64_t>(k.tile_n / 64, 2) * 8192 : 2 * 64 * 36 * 4;
  return 1024 + stages_of(k) * (128 + k.tile_n) * 128 * (k.tf32x3 ? 2 : 1) + epilogue + (k.tf32x3 ? 24 : 16) * stages_of(k);
}

std::string wgmma_rules(const WgmmaKnobs& k) {
  if (k.pingpong && k.tile_n != 128) return "pingpong=1 takes tile_n 128";
  if (k.split_k > 1 && (k.pingpong || k.tile_n != 128))
    return "split_k above 1 goes only with cooperative 128-wide tiles (tile_n 128, no pingpong)";
  if (k.epilogue && k.split_k > 1) return "epilogue=1 (registers + TMA store) goes only with whole tiles (split_k 1)";
  if (k.stream_k && (k.split_k > 1 || k.pingpong || k.cluster > 1))
    return "stream_k=1 goes only with cooperative tiles of one CTA (split_k 1, no pingpong, cluster 1)";
  if (k.tf32x3 && (k.tf32 || k.tile_n != 128 || k.pingpong || k.cluster > 1))
    return "tf32x3=1 (3xTF32) goes only with tf32 0 and cooperative 128-wide tiles of one CTA (tile_n 128, no pingpong, "
           "cluster 1)";
  if (k.cluster == 2 && (k.pingpong || k.split_k > 1 || k.tf32))
    return "cluster 2 goes only with cooperative whole tiles of 16-bit inputs (no pingpong, split_k 1, tf32 0)";
  if (smem_bytes(k) > 227 * 1024) return std::to_string(smem_bytes(k)) + " bytes of shared memory exceed 227 KB";
  return "";
}

constexpr const char* kName = "cuda_gemm_wgmma_tma";
// What it multiplies besides 16-bit pairs and TF32: exact FLOAT (3xTF32) and FP8 pairs.
constexpr TensorCoreInputs kInputs{.exact_fp32 = true, .fp8 = true};

const KnobSchema<WgmmaKnobs> kSchema{kName,
                                     {{"tile_n", &WgmmaKnobs::tile_n, 128, 256, {128, 256}},
                                      {"stages", &WgmmaKnobs::stages, 2, 8},
                                      {"pingpong", &WgmmaKnobs::pingpong, 0, 1, {}, false},
                                      {"split_k", &WgmmaKnobs::split_k, 1, 16, {}, false},
                                      {"cluster", &WgmmaKnobs::cluster, 1, 2, {}, false},
                                      {"tf32", &WgmmaKnobs::tf32, 0, 1, {}, false},
                                      {"transpose", &WgmmaKnobs::transpose, 0, 1, {}, false},
                                      {"epilogue", &WgmmaKnobs::epilogue, 0, 1, {}, false},
                                      {"tf32x3", &WgmmaKnobs::tf32x3, 0, 1, {}, false},
                                      {"stream_k", &WgmmaKnobs::stream_k, 0, 1, {}, false}},
                                     wgmma_rules};

MatmulConfig wgmma_config(const WgmmaKnobs& k) {
  MatmulConfig c;
  c.core = Core::WGMMA;
  c.bm = 128;
  c.bn = static_cast<int>(k.tile_n);
  c.stages = static_cast<int>(stages_of(k));
  c.pingpong = k.pingpong != 0;
  c.tf32 = k.tf32 == 1;
  c.splits = static_cast<int>(k.split_k);
  c.transpose = k.transpose == 1;
  c.cluster = static_cast<int>(k.cluster);
  c.register_epilogue = k.epilogue == 1;
  c.tf32x3 = k.tf32x3 == 1;
  c.stream_k = k.stream_k == 1;
  c.bk = c.tf32 || c.tf32x3 ? 32 : 64;  // one 128-byte swizzle row of k
  c.threads = 384;          // a producer warpgroup and two consumer warpgroups
  c.smem_bytes = static_cast<int>(smem_bytes(k));
  return c;
}

// Clusters of 2 (B read from L2 once per pair) against the same tiles without: bf16 8192^3 on an
// H200 (2026-11-29) ran 1.594 ms vs 1.666 (128 x 256, 4 stages), 1.803 vs 1.805 (128 x 128).
constexpr double kClusterGain = 1.04;
// The register epilogue over the staged one on the same tile, the least measured: bf16 8192^3 on
// an H100 (2026-12-05), 1.02-1.06 by tile setting (chains that are too long to unroll keep the staged
// epilogue: common/register_epilogue.cpp).
constexpr double kRegisterEpilogueGain = 1.02;

class GemmWgmmaTmaEngine final : public gemm::MatmulEngine<WgmmaKnobs, wgmma_config> {
 public:
  GemmWgmmaTmaEngine() : MatmulEngine(kName, kSchema) {}

  Support check(const Partition& p, const Target& t) const override {
    MatmulPieces pieces;
    if (auto s = gemm::prepare_matmul(p, t, pieces, kInputs); !s.ok()) return Support::no(s.message());
    if (t.info().sm_version != 90)
      return Support::no("wgmma and TMA need sm_90a; the device is sm_" + std::to_string(t.info().sm_version));
    const auto& mp = pieces.mp;
    if (auto s = gemm::check_fp8(p, mp, name()); !s.ok()) return Support::no(s.message());
    if (mp.dtype == DataType::FLOAT) {  // MN-major operands through the transpose pass
      MatmulConfig c;
      c.core = Core::WGMMA;
      c.tf32 = !mp.exact_fp32;
      c.tf32x3 = mp.exact_fp32;
      c.transpose = !mp.a_k_major || !mp.b_k_major;
      if (auto s = gemm::check_tf32(p, mp, c, name()); !s.ok()) return Support::no(s.message());
    }
    for (bool is_a : {true, false}) {
      const ir::Tensor& x = p.tensor(is_a ? mp.a : mp.b);
      if (!(is_a ? mp.a_vec : mp.b_vec))
        return Support::no("tensor '" + x.name + "': TMA needs a contiguous dim and other strides that are multiples "
                           "of 16 bytes; strides are " + std::to_string(is_a ? mp.a_sm : mp.b_sk) + "/" +
                           std::to_string(is_a ? mp.a_sk : mp.b_sn));
    }
    if (!nvrtc()) return Support::no(nvrtc_error());
    return Support::yes();
  }

  std::vector<Knobs> knob_space(const Partition& p, const Target& t) const override {
    std::vector<WgmmaKnobs> settings{{.tile_n = 256, .stages = 4},
                                     {.tile_n = 128, .stages = 6, .pingpong = 1},
                                     {.tile_n = 128, .stages = 5, .pingpong = 1},
                                     {.tile_n = 256, .stages = 3},
                                     {.tile_n = 128, .stages = 5},
                                     {.tile_n = 128, .stages = 4}};
    MatmulProblem mp;
    std::string why;
    if (gemm::describe_matmul_graph(p, mp, why, kInputs)) {
      if (mp.exact_fp32) settings = {{.tile_n = 128, .stages = 3}};  // 3xTF32 (set below): 64 KB stages
      add_split_k(mp, t, settings);
      add_clusters(mp, settings);
      EpiloguePlan epi;
      const bool planned = plan_epilogue(p, mp.axes, t.dynamic_shapes, epi, why);
      add_register_epilogue(planned ? &epi : nullptr, why, settings);
      add_stream_k(planned ? &epi : nullptr, t, mp, settings);
      if (mp.dtype == DataType::FLOAT)
        for (auto& k : settings) {
          k.tf32 = mp.exact_fp32 ? 0 : 1;
          k.tf32x3 = mp.exact_fp32 ? 1 : 0;
          if (mp.exact_fp32) k.stages = std::min<int64_t>(stages_of(k), 3);
          if (!mp.a_k_major || !mp.b_k_major) k.transpose = 1;
        }
      std::erase_if(settings, [](const WgmmaKnobs& k) { return !wgmma_rules(k).empty(); });
    }
    return ranked(p, t, settings);
  }

  // Split-K where 128 x 128 tiles leave multiprocessors idle and each split keeps at least 8 of
  // the 128-byte k steps (twice the stage ring's depth).
  static void add_split_k(const MatmulProblem& mp, const Target& t, std::vector<WgmmaKnobs>& out) {
    const int64_t tiles = mp.batch_count() * ceil_div(mp.M, 128) * ceil_div(mp.N, 128);
    const int64_t ktiles = ceil_div(mp.K, 128 / size_of(mp.dtype));  // 128-byte k tiles
    if (tiles >= t.info().multiprocessors) return;
    for (int sk : {2, 3, 4, 6, 8})
      if (ktiles >= 8 * sk) out.push_back({.tile_n = 128, .stages = 5, .split_k = sk});
  }

  // Each whole-tile setting again with the register epilogue (epilogue=1) where the fused epilogue
  // `epi` (null: not planned, `why`) allows it and its output boxes fit beside the stages; where
  // not, the reason is logged. Not the forms whose wgmma ptxas serializes (ping-pong tiles of
  // epilogues that reduce; register_epilogue_unserialized), which also ran slower on an H100
  // (2026-12-05): 8x2048^3 x alpha + bias + ReLU + AMAX 0.337 ms against 0.269 staged.
  static void add_register_epilogue(const EpiloguePlan* epi, std::string why, std::vector<WgmmaKnobs>& out) {
    if (!epi || !register_epilogue(*epi, why)) {
      DG_LOG(DEBUG) << kName << ": no epilogue=1 plans (registers + TMA store): " << why;
      return;
    }
    const size_t n = out.size();
    for (size_t i = 0; i < n; ++i) {
      WgmmaKnobs k = out[i];
      k.epilogue = 1;
      if (wgmma_rules(k).empty() && register_epilogue_unserialized(*epi, k.pingpong, false)) out.push_back(k);
    }
  }

  // Each cooperative whole-tile setting of one CTA again with the stream-K tail where its tiles
  // fill at least one wave and the last one less than 90%: 8192^3 in 128 x 256 tiles is 15.5 waves
  // of 132 CTAs, and the half wave takes as long as a whole one. Register-epilogue settings only
  // where their split units keep the wgmma unserialized (register_epilogue_unserialized).
  static void add_stream_k(const EpiloguePlan* epi, const Target& t, const MatmulProblem& mp,
                           std::vector<WgmmaKnobs>& out) {
    const int64_t sms = std::max(1, t.info().multiprocessors);
    const size_t n = out.size();
    for (size_t i = 0; i < n; ++i) {
      WgmmaKnobs k = out[i];
      if (k.epilogue && !(epi && register_epilogue_unserialized(*epi, false, true))) continue;
      const int64_t tiles = mp.batch_count() * ceil_div(mp.M, 128) * ceil_div(mp.N, k.tile_n);
      if (k.pingpong || k.split_k > 1 || k.cluster > 1 || tiles < sms || tiles % sms >= sms * 9 / 10 ||
          tiles % sms == 0)
        continue;
      k.stream_k = 1;
      if (wgmma_rules(k).empty()) out.push_back(k);
    }
  }

  // Clusters of 2 CTAs sharing each B tile (TMA multicast) for big 16-bit GEMMs (M and N >= 2048,
  // where the pairs still fill the multiprocessors), cooperative tiles only. Measured: kClusterGain.
  static void add_clusters(const MatmulProblem& mp, std::vector<WgmmaKnobs>& out) {
    if (mp.dtype == DataType::FLOAT || mp.M < 2048 || mp.N < 2048) return;
    out.push_back({.tile_n = 256, .stages = 4, .cluster = 2});
    out.push_back({.tile_n = 128, .stages = 5, .cluster = 2});
  }

  double estimate_seconds(const Partition& p, const Target& t, const Knobs& k) const override {
    MatmulConfig c;
    if (!config(k, c)) return 1e9;
    // Measured on an H200 (docs/perf.md): 128 x 256 cooperative tiles lead; ping-pong (one warpgroup's
    // epilogue under the other's main loop) comes within 2-8%.
    const double eff = c.pingpong ? (c.stages >= 6 ? 0.74 : 0.73) : (c.bn == 256 ? 0.75 : 0.68) * (c.stages >= 4 ? 1.0 : 0.96);
    return gemm::matmul_seconds(
        p, t, c, eff * (c.cluster > 1 ? kClusterGain : 1.0) * (c.register_epilogue ? kRegisterEpilogueGain : 1.0));
  }
};

}  // namespace

const Engine& gemm_wgmma_tma_engine() { return engine_instance<GemmWgmmaTmaEngine>(); }

}  // namespace dnngraph::cuda
