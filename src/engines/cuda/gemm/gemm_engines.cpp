#include "engines/cuda/gemm/gemm_engines.hpp"

#include <algorithm>

#include "core/log.hpp"
#include "engines/cuda/gemm/matmul_plan.hpp"
#include "runtime/cuda/driver_api.hpp"

namespace dnngraph::cuda {
namespace {

using gemm::Core;
using gemm::MatmulConfig;
using gemm::MatmulPieces;

int64_t knob(const Knobs& k, const char* name, int64_t fallback) {
  auto it = k.find(name);
  return it == k.end() ? fallback : it->second;
}

int64_t ceil_div(int64_t a, int64_t b) { return (a + b - 1) / b; }

// Predicted seconds: the tile-padded FLOPs at `efficiency` of the device's bf16 peak (TF32's is
// half of it: 495 of 989 TFLOP/s dense on an H100/H200), or the bytes at its bandwidth, plus a launch.
// Waves as the conv engine counts them: SM slots x k steps per unit (+1 for the pipeline's fill and
// the epilogue) over the useful tiles x k steps (without split-K: the last wave's padding). A
// split-K unit also publishes its partial sums and the tile's last one reads them all back: ~6 k
// steps' time per unit (measured for the conv core on an H200, 2026-11-29), plus the counters' memset.
double estimate(const Partition& p, const Target& t, const MatmulConfig& c, double efficiency) {
  MatmulPieces pieces;
  std::string why;
  double padded = 1.0, fixup = 0.0;
  if (gemm::describe_matmul_graph(p, pieces.mp, why)) {  // the shape only: check() tested the device
    const auto& mp = pieces.mp;
    padded = static_cast<double>(ceil_div(mp.M, c.bm) * c.bm * ceil_div(mp.N, c.bn) * c.bn) /
             static_cast<double>(mp.M * mp.N);
    const int64_t tiles = mp.batch_count() * ceil_div(mp.M, c.bm) * ceil_div(mp.N, c.bn);
    // Clusters of 2 walk pairs of m tiles: an odd tiles_m leaves one CTA of the last pairs idle.
    const int64_t units = c.cluster > 1 ? mp.batch_count() * ceil_div(mp.M, 2 * c.bm) * 2 * ceil_div(mp.N, c.bn)
                                        : tiles * c.splits;
    const int64_t sms = std::max(1, t.info().multiprocessors), kt = ceil_div(mp.K, c.bk);
    const int64_t per_unit = ceil_div(kt, c.splits) + 1 + (c.splits > 1 ? 6 : 0);
    padded *= static_cast<double>(ceil_div(units, sms) * sms * per_unit) / static_cast<double>(tiles * (kt + 1));
    if (c.splits > 1) fixup = 1e-6;
    // The transpose pass: each MN-major operand read and written once at the bandwidth, a launch each.
    for (bool is_a : {true, false})
      if (c.transpose && !(is_a ? mp.a_k_major : mp.b_k_major))
        fixup += 2.0 * static_cast<double>(mp.batch_count() * mp.K * (is_a ? mp.M : mp.N) * size_of(mp.dtype)) /
                     std::max(1.0, t.info().peak_bytes_per_s) +
                 3e-6;
    if (!mp.a_vec || !mp.b_vec) efficiency *= 0.1;  // element-by-element loads
  }
  if (c.tf32) efficiency *= 0.5;
  return roofline_seconds(partition_flops(p) * padded, partition_bytes(p), t.info(), efficiency, 5e-6) + fixup;
}

// FLOAT inputs (which describe_matmul lets through only where the graph allows TF32) take the
// tf32 knob, 16-bit inputs not; tf32 wgmma reads K-major operands only (it has no transpose), so
// MN-major ones need the transpose knob (a K-major copy in the workspace), which nothing else takes.
Status check_tf32(const Partition& p, const gemm::MatmulProblem& mp, const MatmulConfig& c, std::string_view engine) {
  const bool fp32 = mp.dtype == DataType::FLOAT;
  const int mn_major = !mp.a_k_major ? mp.a : !mp.b_k_major ? mp.b : -1;
  const std::string where = "node '" + p.graph->nodes[static_cast<size_t>(anchor_node(p))].name + "', tensor '" +
                            p.tensor(fp32 && mn_major >= 0 ? mn_major : mp.a).name + "': ";
  if (fp32 && c.core == Core::WGMMA && mn_major >= 0 && !c.transpose)
    return {ErrorCode::GRAPH_NOT_SUPPORTED,
            std::string(engine) + ": " + where +
                "FLOAT inputs run on wgmma as TF32 only K-major (A [m, k] with k contiguous, B stored [n, k]); this "
                "operand is MN-major (transpose=1 copies it K-major first; cuda_gemm_mma_sync takes it as is)"};
  if (c.transpose && (!fp32 || mn_major < 0))
    return {ErrorCode::GRAPH_EXECUTION_PLAN_CREATION_FAILED,
            std::string(engine) + ": " + where +
                "transpose=1 goes with MN-major FLOAT operands only (tf32 wgmma); these inputs are " +
                std::string(to_string(mp.dtype)) + (mn_major < 0 ? ", both K-major" : "")};
  if (fp32 != c.tf32)
    return {ErrorCode::GRAPH_EXECUTION_PLAN_CREATION_FAILED,
            std::string(engine) + ": " + where + "the tf32 knob is " + (c.tf32 ? "1" : "0") + " but the inputs are " +
                std::string(to_string(mp.dtype)) + " (tf32=1 goes with FLOAT inputs, and only with them)"};
  return {};
}

bool is_fp32(const Partition& p, const Target& t) {
  gemm::MatmulProblem mp;
  std::string why;
  return gemm::describe_matmul(p, t, mp, why) && mp.dtype == DataType::FLOAT;
}

Status build_plan(const Partition& p, const Target& t, const MatmulConfig& c, bool compile, ByteReader* r,
                  std::string_view engine, std::unique_ptr<Plan>& plan) {
  MatmulPieces pieces;
  if (auto s = gemm::prepare_matmul(p, t, pieces); !s.ok()) return s;
  if (auto s = check_tf32(p, pieces.mp, c, engine); !s.ok()) return s;
  KernelBuild k;
  k.source = gemm::matmul_source(pieces.mp, c, pieces.epi, *p.graph);
  const char* kernel = c.core == Core::WGMMA ? gemm::kWgmmaKernel : gemm::kMmaSyncKernel;
  const bool fin = pieces.epi.L.needs_finalize();
  Status s = compile ? compile_kernel(t, std::string(engine) + ".cu", kernel, c.smem_bytes, fin, k)
                     : reload_kernel(t, *r, kernel, c.smem_bytes, fin, engine, k);
  if (!s.ok()) return s;
  CUfunction transpose = nullptr;
  if (c.transpose)
    if (auto st = k.module->function(gemm::kTransposeKernel, transpose); !st.ok()) return st;
  DG_LOG(DEBUG) << engine << ": " << c.describe() << " " << pieces.epi.L.describe();
  plan = gemm::make_matmul_plan(p, std::move(pieces), c, std::move(k), t.handle->cuda->multiprocessors, transpose);
  return {};
}

// ---- mma.sync

bool mma_config(const Knobs& k, MatmulConfig& c, std::string& why) {
  c.core = Core::MMA_SYNC;
  c.bm = static_cast<int>(knob(k, "tile_m", 128));
  c.bn = static_cast<int>(knob(k, "tile_n", 128));
  c.stages = static_cast<int>(knob(k, "stages", 4));
  const int64_t tf32 = knob(k, "tf32", 0);
  c.tf32 = tf32 == 1;
  c.bk = c.tf32 ? 16 : 32;  // 64 bytes of k per tile row either way
  c.threads = 128;
  if ((c.bm != 64 && c.bm != 128) || (c.bn != 64 && c.bn != 128) || c.stages < 2 || c.stages > 6 ||
      (tf32 != 0 && tf32 != 1)) {
    why = "knobs " + knobs_to_string(k) + ": tile_m and tile_n must be 64 or 128, stages 2..6, tf32 0 or 1";
    return false;
  }
  // The pipeline, then the fp32 tile staged for the epilogue in the same bytes.
  c.smem_bytes = std::max(c.stages * (c.bm + c.bn) * c.bk * (c.tf32 ? 4 : 2), c.bm * (c.bn + 4) * 4);
  return true;
}

class GemmMmaSyncEngine final : public Engine {
 public:
  std::string_view name() const override { return "cuda_gemm_mma_sync"; }

