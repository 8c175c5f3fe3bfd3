// The plan both matmul engines build: one generated kernel (mma.sync or wgmma core + the fused
// epilogue), its launch shape, and the reduction finalizer when the epilogue needs one.
#pragma once
#include <string>

#include "engines/cuda/common/kernel_build.hpp"
#include "engines/cuda/gemm/matmul_problem.hpp"

namespace dnngraph::cuda::gemm {

enum class Core : int { MMA_SYNC = 0, WGMMA = 1 };

// A kernel configuration: the engine's knobs, validated.
struct MatmulConfig {
  Core core = Core::MMA_SYNC;
  int bm = 128, bn = 128, bk = 32, stages = 4;
  bool pingpong = false;  // wgmma: the consumer warpgroups take whole tiles in turn (tile_n 128)
  bool tf32 = false;      // FLOAT inputs rounded to TF32 (mma.sync m16n8k8; bk 16 keeps the tile bytes)
  bool tf32x3 = false;    // wgmma: FLOAT inputs the graph keeps exact, as 3xTF32 (kernels/tf32x3_split.cuh)
  int splits = 1;         // wgmma split-K: CTAs share a tile's k steps, its last split sums (tile_n 128)
  bool stream_k = false;  // wgmma: the last waves' k steps in equal shares per CTA (kernels/work_units.cuh)
  bool transpose = false; // tf32 wgmma: MN-major FLOAT operands first copied K-major into the workspace
  int cluster = 1;        // wgmma: 2 = CTA pairs along M share each B tile through TMA multicast
  bool register_epilogue = false;  // wgmma: the chain on the accumulators, the tile stored by TMA
  int threads = 128;
  int smem_bytes = 0;
  std::string describe() const;
};

inline int64_t ceil_div(int64_t a, int64_t b) { return (a + b - 1) / b; }

// The k tile of config c for operands of type t: wgmma's is one 128-byte swizzle row (64 16-bit,
// 32 FLOAT or 128 FP8 elements), mma.sync's the engine's bk.
inline int64_t k_tile(const MatmulConfig& c, DataType t) { return c.core == Core::WGMMA ? 128 / size_of(t) : c.bk; }

// The stream-K tail's shape on `ctas` persistent CTAs (kernels/work_units.cuh's UnitWalk, which the
// kernel computes the same way): tiles run whole first, and the split ones (slices and counters).
inline int64_t stream_k_whole_tiles(int64_t tiles, int64_t ctas) {
  return tiles >= 2 * ctas ? (tiles / ctas - 1) * ctas : 0;
}
inline int64_t stream_k_split_tiles(int64_t tiles, int64_t ctas) { return tiles - stream_k_whole_tiles(tiles, ctas); }
inline constexpr int kStreamKParts = 2;  // slices per split tile (work_units.cuh)

inline constexpr const char* kMmaSyncKernel = "dg_gemm_mma_sync";
inline constexpr const char* kWgmmaKernel = "dg_gemm_wgmma";
inline constexpr const char* kTransposeKernel = "dg_gemm_transpose";

// The translation unit for a problem, configuration and epilogue.
std::string matmul_source(const MatmulProblem& mp, const MatmulConfig& c, const EpiloguePlan& e, const ir::Graph& g);

// Describes, plans the epilogue, and (for build) compiles: what build() and deserialize() share.
struct MatmulPieces {
  MatmulProblem mp;
  EpiloguePlan epi;
};
Status prepare_matmul(const Partition& p, const Target& t, MatmulPieces& out, TensorCoreInputs inputs = {});

// `transpose`: the module's kTransposeKernel where c.transpose, else null.
std::unique_ptr<Plan> make_matmul_plan(const Partition& p, MatmulPieces pieces, MatmulConfig c, KernelBuild k,
                                       int multiprocessors, CUfunction transpose = nullptr);

}  // namespace dnngraph::cuda::gemm
