// cuda_gemm_wgmma_tma: the Hopper matmul (sm_90a): TMA loads, warp-specialized wgmma, a
// persistent grid (kernels/gemm_wgmma.cuh), split-K, clusters of 2 sharing B by TMA multicast,
// TF32 with a transpose pass for MN-major FLOAT operands; the partition's epilogue fused.
#include "engines/cuda/gemm/gemm_wgmma_tma.hpp"

#include <algorithm>

#include "engines/cuda/gemm/matmul_build.hpp"
#include "runtime/cuda/driver_api.hpp"

namespace dnngraph::cuda {
namespace {

using gemm::Core;
using gemm::MatmulConfig;
using gemm::MatmulPieces;
using gemm::MatmulProblem;
using gemm::ceil_div;

int64_t knob(const Knobs& k, const char* name, int64_t fallback) {
  auto it = k.find(name);
  return it == k.end() ? fallback : it->second;
}

bool wgmma_config(const Knobs& k, MatmulConfig& c, std::string& why) {
  c.core = Core::WGMMA;
  c.bm = 128;
  c.bn = static_cast<int>(knob(k, "tile_n", 256));
  c.stages = static_cast<int>(knob(k, "stages", c.bn == 256 ? 4 : 5));
  c.pingpong = knob(k, "pingpong", 0) != 0;
  const int64_t tf32 = knob(k, "tf32", 0);
  c.tf32 = tf32 == 1;
  c.splits = static_cast<int>(knob(k, "split_k", 1));
  const int64_t transpose = knob(k, "transpose", 0);
  c.transpose = transpose == 1;
  c.cluster = static_cast<int>(knob(k, "cluster", 1));
  c.bk = c.tf32 ? 32 : 64;  // one 128-byte swizzle row of k
  c.threads = 384;  // a producer warpgroup and two consumer warpgroups
  if ((c.bn != 128 && c.bn != 256) || c.stages < 2 || c.stages > 8 || (c.pingpong && c.bn != 128) ||
      (tf32 != 0 && tf32 != 1)) {
    why = "knobs " + knobs_to_string(k) + ": tile_n must be 128 or 256 (128 with pingpong), stages 2..8, tf32 0 or 1";
    return false;
  }
  if (transpose != 0 && transpose != 1) {
    why = "knobs " + knobs_to_string(k) + ": transpose 0 or 1";
    return false;
  }
  if (c.splits < 1 || c.splits > 16 || (c.splits > 1 && (c.pingpong || c.bn != 128))) {
    why = "knobs " + knobs_to_string(k) + ": split_k 1..16, and above 1 only with cooperative 128-wide tiles "
          "(tile_n 128, no pingpong)";
    return false;
  }
  if ((c.cluster != 1 && c.cluster != 2) || (c.cluster == 2 && (c.pingpong || c.splits > 1 || c.tf32))) {
    why = "knobs " + knobs_to_string(k) + ": cluster 1 or 2, and 2 only with cooperative whole tiles of 16-bit "
          "inputs (no pingpong, split_k 1, tf32 0)";
    return false;
  }
  // 1 KB of alignment slack, the stages, the epilogue staging (2 x 64 x 36 floats), the barriers.
  c.smem_bytes = 1024 + c.stages * (c.bm + c.bn) * 128 + 2 * 64 * 36 * 4 + 16 * c.stages;
  if (c.smem_bytes > 227 * 1024) {
    why = "knobs " + knobs_to_string(k) + ": " + std::to_string(c.smem_bytes) + " bytes of shared memory exceed 227 KB";
    return false;
  }
  return true;
}

// Clusters of 2 (B read from L2 once per pair) against the same tiles without: bf16 8192^3 on an
// H200 (2026-11-29) ran 1.594 ms vs 1.666 (128 x 256, 4 stages), 1.803 vs 1.805 (128 x 128).
constexpr double kClusterGain = 1.04;

class GemmWgmmaTmaEngine final : public Engine {
 public:
  std::string_view name() const override { return "cuda_gemm_wgmma_tma"; }

