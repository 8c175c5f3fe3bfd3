// cuda_gemm_mma_sync: the portable tensor-core matmul (sm_80+): cp.async pipeline, ldmatrix,
// mma.sync (kernels/gemm_mma_sync.cuh), the partition's epilogue fused.
#include "engines/cuda/gemm/gemm_mma_sync.hpp"

#include <algorithm>

#include "engines/cuda/common/compiled_engine.hpp"
#include "engines/cuda/gemm/matmul_build.hpp"
#include "runtime/cuda/driver_api.hpp"
#include "planning/engine_instance.hpp"

namespace dnngraph::cuda {
namespace gemm {
namespace {

// The engine's knobs; tf32=1 goes with FLOAT inputs (the graph allowing TF32) and only with them.
struct MmaSyncKnobs {
  int64_t tile_m = 128, tile_n = 128, stages = 4;
  int64_t tf32 = 0;
};

constexpr const char* kName = "cuda_gemm_mma_sync";

const KnobSchema<MmaSyncKnobs> kSchema{kName,
                                       {{"tile_m", &MmaSyncKnobs::tile_m, 64, 128, {64, 128}},
                                        {"tile_n", &MmaSyncKnobs::tile_n, 64, 128, {64, 128}},
                                        {"stages", &MmaSyncKnobs::stages, 2, 6},
                                        {"tf32", &MmaSyncKnobs::tf32, 0, 1, {}, false}}};

MatmulConfig mma_config(const MmaSyncKnobs& k) {
  MatmulConfig c;
  c.core = Core::MMA_SYNC;
  c.bm = static_cast<int>(k.tile_m);
  c.bn = static_cast<int>(k.tile_n);
  c.stages = static_cast<int>(k.stages);
  c.tf32 = k.tf32 == 1;
  c.bk = c.tf32 ? 16 : 32;  // 64 bytes of k per tile row either way
  c.threads = 128;
  // The pipeline, then the fp32 tile staged for the epilogue in the same bytes.
  c.smem_bytes = std::max(c.stages * (c.bm + c.bn) * c.bk * (c.tf32 ? 4 : 2), c.bm * (c.bn + 4) * 4);
  return c;
}

bool is_fp32(const Partition& p, const Target& t) {
  MatmulProblem mp;
  std::string why;
  return gemm::describe_matmul(p, t, mp, why) && mp.dtype == DataType::FLOAT;
}

class GemmMmaSyncEngine final : public gemm::MatmulEngine<MmaSyncKnobs, mma_config> {
 public:
  GemmMmaSyncEngine() : MatmulEngine(kName, kSchema) {}

  Support check(const Partition& p, const Target& t) const override {
    MatmulPieces pieces;
    return compile_support(gemm::prepare_matmul(p, t, pieces));
  }

  // Best guess first: the largest tile that still gives every multiprocessor a block.
  std::vector<Knobs> knob_space(const Partition& p, const Target& t) const override {
    std::vector<MmaSyncKnobs> settings;
    const int64_t tf32 = is_fp32(p, t) ? 1 : 0;
    for (auto [bm, bn] : {std::pair{128, 128}, {128, 64}, {64, 128}, {64, 64}})
      for (int st : {4, 3}) settings.push_back({bm, bn, st, tf32});
    return ranked(p, t, settings);
  }

  double estimate_seconds(const Partition& p, const Target& t, const Knobs& k) const override {
    MatmulConfig c;
    if (!config(k, c)) return 1e9;
    // Larger tiles reuse more of each load; small ones are for filling the machine.
    const double eff = c.bm * c.bn >= 128 * 128 ? 0.40 : c.bm * c.bn >= 128 * 64 ? 0.34 : 0.26;
    return gemm::matmul_seconds(p, t, c, eff * (c.stages >= 4 ? 1.0 : 0.95));
  }
};

}  // namespace
}  // namespace gemm

const Engine& gemm_mma_sync_engine() { return engine_instance<gemm::GemmMmaSyncEngine>(); }

}  // namespace dnngraph::cuda
