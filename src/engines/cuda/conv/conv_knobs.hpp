// cuda_conv_implicit_gemm's knobs and kernel configurations: the typed knobs one schema parses
// and prints, the configuration a kernel is generated for, the rules between knobs, and the
// candidate settings the engine offers per problem, in the order measured fastest.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "engines/cuda/conv/conv_problem.hpp"
#include "planning/knobs.hpp"

namespace dnngraph::cuda::conv {

inline constexpr const char* kImplicitGemmEngineName = "cuda_conv_implicit_gemm";

// core 0: mma.sync (any sm_80+), tiles bm x bn x 32 (tf32: x 16, the same bytes); core 1: wgmma +
// TMA (sm_90a), 128 x bn x 64 (tf32: x 32, one 128-byte row either way), optionally split-K:
// `splits` CTAs share a tile's k steps, the last one sums and runs the epilogue. Core 2: 1x1
// convolutions as plain GEMMs (conv_gemm_view.hpp) on the matmul's wgmma kernel, both operands by
// TMA, the same tiles and split-K, or ping-pong consumers with 128-wide tiles. Core 3: any other
// fprop whose windows fit the im2col maps (conv_im2col_view.hpp): TMA im2col loads issued by one
// producer thread (kernels/conv_im2col_tma.cuh), the same consumers as core 2. Core 4: unit-stride
// 16-bit fprop over halo tiles (conv_halo_view.hpp, kernels/conv_halo_tma.cuh): one box per tile
// and channel block, every tap's operand read from it at a shifted row; `stages` filter tiles.
struct ConvConfig {
  int core = 0;
  int bm = 128, bn = 128, stages = 4;
  int splits = 1;
  bool tf32 = false;  // FLOAT inputs as TF32 (core 0 rounds them, core 1's wgmma truncates them)
  bool pingpong = false;  // cores 2 and 3
  bool resident_b = false;  // core 3: every k step's filter tile stays in shared memory
  int resident_kt = 0;      // their count (the problem's k steps), set with resident_b
  int cluster = 1;          // core 3: 2 = pairs of CTAs along M sharing each filter tile by TMA multicast
                            // (cooperative or ping-pong consumers)
  int cluster_n = 1;        // core 3: 2, 4 or 8 CTAs along N sharing each activation tile, each loading a piece
  // Core 3 with split-K: a tile's `splits` CTAs form a cluster and add their partial sums through
  // distributed shared memory (no workspace), one unit per CTA.
  bool split_cluster = false;
  // Core 3: FLOAT inputs at about fp32's accuracy where the graph does not allow TF32, each product
  // as three TF32 ones (kernels/tf32x3_split.cuh): twice the stage bytes, three times the wgmmas.
  bool tf32x3 = false;
  bool fp32_operands() const { return tf32 || tf32x3; }
  int cluster_ctas() const { return cluster * cluster_n; }
  // The kernel's cluster size at launch: the multicast clusters', or a tile's splits.
  int launch_cluster() const { return split_cluster ? splits : cluster_ctas(); }
  // Cores 2 and 3: 1 = the epilogue in registers, the tile stored by TMA
  // (common/register_epilogue.hpp): per consumer warpgroup a ring of two 8 KB boxes (64 rows x 64
  // 16-bit columns; one for 64-wide tiles) in place of the staged epilogue's fp32 chunks.
  int epilogue = 0;
  // Core 4: the halo ring's boxes and one box's bytes (the problem's, set by halo_fits).
  static constexpr int kHaloStages = 2;  // (3 ran no faster at RN50 C64 56² and the 3D conv, H100)
  int halo_stage_bytes = 0;
  int bk() const { return core ? (fp32_operands() ? 32 : 64) : tf32 ? 16 : 32; }
  int threads() const { return core ? 384 : 128; }
  int smem_bytes() const {
    // Resident filters: A stages, staging, barriers, then (1024-aligned) one filter tile per k step.
    if (resident_b)
      return 1024 + (stages * bm * 128 + 2 * 64 * 36 * 4 + 16 * stages + 8 + 1023) / 1024 * 1024 + resident_kt * bn * 128;
    if (core == 4)
      return 1024 + kHaloStages * halo_stage_bytes + stages * bn * 128 + 2 * 64 * 36 * 4 + 16 * (kHaloStages + stages);
    if (core)
      return 1024 + stages * (bm + bn) * 128 * (tf32x3 ? 2 : 1) +
             (epilogue ? 2 * std::min(bn / 64, 2) * 8192 : 2 * 64 * 36 * 4) + (tf32x3 ? 24 : 16) * stages;
    return std::max(stages * (bm + bn) * 64, bm * (bn + 4) * 4);  // 64 bytes of k per tile row
  }
};

// The engine's knobs, as knob_space prints them: split_k and tf32 only where they are set.
struct ConvKnobs {
  int64_t core = 0;
  int64_t tile_m = 128, tile_n = 128, stages = 4;
  int64_t split_k = 1, tf32 = 0, pingpong = 0, resident_b = 0, cluster = 1, cluster_n = 1, epilogue = 0, split_cluster = 0,
          tf32x3 = 0;
};

// The configuration the knobs describe.
ConvConfig config_of(const ConvKnobs& k);
// The rule a setting breaks between its knobs ("" for none); the schema's rule.
std::string conv_rules(const ConvKnobs& k);
const KnobSchema<ConvKnobs>& knob_schema();

// Core 4 on `cp`: its halo tiles `t` (conv_halo_view.hpp) and, with c's filter ring, 227 KB of
// shared memory; sets c.halo_stage_bytes.
struct HaloTiles;
bool halo_fits(const ConvProblem& cp, ConvConfig& c, HaloTiles& t, std::string& why);

// Resident filters (core 3): every output channel in one tile column and every k step's filter
// tile beside the stages in 227 KB; sets c.resident_kt.
bool resident_fits(const ConvProblem& cp, ConvConfig& c, std::string& why);

// Candidate settings on an sm_90 with `multiprocessors` SMs, `bk` the k step's channels (64, TF32 32):
// core 2 (1x1 convolutions as GEMMs) and core 3 (im2col TMA).
void add_gemm_view_candidates(const ConvProblem& cp, int multiprocessors, int64_t bk, std::vector<ConvKnobs>& out);
void add_im2col_candidates(const ConvProblem& cp, int multiprocessors, int bk, std::vector<ConvKnobs>& out);
// Core 3 for FLOAT inputs the graph keeps exact (no TF32): core 3's 32-deep settings of one CTA as
// 3xTF32 (tf32x3=1), each with the most stages that fit (the stages hold twice the bytes).
void add_tf32x3_candidates(const ConvProblem& cp, int multiprocessors, std::vector<ConvKnobs>& out);
// Core 4 (halo tiles) where the problem fits them: 64-wide tiles for 64 output channels or
// fewer, else 128-wide ones.
void add_halo_candidates(const ConvProblem& cp, std::vector<ConvKnobs>& out);
// A conv_dgrad's phases on core 3 (conv_dgrad_phases.hpp), `phase` the deepest of them: core 3's
// whole tiles of one CTA (no split-K or clusters; 16-bit inputs), resident filters where the
// phase's fit.
void add_dgrad_phase_candidates(const ConvProblem& phase, int multiprocessors, std::vector<ConvKnobs>& out);
// The rule a core 3 setting breaks for a conv_dgrad's phases of `dtype` inputs ("" for none).
std::string dgrad_phase_rule(const ConvConfig& c, DataType dtype);

// Cores 2 and 3: the share of the tensor cores' peak a setting reaches, as measured (the order
// of the heuristic's list).
double tma_core_efficiency(const ConvConfig& c);
// A whole tile's k steps under setting c: cores 3 and 4's (tap, channel block) pairs, else K / bk.
int64_t tile_ksteps(const ConvConfig& c, const ConvParams& p);
// One unit's time (a tile's `ksteps` k steps, its pipeline's fill and its epilogue) in k steps of a
// tile of its width at the tile's efficiency: the wave model's cost per SM slot.
double unit_steps(const ConvConfig& c, int64_t ksteps);

}  // namespace dnngraph::cuda::conv
