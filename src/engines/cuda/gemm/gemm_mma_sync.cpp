// cuda_gemm_mma_sync: the portable tensor-core matmul (sm_80+): cp.async pipeline, ldmatrix,
// mma.sync (kernels/gemm_mma_sync.cuh), the partition's epilogue fused.
#include "engines/cuda/gemm/gemm_mma_sync.hpp"

#include <algorithm>

#include "engines/cuda/gemm/matmul_build.hpp"
#include "runtime/cuda/driver_api.hpp"

namespace dnngraph::cuda {
namespace {

using gemm::Core;
using gemm::MatmulConfig;
using gemm::MatmulPieces;
using gemm::MatmulProblem;

int64_t knob(const Knobs& k, const char* name, int64_t fallback) {
  auto it = k.find(name);
  return it == k.end() ? fallback : it->second;
}

bool is_fp32(const Partition& p, const Target& t) {
  MatmulProblem mp;
  std::string why;
  return gemm::describe_matmul(p, t, mp, why) && mp.dtype == DataType::FLOAT;
}

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
    return gemm::matmul_seconds(p, t, c, eff * (c.stages >= 4 ? 1.0 : 0.95));
  }

  Status build(const Partition& p, const Target& t, const Knobs& k, std::unique_ptr<Plan>& plan) const override {
    MatmulConfig c;
    std::string why;
    if (!mma_config(k, c, why)) return {ErrorCode::GRAPH_EXECUTION_PLAN_CREATION_FAILED, "cuda_gemm_mma_sync: " + why};
    return gemm::build_matmul_plan(p, t, c, nullptr, name(), plan);
  }

  Status deserialize(const Partition& p, const Target& t, const Knobs& k, ByteReader& r,
                     std::unique_ptr<Plan>& plan) const override {
    MatmulConfig c;
    std::string why;
    if (!mma_config(k, c, why)) return {ErrorCode::SERIALIZATION_FAILED, "cuda_gemm_mma_sync: " + why};
    return gemm::build_matmul_plan(p, t, c, &r, name(), plan);
  }
};

}  // namespace

const Engine& gemm_mma_sync_engine() {
  static const GemmMmaSyncEngine kEngine;
  return kEngine;
}

}  // namespace dnngraph::cuda