  Support check(const Partition& p, const Target& t) const override {
    MatmulPieces pieces;
    if (auto s = gemm::prepare_matmul(p, t, pieces); !s.ok()) return Support::no(s.message());
    if (!nvrtc()) return Support::no(nvrtc_error());
    return Support::yes();
  }

  std::vector<Knobs> knob_space(const Partition& p, const Target& t) const override {
    std::vector<Knobs> out;
    const bool tf32 = is_fp32(p, t);
    for (auto [bm, bn] : {std::pair{128, 128}, {128, 64}, {64, 128}, {64, 64}})
      for (int st : {4, 3}) {
        out.push_back({{"tile_m", bm}, {"tile_n", bn}, {"stages", st}});
        if (tf32) out.back()["tf32"] = 1;
      }
    // Best guess first: the largest tile that still gives every multiprocessor a block.
    std::stable_sort(out.begin(), out.end(), [&](const Knobs& a, const Knobs& b) {
      return estimate_seconds(p, t, a) < estimate_seconds(p, t, b);
    });
    return out;
  }

  double estimate_seconds(const Partition& p, const Target& t, const Knobs& k) const override {
    MatmulConfig c;
    std::string why;
    if (!mma_config(k, c, why)) return 1e9;
    // Larger tiles reuse more of each load; small ones are for filling the machine.
    const double eff = c.bm * c.bn >= 128 * 128 ? 0.40 : c.bm * c.bn >= 128 * 64 ? 0.34 : 0.26;
    return estimate(p, t, c, eff * (c.stages >= 4 ? 1.0 : 0.95));
  }