  Support check(const Partition& p, const Target& t) const override {
    MatmulPieces pieces;
    if (auto s = gemm::prepare_matmul(p, t, pieces); !s.ok()) return Support::no(s.message());
    if (t.info().sm_version != 90)
      return Support::no("wgmma and TMA need sm_90a; the device is sm_" + std::to_string(t.info().sm_version));
    const auto& mp = pieces.mp;
    if (mp.dtype == DataType::FLOAT) {  // MN-major operands through the transpose pass
      MatmulConfig c;
      c.core = Core::WGMMA;
      c.tf32 = true;
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
    std::vector<Knobs> out{{{"tile_n", 256}, {"stages", 4}}, {{"pingpong", 1}, {"tile_n", 128}, {"stages", 6}},
                           {{"pingpong", 1}, {"tile_n", 128}, {"stages", 5}}, {{"tile_n", 256}, {"stages", 3}},
                           {{"tile_n", 128}, {"stages", 5}},                  {{"tile_n", 128}, {"stages", 4}}};
    add_split_k(p, t, out);
    add_clusters(p, out);
    MatmulProblem mp;
    std::string why;
    if (gemm::describe_matmul_graph(p, mp, why) && mp.dtype == DataType::FLOAT)
      for (auto& k : out) {
        k["tf32"] = 1;
        if (!mp.a_k_major || !mp.b_k_major) k["transpose"] = 1;
      }
    std::stable_sort(out.begin(), out.end(), [&](const Knobs& a, const Knobs& b) {
      return estimate_seconds(p, t, a) < estimate_seconds(p, t, b);
    });
    return out;
  }

  // Split-K where 128 x 128 tiles leave multiprocessors idle and each split keeps at least 8 of
  // the 128-byte k steps (twice the stage ring's depth).
  static void add_split_k(const Partition& p, const Target& t, std::vector<Knobs>& out) {
    MatmulProblem mp;
    std::string why;
    if (!gemm::describe_matmul_graph(p, mp, why)) return;
    const int64_t tiles = mp.batch_count() * ceil_div(mp.M, 128) * ceil_div(mp.N, 128);
    const int64_t ktiles = ceil_div(mp.K, mp.dtype == DataType::FLOAT ? 32 : 64);
    if (tiles >= t.info().multiprocessors) return;
    for (int sk : {2, 3, 4, 6, 8})
      if (ktiles >= 8 * sk) out.push_back({{"tile_n", 128}, {"stages", 5}, {"split_k", sk}});
  }

  // Clusters of 2 CTAs sharing each B tile (TMA multicast) for big 16-bit GEMMs (M and N >= 2048,
  // where the pairs still fill the multiprocessors), cooperative tiles only. Measured: kClusterGain.
  static void add_clusters(const Partition& p, std::vector<Knobs>& out) {
    MatmulProblem mp;
    std::string why;
    if (!gemm::describe_matmul_graph(p, mp, why) || mp.dtype == DataType::FLOAT || mp.M < 2048 || mp.N < 2048) return;
    out.push_back({{"tile_n", 256}, {"stages", 4}, {"cluster", 2}});
    out.push_back({{"tile_n", 128}, {"stages", 5}, {"cluster", 2}});
  }

  double estimate_seconds(const Partition& p, const Target& t, const Knobs& k) const override {
    MatmulConfig c;
    std::string why;
    if (!wgmma_config(k, c, why)) return 1e9;
    // Measured on an H200 (docs/perf.md): 128 x 256 cooperative tiles lead; ping-pong (one warpgroup's
    // epilogue under the other's main loop) comes within 2-8%.
    const double eff = c.pingpong ? (c.stages >= 6 ? 0.74 : 0.73) : (c.bn == 256 ? 0.75 : 0.68) * (c.stages >= 4 ? 1.0 : 0.96);
    return gemm::matmul_seconds(p, t, c, eff * (c.cluster > 1 ? kClusterGain : 1.0));
  }

  Status build(const Partition& p, const Target& t, const Knobs& k, std::unique_ptr<Plan>& plan) const override {
    MatmulConfig c;
    std::string why;
    if (!wgmma_config(k, c, why)) return {ErrorCode::GRAPH_EXECUTION_PLAN_CREATION_FAILED, "cuda_gemm_wgmma_tma: " + why};
    return gemm::build_matmul_plan(p, t, c, nullptr, name(), plan);
  }

  Status deserialize(const Partition& p, const Target& t, const Knobs& k, ByteReader& r,
                     std::unique_ptr<Plan>& plan) const override {
    MatmulConfig c;
    std::string why;
    if (!wgmma_config(k, c, why)) return {ErrorCode::SERIALIZATION_FAILED, "cuda_gemm_wgmma_tma: " + why};
    return gemm::build_matmul_plan(p, t, c, &r, name(), plan);
  }
};

}  // namespace

const Engine& gemm_wgmma_tma_engine() {
  static const GemmWgmmaTmaEngine kEngine;
  return kEngine;
}

}  // namespace dnngraph::cuda