  Status build(const Partition& p, const Target& t, const Knobs& k, std::unique_ptr<Plan>& plan) const override {
    MatmulConfig c;
    std::string why;
    if (!mma_config(k, c, why)) return {ErrorCode::GRAPH_EXECUTION_PLAN_CREATION_FAILED, "cuda_gemm_mma_sync: " + why};
    return build_plan(p, t, c, true, nullptr, name(), plan);
  }

  Status deserialize(const Partition& p, const Target& t, const Knobs& k, ByteReader& r,
                     std::unique_ptr<Plan>& plan) const override {
    MatmulConfig c;
    std::string why;
    if (!mma_config(k, c, why)) return {ErrorCode::SERIALIZATION_FAILED, "cuda_gemm_mma_sync: " + why};
    return build_plan(p, t, c, false, &r, name(), plan);
  }
};

// ---- wgmma + TMA (sm_90a)

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
      if (auto s = check_tf32(p, mp, c, name()); !s.ok()) return Support::no(s.message());
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
    gemm::MatmulProblem mp;
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
    gemm::MatmulProblem mp;
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
    gemm::MatmulProblem mp;
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
    return estimate(p, t, c, eff * (c.cluster > 1 ? kClusterGain : 1.0));
  }

  Status build(const Partition& p, const Target& t, const Knobs& k, std::unique_ptr<Plan>& plan) const override {
    MatmulConfig c;
    std::string why;
    if (!wgmma_config(k, c, why)) return {ErrorCode::GRAPH_EXECUTION_PLAN_CREATION_FAILED, "cuda_gemm_wgmma_tma: " + why};
    return build_plan(p, t, c, true, nullptr, name(), plan);
  }

  Status deserialize(const Partition& p, const Target& t, const Knobs& k, ByteReader& r,
                     std::unique_ptr<Plan>& plan) const override {
    MatmulConfig c;
    std::string why;
    if (!wgmma_config(k, c, why)) return {ErrorCode::SERIALIZATION_FAILED, "cuda_gemm_wgmma_tma: " + why};
    return build_plan(p, t, c, false, &r, name(), plan);
  }
};

}  // namespace

const Engine& gemm_wgmma_tma_engine() {
  static const GemmWgmmaTmaEngine kEngine;
  return kEngine;
}

const Engine& gemm_mma_sync_engine() {
  static const GemmMmaSyncEngine kEngine;
  return kEngine;
}

}  // namespace dnngraph::cuda
